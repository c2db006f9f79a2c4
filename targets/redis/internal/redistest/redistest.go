// Package redistest holds what the Redis targets' tests share: a real
// cluster in Docker and the checks every Redis lock recipe must pass.
package redistest

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/targets"
)

// TTL is the lease of the tests.
const TTL = 2 * time.Second

// Start starts a real cluster of target in Docker (no workers) and returns
// it with the harness's client of it. The cluster goes at the test's end.
func Start(t *testing.T, target targets.Target, nodes int) (*harness.Cluster, targets.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	if os.Getenv("FENCECHECK_SKIP_DOCKER") == "1" {
		t.Skip("integration test: FENCECHECK_SKIP_DOCKER=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := harness.StartCluster(ctx, harness.ClusterConfig{
		Target: target, Nodes: nodes,
		Client:       targets.ClientConfig{TTL: TTL, RPCTimeout: 2 * time.Second},
		ReadyTimeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatalf("start %s: %v", target.Name(), err)
	}
	t.Cleanup(func() { cl.Close("") })
	return cl, cl.Host()
}

// Dial returns another client of the cluster, closed at the test's end.
func Dial(t *testing.T, target targets.Target, cl *harness.Cluster) targets.Client {
	t.Helper()
	c, err := target.Dial(context.Background(), cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// LockAndFences checks a lock recipe and its fences: a fresh lease has
// about the TTL left, nobody else gets a held lock, tokens increase, the
// holder's fenced writes pass, a stale holder's token and cas writes are
// refused (ErrFenced) and its unfenced write is accepted, and Reset empties
// the list.
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
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	if _, err := c.Acquire(tctx); err == nil {
		t.Fatalf("a second client acquired a held lock")
	}
	cancel()
	if _, err := c.Write(ctx, []int64{1}, a, targets.FencingToken); err != nil {
		t.Fatalf("token write of the holder: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}

	b, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d: not increasing", b.Token(), a.Token())
	}
	// b's fenced read moves the fence before b writes anything: a's write
	// is refused from then on, and so is a's fenced read.
	if list, err := c.ReadFenced(ctx, b); err != nil || !slices.Equal(list, []int64{1}) {
		t.Fatalf("b's fenced read: %v %v", list, err)
	}
	if _, err := c.Write(ctx, []int64{7}, a, targets.FencingToken); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("stale token write after the new holder's read: %v, want ErrFenced", err)
	}
	if _, err := c.ReadFenced(ctx, a); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("stale fenced read: %v, want ErrFenced", err)
	}
	if _, err := c.Write(ctx, []int64{1, 2}, b, targets.FencingToken); err != nil {
		t.Fatalf("token write: %v", err)
	}
	// a is a stale holder now: both fences refuse it, the plain write does not.
	if _, err := c.Write(ctx, []int64{9}, a, targets.FencingToken); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("stale token write: %v, want ErrFenced", err)
	}
	if _, err := c.Write(ctx, []int64{9}, a, targets.FencingCAS); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("stale cas write: %v, want ErrFenced", err)
	}
	if list, err := c.Read(ctx); err != nil || !slices.Equal(list, []int64{1, 2}) {
		t.Errorf("read %v %v, want [1 2]", list, err)
	}
	rev, err := c.Write(ctx, []int64{1, 2, 3}, b, targets.FencingCAS)
	if err != nil {
		t.Errorf("cas write of the holder: %v", err)
	}
	if r2, err := c.Write(ctx, []int64{9}, a, targets.FencingNone); err != nil || r2 <= rev {
		t.Errorf("unfenced stale write: rev %d (after %d), %v; want it accepted with a later revision", r2, rev, err)
	}
	if list, _ := c.Read(ctx); !slices.Equal(list, []int64{9}) {
		t.Errorf("after the unfenced stale write: %v, want [9]", list)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Errorf("release of an expired lease: %v, want nil", err)
	}

	if err := c.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Read(ctx); err != nil || len(list) != 0 || list == nil {
		t.Errorf("after reset: %#v %v, want an empty list", list, err)
	}
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
