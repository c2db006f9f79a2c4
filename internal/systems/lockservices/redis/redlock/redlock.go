// Package redlock is the redlock target: independent Redis masters (5 by
// default in the Redlock algorithm; --nodes picks 1 to 7), no replication,
// and the Redlock algorithm as github.com/go-redsync/redsync/v4 implements
// it, through its go-redis v9 pool.
//
// Lock: redsync's Mutex, with an expiry of --ttl: SET PREFIX/lock <random
// value> NX PX ttl on every master in parallel (each with a timeout of 5%
// of the TTL), held when a majority (N/2+1) said yes within the validity
// time; otherwise the keys it did set are released and it tries again after
// 20-60 ms, until the caller's deadline. Release is redsync's
// compare-and-delete on every master. Lease.Remaining is redsync's validity
// estimate (Mutex.Until): TTL minus the time the acquisition took minus 1%
// for clock drift. Each master runs with the append-only file fsynced on
// every write, as the Redlock analysis asks of a master that can restart.
//
// Fencing token: Redlock has none. A lock granted by a majority of
// independent masters has no single place where a counter could be
// incremented as part of the grant. With --fencing token the client takes
// one after the grant, from INCR PREFIX/token on n1, the master that also
// holds the resource: one counter, next to the fence that compares tokens.
// That is not safe (Kleppmann, "How to do distributed locking", 2016):
//   - the token does not come from the lock service with the grant. A client
//     that stops between its grant and its INCR (a GC pause) gets a token
//     that is higher than the one of the client that took the lock after its
//     lease expired: token order is no longer grant order, and the fence
//     lets the stale holder through (the redlock tests show it);
//   - Redlock's mutual exclusion itself trusts clocks: every master expires
//     the key by its own wall clock, and the client's validity estimate
//     assumes bounded drift and bounded pauses. A master whose clock jumps
//     forward (clock-skew:server), or that restarts without the key, frees
//     its vote early, and a second client can gather a majority while the
//     first still believes it holds the lock;
//   - n1 is a single point: while it is down no client can take a token (or
//     touch the resource); were it not durable, a restart would start the
//     counter again from 1.
//
// Under pause-holder the token is taken before the pause, and token fencing
// holds; the cases above are where it does not.
//
// cas: the resource is on n1, so the honest compare-and-set is n1's own:
// the write applies only while n1's PREFIX/lock holds this lease's random
// value (the single-instance fence of package redis). It is as safe as n1 is
// (durable, its clock true), because it falls back on n1's single key:
// Redlock's majority adds nothing to it. It also refuses a holder whose
// majority did not include n1 (n1 was down, slow, or held by another): a
// rejection that is counted as fenced although that client held the lock.
//
// Leader: Redlock has no leader; Leader is n1, the master whose failure
// matters beyond the majority (the token counter and the resource), so
// kill:leader and partition:leader hit it.
//
// No hidden retries: every go-redis client has its command retries off.
// redsync's tries are new acquisition attempts (each with its own SETs and
// the release of a failed attempt's keys), as the algorithm prescribes.
package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/targets"
)

// Target is independent Redis masters locked with Redlock.
type Target struct{}

// Name is "redlock".
func (Target) Name() string { return "redlock" }

// Image is the base image, which holds redis-server.
func (Target) Image() string { return kinds.Base }

// Version is the redis-server version.
func (Target) Version() string { return redis.ServerVersion }

// DefaultNodes is 5 independent masters, as the Redlock algorithm suggests.
func (Target) DefaultNodes() int { return 5 }

// Nodes returns n independent masters, 1 to 7 (5 is Redlock's usual
// number; any n works, with a majority of n/2+1).
func (Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n < 1 || n > 7 {
		return nil, fmt.Errorf("%w: redlock runs 1 to 7 independent Redis masters (usually 5), not %d", targets.ErrBadConfig, n)
	}
	specs := make([]targets.NodeSpec, n)
	for i := range specs {
		specs[i] = targets.NodeSpec{Name: fmt.Sprintf("n%d", i+1), Port: redis.Port, Cmd: redis.ServerCmd(redis.Durable), DataDir: redis.DataDir}
	}
	return specs, nil
}

// Validate checks the TTL (see redis.ValidateTTL).
func (Target) Validate(cfg targets.ClientConfig) error { return redis.ValidateTTL(cfg.TTL) }

// Ready returns nil once every master answers PING.
func (Target) Ready(ctx context.Context, nodes []targets.Node) error {
	return redis.PingAll(ctx, nodes)
}

// Leader is n1 (the first node): see the package comment.
func (Target) Leader(_ context.Context, nodes []targets.Node) (string, error) {
	if len(nodes) == 0 {
		return "", errors.New("redlock: no server")
	}
	return nodes[0].Name, nil
}

// Dial returns a client of every master; the first (n1) holds the token
// counter and the resource.
func (t Target) Dial(_ context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("redlock: no endpoint")
	}
	rpc := redis.RPC(cfg)
	c := &Client{keys: redis.KeysFor(cfg.Prefix), ttl: cfg.TTL, rpc: rpc}
	var pools []redsyncredis.Pool
	for _, e := range cfg.Endpoints {
		rdb := redis.NewClient(e, rpc)
		c.rdbs = append(c.rdbs, rdb)
		pools = append(pools, redsyncgoredis.NewPool(rdb))
	}
	c.rs = redsync.New(pools...)
	c.Resource = redis.Resource{RDB: c.rdbs[0], Keys: c.keys, RPC: rpc}
	return c, nil
}

// Client is a Redlock client of every master, and the resource on n1.
type Client struct {
	redis.Resource
	rs   *redsync.Redsync
	rdbs []*goredis.Client
	keys redis.Keys
	ttl  time.Duration
	rpc  time.Duration

	// afterGrant, when not nil, runs between the grant and the token's
	// INCR (tests: a client that stops there).
	afterGrant func()
}

// Close closes every go-redis client.
func (c *Client) Close() error {
	var errs []error
	for _, r := range c.rdbs {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// Acquire takes the Redlock until ctx ends, then the token: INCR on n1. If
// the INCR fails the lock is released and Acquire fails.
func (c *Client) Acquire(ctx context.Context) (targets.Lease, error) {
	m := c.rs.NewMutex(c.keys.Lock,
		redsync.WithExpiry(c.ttl),
		redsync.WithTries(math.MaxInt32), // until ctx ends
		redsync.WithRetryDelayFunc(func(int) time.Duration { return 20*time.Millisecond + rand.N(40*time.Millisecond) }),
	)
	if err := m.LockContext(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("redlock: lock: %w (%w)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("redlock: lock: %w", err)
	}
	l := &Lease{c: c, m: m}
	if c.afterGrant != nil {
		c.afterGrant()
	}
	rctx, cancel := context.WithTimeout(ctx, c.rpc)
	tok, err := c.rdbs[0].Incr(rctx, c.keys.Counter).Result()
	cancel()
	if err != nil {
		_ = l.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("redlock: token (INCR on n1): %w", err)
	}
	l.token = tok
	return l, nil
}

// Lease is a Redlock grant and the token taken after it.
type Lease struct {
	c     *Client
	m     *redsync.Mutex
	token int64
}

// Token is the INCR on n1 taken right after the grant (not part of it).
func (l *Lease) Token() int64 { return l.token }

// LockValue is the grant's random value (on each master that granted it).
func (l *Lease) LockValue() string { return l.m.Value() }

// Remaining is redsync's validity estimate.
func (l *Lease) Remaining() time.Duration { return time.Until(l.m.Until()) }

// Held is redsync's own belief: its validity (Mutex.Until) has not
// passed (targets.Believer).
func (l *Lease) Held(context.Context) (bool, error) { return l.Remaining() > 0, nil }

// Release deletes the key on every master that still holds our value. A
// lease that expired meanwhile (keys gone, or taken by others) is not an
// error.
func (l *Lease) Release(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, l.c.rpc)
	defer cancel()
	if _, err := l.m.UnlockContext(rctx); err != nil && !gone(err) {
		return fmt.Errorf("redlock: release: %w", err)
	}
	return nil
}

// gone reports whether every error of an unlock says that our key had
// already expired or belongs to another client.
func gone(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !gone(e) {
				return false
			}
		}
		return true
	}
	var node redsync.ErrNodeTaken
	var taken redsync.ErrTaken
	return errors.Is(err, redsync.ErrLockAlreadyExpired) || errors.As(err, &node) || errors.As(err, &taken)
}
