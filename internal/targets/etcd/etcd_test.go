package etcd_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/harness/harnesstest"
	"github.com/fencecheck/fencecheck/internal/targets/etcd"
	"github.com/fencecheck/fencecheck/internal/targets/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

// startEtcd starts a real etcd cluster in Docker (no workers) and returns the
// harness's client of it.
func startEtcd(t *testing.T, nodes int) (*harness.Cluster, targets.Client) {
	t.Helper()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: etcd.Target{}, Nodes: nodes,
		Client: targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 2 * time.Second},
	})
	return cl, cl.Host().Lock
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
	targettest.Exclusive(t, c, 500*time.Millisecond)
	b, revs := targettest.Fences(t, c, a)
	if !revs.AllSet() {
		t.Errorf("revisions %+v: want an etcd revision for every write", revs)
	}
	b.Release(ctx)
	targettest.Emptied(t, c)
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

// The election recipe: one leader at a time, terms that grow.
func TestElection(t *testing.T) {
	cl, c := startEtcd(t, 1)
	other, err := etcd.Target{}.Dial(context.Background(), cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	targettest.Elects(t, c, other, 500*time.Millisecond)
}
