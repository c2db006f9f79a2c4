package consul

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/fencecheck/fencecheck/targets"
)

// Dial returns a client of one server, picked at random from the endpoints
// (every server forwards writes and default reads to the leader). Keys:
// PREFIX/lock (the lock), PREFIX/value (the list, as JSON), PREFIX/fence (the
// highest accepted token, in decimal), PREFIX/kv/KEY (the KV's registers).
// Consul keys have no leading slash; one in the prefix is dropped.
func (t Target) Dial(ctx context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: consul: no endpoints", targets.ErrBadConfig)
	}
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	addr := cfg.Endpoints[rand.IntN(len(cfg.Endpoints))]
	// The api's own requests without a context (a waiting Lock's blocking
	// reads, Unlock) end after this.
	cli, err := newAPI(addr, rpc+lockWait+lockWait/16+time.Second, cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("consul: %w", err)
	}
	pfx := strings.Trim(cfg.Prefix, "/")
	return &client{api: cli, addr: addr, ttl: cfg.TTL, delay: lockDelay(cfg), rpc: rpc,
		lock: pfx + "/lock", leader: pfx + "/leader", value: pfx + "/value", fence: pfx + "/fence", kv: pfx + "/kv/",
		leases: map[*lease]bool{}}, nil
}

type client struct {
	api              *api.Client
	addr             string
	ttl, delay, rpc  time.Duration
	lock, leader     string
	value, fence, kv string

	mu     sync.Mutex
	leases map[*lease]bool // leases whose session this client renews
}

// ReadModes is Target.ReadModes.
func (c *client) ReadModes() []string { return Target{}.ReadModes() }

// Close stops renewing every session of the client, as a frozen or crashed
// process would (the sessions stay until Consul invalidates them).
func (c *client) Close() error {
	c.mu.Lock()
	ls := c.leases
	c.leases = map[*lease]bool{}
	c.mu.Unlock()
	for l := range ls {
		l.stopRenewing()
	}
	return nil
}

func (c *client) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.rpc)
}

func query(ctx context.Context) *api.QueryOptions { return (&api.QueryOptions{}).WithContext(ctx) }

func consistent(ctx context.Context) *api.QueryOptions {
	return (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx)
}

func write(ctx context.Context) *api.WriteOptions { return (&api.WriteOptions{}).WithContext(ctx) }

// ttlString is the TTL as Consul takes it ("10s").
func (c *client) ttlString() string { return fmt.Sprintf("%ds", c.ttl/time.Second) }

// createSession creates the session of one grant: TTL, no health checks
// (only the TTL ends it), behavior release, and the lock-delay given
// explicitly. (The api's Session().Create leaves a zero LockDelay out of its
// request, and Consul then applies its 15 s default: a lock-delay of 0 has
// to be sent as "0s".)
func (c *client) createSession(ctx context.Context) (string, error) {
	body := map[string]any{
		"Name":          "fencecheck",
		"TTL":           c.ttlString(),
		"LockDelay":     c.delay.String(),
		"Behavior":      api.SessionBehaviorRelease,
		"NodeChecks":    []string{},
		"ServiceChecks": []api.ServiceCheck{},
	}
	var out struct{ ID string }
	if _, err := c.api.Raw().Write("/v1/session/create", body, &out, write(ctx)); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("session create returned no ID")
	}
	return out.ID, nil
}

// Acquire creates a session, renews it in the background, and takes the lock
// with the api's Lock on it; the token is the lock key's ModifyIndex as a
// consistent read returns it right after the grant.
func (c *client) Acquire(ctx context.Context) (targets.Lease, error) {
	return c.acquireOn(ctx, c.lock, nil)
}

// acquireOn takes a session lock on key, with value as the key's value.
func (c *client) acquireOn(ctx context.Context, key string, value []byte) (targets.Lease, error) {
	sent := time.Now()
	sctx, cancel := c.timeout(ctx)
	id, err := c.createSession(sctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("consul: create session: %w", err)
	}
	l := &lease{c: c, id: id, key: key, stop: make(chan struct{}), expiry: sent.Add(c.ttl)}
	c.mu.Lock()
	c.leases[l] = true
	c.mu.Unlock()
	go l.renew()

	lk, err := c.api.LockOpts(&api.LockOptions{
		Key:          key,
		Value:        value,
		Session:      id,
		SessionTTL:   c.ttlString(),
		LockWaitTime: lockWait,
		// MonitorRetries 0: the monitor retries nothing.
	})
	if err != nil {
		l.abandon(false)
		return nil, fmt.Errorf("consul: lock: %w", err)
	}
	stopCh := make(chan struct{})
	acquired := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			close(stopCh)
		case <-acquired:
		}
	}()
	lost, err := lk.Lock(stopCh)
	close(acquired)
	switch {
	case err != nil:
		l.abandon(false)
		return nil, fmt.Errorf("consul: lock: %w", err)
	case lost == nil: // stopCh closed before the grant
		l.abandon(false)
		return nil, fmt.Errorf("consul: lock not acquired: %w", ctx.Err())
	}
	l.lock = lk

	// The grant's own index. A caller whose deadline passed just as it got
	// the lock still holds it: read the token regardless.
	rctx, cancel := c.timeout(context.WithoutCancel(ctx))
	pair, _, err := c.api.KV().Get(key, consistent(rctx))
	cancel()
	switch {
	case err != nil:
		l.abandon(true)
		return nil, fmt.Errorf("consul: read the lock key for its token: %w", err)
	case pair == nil || pair.Session != id:
		l.abandon(true)
		return nil, fmt.Errorf("consul: lock key %s no longer held by session %s right after the grant", key, id)
	}
	l.token = int64(pair.ModifyIndex)
	return l, nil
}

type lease struct {
	c     *client
	id    string // the session
	key   string // the lock's or the leader's key
	lock  *api.Lock
	token int64

	stop     chan struct{}
	stopOnce sync.Once

	m      sync.Mutex
	expiry time.Time
}

// renew renews the session every TTL/2 until stopped or until Consul no
// longer knows it. After a successful renewal the client counts on one TTL
// from the moment it sent the request (Consul's 2 TTL grace is not promised
// to it). A renewal that fails is tried again a second later: renewals write
// nothing the test records.
func (l *lease) renew() {
	every := l.c.ttl / 2
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.c.rpc)
		se, _, err := l.c.api.Session().Renew(l.id, write(ctx))
		cancel()
		switch {
		case err != nil:
			t.Reset(min(time.Second, every))
			continue
		case se == nil: // invalidated: nothing left to renew
			return
		}
		l.m.Lock()
		l.expiry = sent.Add(l.c.ttl)
		l.m.Unlock()
		t.Reset(every)
	}
}

func (l *lease) stopRenewing() { l.stopOnce.Do(func() { close(l.stop) }) }

func (l *lease) Token() int64 { return l.token }

func (l *lease) Remaining() time.Duration {
	l.m.Lock()
	defer l.m.Unlock()
	return time.Until(l.expiry)
}

// Held is the recipe's own belief, the session's deadline: TTL from the last renewal
// the server accepted, has not passed
// (targets.Believer).
func (l *lease) Held(context.Context) (bool, error) { return l.Remaining() > 0, nil }

// abandon gives up a session, best effort: it releases the lock first if it
// was granted (destroying a session that holds a lock would impose the
// lock-delay on the next holder), then destroys the session.
func (l *lease) abandon(locked bool) {
	l.stopRenewing()
	l.c.forget(l)
	if locked && l.lock != nil {
		_ = l.lock.Unlock()
	}
	ctx, cancel := l.c.timeout(context.Background())
	defer cancel()
	_, _ = l.c.api.Session().Destroy(l.id, write(ctx))
}

func (c *client) forget(l *lease) {
	c.mu.Lock()
	delete(c.leases, l)
	c.mu.Unlock()
}

// Release releases the lock (a KV release, which imposes no lock-delay),
// stops renewing, and destroys the session.
func (l *lease) Release(ctx context.Context) error {
	err := l.lock.Unlock()
	l.stopRenewing()
	l.c.forget(l)
	dctx, cancel := l.c.timeout(ctx)
	defer cancel()
	if _, derr := l.c.api.Session().Destroy(l.id, write(dctx)); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("consul: release: %w", err)
	}
	return nil
}
