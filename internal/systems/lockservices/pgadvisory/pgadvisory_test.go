package pgadvisory_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/pgadvisory"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

const ttl = 2 * time.Second

func start(t *testing.T) (*harness.Cluster, targets.Client) {
	t.Helper()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: pgadvisory.Target{}, Nodes: 1,
		Client: targets.ClientConfig{TTL: ttl, RPCTimeout: 2 * time.Second},
	})
	return cl, cl.Host().Lock
}

func dial(t *testing.T, cl *harness.Cluster) targets.Client {
	t.Helper()
	c, err := pgadvisory.Target{}.Dial(context.Background(), cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The lock on a real PostgreSQL: exclusive, tokens that grow, a lease check
// that asks the server, and the lock-store's three fencing modes.
func TestLockTokensAndFencing(t *testing.T) {
	harnesstest.RequireDocker(t)
	t.Parallel()
	cl, c := start(t)
	ctx := context.Background()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Remaining asks the server, and counts a TTL from when it asked:
	// never more than the TTL, and no less than the TTL less the time the
	// question took, however long a loaded machine made it (0 only if it
	// took the TTL).
	asked := time.Now()
	left := a.Remaining()
	if took := time.Since(asked); left > ttl || left < ttl-took {
		t.Errorf("a held lock has %s left, asked in %s, want %s less that at most", left, took, ttl)
	}
	other := dial(t, cl)
	targettest.Exclusive(t, other, 500*time.Millisecond)
	b, revs := targettest.Fences(t, c, a)
	if !revs.AllSet() {
		t.Errorf("revisions %+v: want a version for every write", revs)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err == nil {
		t.Error("a second release of the same grant succeeded")
	}
	targettest.Emptied(t, c)
}

// A holder whose session ends (its client closed) loses the lock at once:
// the server releases a session's advisory locks when it ends; and its
// lease check then finds nothing left. "At once" is bounded by 10 s, the
// other client's Acquire through Docker on a loaded machine (typically
// milliseconds): a lock that did not go with its session is never
// released, since the closed client's machine still answers the server's
// keepalives.
func TestLockGoesWithTheSession(t *testing.T) {
	harnesstest.RequireDocker(t)
	t.Parallel()
	cl, _ := start(t)
	holder := dial(t, cl)
	a, b, waited := targettest.PassesOn(t, holder, dial(t, cl), 0, 10*time.Second)
	t.Logf("passed on %s after the holder's session closed", waited)
	if left := a.Remaining(); left != 0 {
		t.Errorf("the closed holder believes it has %s left", left)
	}
	_ = b.Release(context.Background())
}

// Bad input: a TTL the keepalive settings cannot express.
func TestValidate(t *testing.T) {
	for _, d := range []time.Duration{time.Second, 2500 * time.Millisecond} {
		if err := (pgadvisory.Target{}).Validate(targets.ClientConfig{TTL: d}); err == nil {
			t.Errorf("--ttl %s was taken", d)
		}
	}
	if err := (pgadvisory.Target{}).Validate(targets.ClientConfig{TTL: 3 * time.Second}); err != nil {
		t.Error(err)
	}
}
