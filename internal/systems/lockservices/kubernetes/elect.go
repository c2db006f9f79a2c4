package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fencecheck/fencecheck/targets"
)

// Acquire takes the lock with the client's recipe: by default the way a
// controller takes its leadership, running client-go's leader election on
// the run's Lease until it leads (the grant is OnStartedLeading; see
// Campaign); lease-lock: acquireLease.
func (c *client) Acquire(ctx context.Context) (targets.Lease, error) {
	if c.recipe == RecipeLeaseLock {
		l, err := c.acquireLease(ctx)
		if h, ok := l.(held); ok {
			c.track(h)
		}
		return l, err
	}
	return c.Campaign(ctx, "lock")
}

// Campaign runs client-go's tools/leaderelection with a LeaseLock, lease
// duration the TTL, renew deadline and retry period in client-go's default
// proportions (Timings), ReleaseOnCancel, until the caller leads. Each call
// is a candidate of its own (identity CANDIDATE-CLIENT-N), so that every
// grant changes the Lease's holder.
//
// The term (Token) is the Lease's leaseTransitions as this candidate's own
// acquiring write set it, plus one: leaderelection adds one whenever a
// candidate takes the Lease from another holder (or from none), in an
// update conditioned on the Lease's resourceVersion, so it grows with every
// grant for as long as etcd keeps its writes. Remaining is what
// leaderelection itself allows: the renew deadline after the send time of
// the last write that renewed the Lease, and nothing once it stopped
// leading.
func (c *client) Campaign(ctx context.Context, candidate string) (targets.Lease, error) {
	leaseD, renew, retry := Timings(c.ttl)
	identity := fmt.Sprintf("%s-%s-%d", candidate, c.id, c.n.Add(1))
	rec := &recorder{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: c.name, Namespace: namespace},
		Client:     c.cs,
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}}
	l := &lease{c: c, identity: identity, renew: renew, rec: rec, done: make(chan struct{})}
	started := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: rec, LeaseDuration: leaseD, RenewDeadline: renew, RetryPeriod: retry,
		ReleaseOnCancel: true, Name: c.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() { l.stopped.Store(true) },
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: kubernetes: %w", targets.ErrBadConfig, err)
	}
	run, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		le.Run(run)
	}()
	select {
	case <-started:
	case <-ctx.Done():
		cancel()
		<-l.done
		if rec.held() {
			// It won just as the caller gave up: the release above gave
			// the Lease back.
			return nil, fmt.Errorf("kubernetes: campaign: %w (won and released at once)", ctx.Err())
		}
		return nil, fmt.Errorf("kubernetes: campaign: %w", ctx.Err())
	}
	l.token = int64(rec.grantTransitions()) + 1
	l.le = le
	c.track(l)
	return l, nil
}

// recorder is client-go's LeaseLock, watched: it keeps what this
// candidate's own successful writes holding the Lease said (the
// transitions count of its grant, the send time of its last renewal), and
// after abandon it fails every call, as a crashed process makes none.
type recorder struct {
	resourcelock.Interface
	dead atomic.Bool

	mu          sync.Mutex
	granted     bool
	transitions int
	renewed     time.Time
}

var errAbandoned = errors.New("kubernetes: the candidate was abandoned")

func (r *recorder) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if r.dead.Load() {
		return nil, nil, errAbandoned
	}
	return r.Interface.Get(ctx)
}

func (r *recorder) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.Interface.Create)
}

func (r *recorder) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.Interface.Update)
}

func (r *recorder) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	if r.dead.Load() {
		return errAbandoned
	}
	sent := time.Now()
	if err := do(ctx, ler); err != nil {
		return err
	}
	if ler.HolderIdentity == r.Identity() {
		r.mu.Lock()
		if !r.granted {
			r.granted, r.transitions = true, ler.LeaderTransitions
		}
		r.renewed = sent
		r.mu.Unlock()
	}
	return nil
}

func (r *recorder) held() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.granted
}

func (r *recorder) grantTransitions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transitions
}

func (r *recorder) lastRenewal() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renewed
}

// lease is a leadership won by Campaign.
type lease struct {
	c        *client
	identity string
	token    int64
	renew    time.Duration
	rec      *recorder
	cancel   context.CancelFunc
	done     chan struct{} // closed when the election stopped
	stopped  atomic.Bool   // OnStoppedLeading
	le       *leaderelection.LeaderElector
}

func (l *lease) Token() int64 { return l.token }

func (l *lease) holder() string { return l.identity }

// Held is client-go's own answer, LeaderElector.IsLeader: the record it
// last observed names this candidate (it does not look at the lease's
// expiry), and it has not stopped leading (targets.Believer).
func (l *lease) Held(context.Context) (bool, error) {
	return !l.stopped.Load() && l.le.IsLeader(), nil
}

func (l *lease) Remaining() time.Duration {
	if l.stopped.Load() {
		return 0
	}
	return max(0, time.Until(l.rec.lastRenewal().Add(l.renew)))
}

// Release cancels the election, whose ReleaseOnCancel gives the Lease back
// (an update with no holder) if this candidate still holds it, and waits
// for it to stop.
func (l *lease) Release(ctx context.Context) error {
	l.c.forget(l)
	l.cancel()
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kubernetes: release: %w", ctx.Err())
	}
}

// abandon stops the election without giving the Lease back, and waits
// (at most a renew deadline) until it stopped, so that no renewal lands
// after it.
func (l *lease) abandon() {
	l.rec.dead.Store(true)
	l.cancel()
	select {
	case <-l.done:
	case <-time.After(l.renew):
	}
}
