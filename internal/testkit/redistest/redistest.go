// Package redistest holds what the Redis targets' tests share: a real
// cluster in Docker and the checks every Redis lock recipe must pass.
package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

// TTL is the lease of the tests.
const TTL = 2 * time.Second

// drift is what Redlock (redsync) takes off a lease's validity for the
// servers' clock drift: 1 % of the TTL and 2 ms.
const drift = TTL/100 + 2*time.Millisecond

// Start starts a real cluster of target in Docker (no workers), with its
// network helpers, and returns it with the harness's client of it. The cluster goes at the test's end.
func Start(t *testing.T, target targets.Target, nodes int) (*harness.Cluster, targettest.Client) {
	t.Helper()
	// NetHelpers: the Sentinel tests cut a replica's link (Cluster.NetExec).
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: target, Nodes: nodes,
		Client:     targets.ClientConfig{TTL: TTL, RPCTimeout: 2 * time.Second},
		NetHelpers: true,
	})
	return cl, targettest.LockStore(t, cl.Host().Lock)
}

// Dial returns another client of the cluster, closed at the test's end.
func Dial(t *testing.T, target targets.Target, cl *harness.Cluster) targettest.Client {
	t.Helper()
	c, err := target.Dial(context.Background(), cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return targettest.LockStore(t, c)
}

// LockAndFences checks a lock recipe and its fences: a fresh lease has
// about the TTL left, nobody else gets a held lock, the fencing contract
// (targettest.Fences), releases (a stale holder's release is not an error),
// and Reset empties the list.
func LockAndFences(t *testing.T, c targets.Client) {
	t.Helper()
	ctx := context.Background()
	begin := time.Now()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The lease starts when the grant is asked for: what is left is the TTL
	// less at most the time since then (however slow the machine), and
	// less Redlock's allowance for clock drift (1 % of the TTL and 2 ms;
	// drift below).
	if left, since := a.Remaining(), time.Since(begin); left < TTL-since-drift || left > TTL {
		t.Errorf("fresh lease has %s left %s after the acquire began, want between %s and %s", left, since, TTL-since-drift, TTL)
	}
	targettest.Exclusive(t, c, 500*time.Millisecond)
	b, revs := targettest.Fences(t, c, a)
	if !revs.AllSet() {
		t.Errorf("revisions %+v: want one for every write", revs)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Errorf("release of an expired lease: %v, want nil", err)
	}
	targettest.Emptied(t, c)
}

// LeaseExpires checks that a lease nobody releases ends after about the TTL
// and the lock passes on with a higher token: the basis of every pause
// scenario.
func LeaseExpires(t *testing.T, holder, other targets.Client) {
	t.Helper()
	ctx := context.Background()
	begin := time.Now()
	a, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Not before the holder's lease ran out (it began at the latest when
	// its acquire was asked for), and within a few TTLs: a lease that never
	// expires blocks the acquire for good.
	waited, took := time.Since(start), start.Sub(begin)
	if waited < TTL-took-50*time.Millisecond || waited > 3*TTL {
		t.Errorf("lock passed on after %s (the holder's acquire took %s), want after the rest of the %s TTL and within %s", waited, took, TTL, 3*TTL)
	}
	if a.Remaining() > 0 {
		t.Errorf("the holder still believes it has %s left", a.Remaining())
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}
	b.Release(ctx)
}
