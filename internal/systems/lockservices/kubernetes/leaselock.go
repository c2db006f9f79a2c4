package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencecheck/fencecheck/targets"
)

// Lock recipes (--recipe).
const (
	// RecipeLeaderElection is client-go's tools/leaderelection (elect.go).
	RecipeLeaderElection = "leaderelection"
	// RecipeLeaseLock is a Lease used directly as a lock, as teams write it
	// without leaderelection (acquireLease).
	RecipeLeaseLock = "lease-lock"
)

// Recipes lists --recipe's values, leaderelection first.
func (Target) Recipes() []string { return []string{RecipeLeaderElection, RecipeLeaseLock} }

// acquireLease takes the Lease as a lock with optimistic concurrency, the
// way a team that locks with a Lease and no leaderelection writes it: read
// the Lease; if it has no holder, or its holder's renewTime plus its
// leaseDurationSeconds is past by this client's clock, take it over with an
// update conditioned on the resourceVersion read (holder, acquire and renew
// times, leaseTransitions + 1); else wait a retry period (as
// leaderelection's) and read again. A holder renews every third of the TTL
// with the same conditioned update (read again on a conflict: a write of
// the list changes the resourceVersion too), and has lost the lock when
// the Lease names another holder, or when a TTL passed since the renew
// time its last landed renewal wrote (what a taker counts from). The token
// is the leaseTransitions its taking update wrote. An attempt whose take
// landed but whose answer was lost finds its own identity on the Lease and
// adopts it.
func (c *client) acquireLease(ctx context.Context) (targets.Lease, error) {
	_, _, retry := Timings(c.ttl)
	identity := fmt.Sprintf("lock-%s-%d", c.id, c.n.Add(1))
	for {
		l, err := c.tryTake(ctx, identity)
		if l != nil {
			return l, nil
		}
		if err != nil && !retriable(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kubernetes: lease-lock: %w", ctx.Err())
		case <-time.After(retry):
		}
	}
}

// retriable: a conflict, or a request that failed or timed out (the next
// attempt reads the Lease again).
func retriable(err error) bool {
	return !errors.Is(err, targets.ErrBadConfig)
}

// tryTake makes one attempt: nil, nil when the Lease is held and not
// expired, or the update lost a race.
func (c *client) tryTake(ctx context.Context, identity string) (targets.Lease, error) {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	cur, err := c.cs.Leases(namespace).Get(rctx, c.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: namespace}}
	} else if err != nil {
		return nil, err
	}
	now := time.Now()
	if h := cur.Spec.HolderIdentity; h != nil && *h == identity && cur.Spec.LeaseTransitions != nil && cur.Spec.RenewTime != nil {
		// An earlier attempt's take landed though its answer was lost:
		// the Lease is this candidate's, from the time that take wrote.
		return c.held(identity, int64(*cur.Spec.LeaseTransitions), cur, cur.Spec.RenewTime.Time), nil
	}
	if h := cur.Spec.HolderIdentity; h != nil && *h != "" && !expired(cur, now) {
		return nil, nil
	}
	next := cur.DeepCopy()
	transitions := int32(1)
	if cur.Spec.LeaseTransitions != nil {
		transitions = *cur.Spec.LeaseTransitions + 1
	}
	secs := int32(c.ttl / time.Second)
	mt := metav1.NewMicroTime(now)
	next.Spec = coordinationv1.LeaseSpec{HolderIdentity: &identity, LeaseDurationSeconds: &secs,
		AcquireTime: &mt, RenewTime: &mt, LeaseTransitions: &transitions}
	var got *coordinationv1.Lease
	if cur.ResourceVersion == "" {
		got, err = c.cs.Leases(namespace).Create(rctx, next, metav1.CreateOptions{})
	} else {
		got, err = c.cs.Leases(namespace).Update(rctx, next, metav1.UpdateOptions{})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// The Lease says the holder renewed at mt (to the microsecond), which
	// is what a taker counts from: so does the holder.
	return c.held(identity, int64(transitions), got, mt.Time), nil
}

// held starts renewing a Lease this candidate holds, renewed at renewed.
func (c *client) held(identity string, token int64, cur *coordinationv1.Lease, renewed time.Time) *plainLease {
	l := &plainLease{c: c, identity: identity, token: token, cur: cur, renewed: renewed, stop: make(chan struct{}), done: make(chan struct{})}
	go l.keepAlive()
	return l
}

// expired: the Lease's renewTime plus its duration is past by now (this
// client's clock against the time the holder wrote).
func expired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// plainLease is a Lease held by the lease-lock recipe.
type plainLease struct {
	c        *client
	identity string
	token    int64

	mu      sync.Mutex
	cur     *coordinationv1.Lease // as last written or read
	renewed time.Time             // send time of the last renewal that landed
	lost    bool
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func (l *plainLease) Token() int64 { return l.token }

func (l *plainLease) holder() string { return l.identity }

// Held is the recipe's own belief: the lock was not lost and the last
// renewal is less than a TTL old (Remaining; targets.Believer).
func (l *plainLease) Held(context.Context) (bool, error) { return l.Remaining() > 0, nil }

func (l *plainLease) Remaining() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return 0
	}
	return max(0, time.Until(l.renewed.Add(l.c.ttl)))
}

// keepAlive renews every third of the TTL until Release, the client's
// Close, or the loss of the lock.
func (l *plainLease) keepAlive() {
	defer close(l.done)
	t := time.NewTicker(l.c.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if l.renew() {
			return
		}
	}
}

// renew sends one renewal (reading the Lease again after a conflict); it
// reports whether the lock is lost.
func (l *plainLease) renew() (lost bool) {
	ctx, cancel := l.c.timeout(context.Background())
	defer cancel()
	l.mu.Lock()
	next := l.cur.DeepCopy()
	l.mu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if h := next.Spec.HolderIdentity; h == nil || *h != l.identity {
			return l.lose()
		}
		mt := metav1.NewMicroTime(time.Now())
		next.Spec.RenewTime = &mt
		got, err := l.c.cs.Leases(namespace).Update(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			l.mu.Lock()
			l.cur, l.renewed = got, mt.Time
			l.mu.Unlock()
			return false
		}
		if !apierrors.IsConflict(err) {
			break
		}
		if next, err = l.c.cs.Leases(namespace).Get(ctx, l.c.name, metav1.GetOptions{}); err != nil {
			break
		}
	}
	if l.Remaining() == 0 {
		return l.lose()
	}
	return false
}

func (l *plainLease) lose() bool {
	l.mu.Lock()
	l.lost = true
	l.mu.Unlock()
	return true
}

// Release stops renewing and gives the Lease back (no holder) if this
// candidate still holds it.
func (l *plainLease) Release(ctx context.Context) error {
	l.c.forget(l)
	l.halt()
	l.mu.Lock()
	next := l.cur.DeepCopy()
	l.lost = true
	l.mu.Unlock()
	for attempt := 0; attempt < 3; attempt++ {
		if h := next.Spec.HolderIdentity; h == nil || *h != l.identity {
			return nil
		}
		empty := ""
		next.Spec.HolderIdentity = &empty
		rctx, cancel := l.c.timeout(ctx)
		_, err := l.c.cs.Leases(namespace).Update(rctx, next, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) {
			cancel()
			if err != nil {
				return fmt.Errorf("kubernetes: release: %w", err)
			}
			return nil
		}
		next, err = l.c.cs.Leases(namespace).Get(rctx, l.c.name, metav1.GetOptions{})
		cancel()
		if err != nil {
			return fmt.Errorf("kubernetes: release: %w", err)
		}
	}
	return fmt.Errorf("kubernetes: release: the Lease kept changing")
}

// halt stops renewing, without giving the Lease back.
func (l *plainLease) halt() {
	l.once.Do(func() { close(l.stop) })
	<-l.done
}

func (l *plainLease) abandon() {
	l.halt()
	l.lose()
}
