package etcd_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/harnesstest"
	"github.com/fencecheck/fencecheck/targets"
	"github.com/fencecheck/fencecheck/targets/etcd"
)

// startEtcd starts a real etcd cluster in Docker (no workers) and returns the
// harness's client of it.
func startEtcd(t *testing.T, nodes int) (*harness.Cluster, targets.Client) {
	t.Helper()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: etcd.Target{}, Nodes: nodes,
		Client: targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 2 * time.Second},
	})
	return cl, cl.Host()
}

func TestLockTokensAndFencing(t *testing.T) {
	cl, c := startEtcd(t, 3)
	ctx := context.Background()

	leader, err := cl.Leader(ctx)
	if err != nil || !slices.ContainsFunc(cl.Nodes, func(n targets.Node) bool { return n.Name == leader }) {
		t.Fatalf("leader %q, %v", leader, err)
	}

	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := a.Remaining(); left < time.Second || left > 2*time.Second {
		t.Errorf("fresh lease has %s left, want about 2s", left)
	}
	// Nobody else gets the lock while a holds it.
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
	if _, err := c.Write(ctx, []int64{1, 2, 3}, b, targets.FencingCAS); err != nil {
		t.Errorf("cas write of the holder: %v", err)
	}
	if rev, err := c.Write(ctx, []int64{9}, a, targets.FencingNone); err != nil || rev <= 0 {
		t.Errorf("unfenced stale write: rev %d, %v; want it accepted", rev, err)
	}
	if list, _ := c.Read(ctx); !slices.Equal(list, []int64{9}) {
		t.Errorf("after the unfenced stale write: %v, want [9]", list)
	}
	b.Release(ctx)

	if err := c.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Read(ctx); err != nil || len(list) != 0 || list == nil {
		t.Errorf("after reset: %#v %v, want an empty list", list, err)
	}
}

// A lease that is not kept alive expires after its TTL and the lock passes
// on: the basis of every pause scenario.
func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	cl, c := startEtcd(t, 1)
	ctx := context.Background()
	other, err := etcd.Target{}.Dial(ctx, cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Close the client: keepalives stop as they would in a frozen process.
	c.Close()
	start := time.Now()
	b, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if waited < time.Second || waited > 5*time.Second {
		t.Errorf("lock passed on after %s, want about the 2s TTL", waited)
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}
}

func TestValidate(t *testing.T) {
	for ttl, ok := range map[time.Duration]bool{time.Second: true, 2 * time.Second: true, 1500 * time.Millisecond: false, 0: false} {
		err := etcd.Target{}.Validate(targets.ClientConfig{TTL: ttl})
		if (err == nil) != ok || (err != nil && !errors.Is(err, targets.ErrBadConfig)) {
			t.Errorf("ttl %s: %v", ttl, err)
		}
	}
	if _, err := (etcd.Target{}).Nodes(0); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("0 nodes: %v", err)
	}
}
