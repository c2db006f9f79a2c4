// Package redistest holds what the Redis targets' tests share: a real
// cluster in Docker and the checks every Redis lock recipe must pass.
package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/harness/harnesstest"
	"github.com/fencecheck/fencecheck/internal/targets/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

// TTL is the lease of the tests.
const TTL = 2 * time.Second

// Start starts a real cluster of target in Docker (no workers) and returns
// it with the harness's client of it. The cluster goes at the test's end.
func Start(t *testing.T, target targets.Target, nodes int) (*harness.Cluster, targettest.Client) {
	t.Helper()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: target, Nodes: nodes,
		Client: targets.ClientConfig{TTL: TTL, RPCTimeout: 2 * time.Second},
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
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := a.Remaining(); left < TTL-500*time.Millisecond || left > TTL {
		t.Errorf("fresh lease has %s left, want about %s", left, TTL)
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
	a, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if waited < TTL-300*time.Millisecond || waited > TTL+time.Second {
		t.Errorf("lock passed on after %s, want about the %s TTL", waited, TTL)
	}
	if a.Remaining() > 0 {
		t.Errorf("the holder still believes it has %s left", a.Remaining())
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}
	b.Release(ctx)
}
