package etcd_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

// startEtcd starts a real etcd cluster in Docker (no workers) and returns the
// harness's client of it.
func startEtcd(t *testing.T, nodes int) (*harness.Cluster, targets.Client) {
	t.Helper()
	return startTarget(t, etcd.Target{}, nodes, "")
}

// startTarget starts a cluster of target (a version of etcd) whose clients
// use recipe.
func startTarget(t *testing.T, target etcd.Target, nodes int, recipe string) (*harness.Cluster, targets.Client) {
	t.Helper()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: target, Nodes: nodes,
		Client: targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 2 * time.Second, Recipe: recipe},
	})
	return cl, cl.Host().Lock
}

// Every version of the table runs with the target's command line, reports
// the server version the table names, and passes the lock contract with
// the client library of fencecheck's go.mod, with each recipe (the lock
// RPC is the server's own code, of its version): one holder at a time,
// tokens and fencing. The default version runs in make test; the others,
// each an image of its own to compile, in make test-all.
func TestVersions(t *testing.T) {
	for i, name := range (etcd.Target{}).Versions() {
		t.Run(name, func(t *testing.T) {
			if i > 0 {
				suite.All(t, "etcd "+name+"'s image (a compile of its own)")
			}
			t.Parallel()
			target := etcd.Target{}.WithVersion(name).(etcd.Target)
			cl, _ := startTarget(t, target, 1, "")
			want, _ := images.LookupVersion(images.Etcd, name)
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{cl.Nodes[0].Addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := cli.Status(ctx, cl.Nodes[0].Addr)
			if err != nil {
				t.Fatal(err)
			}
			if st.Version != want.Server {
				t.Errorf("server reports version %s, want %s", st.Version, want.Server)
			}
			for _, recipe := range target.Recipes() {
				cfg := cl.ClientConfig()
				cfg.Recipe = recipe
				c, err := target.Dial(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if err := targettest.LockStore(t, c).Reset(ctx); err != nil {
					t.Fatal(err)
				}
				a, err := c.Acquire(ctx)
				if err != nil {
					t.Fatalf("%s: %v", recipe, err)
				}
				targettest.Exclusive(t, c, 300*time.Millisecond)
				b, revs := targettest.Fences(t, c, a)
				if !revs.AllSet() {
					t.Errorf("%s: revisions %+v: want an etcd revision for every write", recipe, revs)
				}
				if err := b.Release(ctx); err != nil {
					t.Errorf("%s: release: %v", recipe, err)
				}
			}
		})
	}
}

func TestLockTokensAndFencing(t *testing.T) {
	for _, recipe := range (etcd.Target{}).Recipes() {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel()
			testLockTokensAndFencing(t, recipe)
		})
	}
}

func testLockTokensAndFencing(t *testing.T, recipe string) {
	cl, c := startTarget(t, etcd.Target{}, 3, recipe)
	ctx := context.Background()

	leader, err := cl.Leader(ctx)
	if err != nil || !slices.ContainsFunc(cl.Nodes, func(n targets.Node) bool { return n.Name == leader }) {
		t.Fatalf("leader %q, %v", leader, err)
	}

	start := time.Now()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The lease runs 2 s from a moment inside the Acquire (the grant's
	// request, or a keepalive's answer since): never more than the TTL,
	// and no less than the TTL less the time the Acquire took, however
	// long a loaded machine made it.
	left := a.Remaining()
	if took := time.Since(start); left > 2*time.Second || left < 2*time.Second-took {
		t.Errorf("fresh lease has %s left %s after the Acquire began, want 2s less that at most", left, took)
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
// on: the basis of every pause scenario. With either recipe.
func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	for _, recipe := range (etcd.Target{}).Recipes() {
		t.Run(recipe, func(t *testing.T) {
			t.Parallel()
			testLeaseExpiresWhenHolderStops(t, recipe)
		})
	}
}

func testLeaseExpiresWhenHolderStops(t *testing.T, recipe string) {
	cl, c := startTarget(t, etcd.Target{}, 1, recipe)
	ctx := context.Background()
	other, err := etcd.Target{}.Dial(ctx, cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Closing the client stops its keepalives, as in a frozen process.
	// Not before the lease can have expired (a TTL less the keepalive
	// interval, TTL/3), and within 5 TTLs: the lease's expiry, etcd's
	// check for it (every 500 ms), its revocation through Raft and the
	// other client's Acquire, on a machine that may be loaded; a lease
	// that never expires blocks the Acquire for good.
	targettest.PassesOn(t, c, other, time.Second, 10*time.Second)
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

// --version and --recipe take the table's names and nothing else, and a
// version sets the image and the version test.json records.
func TestVersionAndRecipeNames(t *testing.T) {
	versions := []struct {
		name, image, version string
		ok                   bool
	}{
		{"", "etcd", "3.6.16", true},
		{"3.6.16", "etcd", "3.6.16", true},
		{"3.4.3", "etcd@3.4.3", "3.4.3", true},
		{"debian", "etcd@debian", "debian 3.4.23", true},
		{"3.3.0", "", "", false},
		{"v3.6.16", "", "", false},
	}
	for _, c := range versions {
		got, err := targets.WithVersion(etcd.Target{}, c.name)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, targets.ErrBadConfig)) {
			t.Errorf("version %q: %v", c.name, err)
			continue
		}
		if err != nil {
			continue
		}
		if got.Image() != c.image || got.(etcd.Target).Version() != c.version {
			t.Errorf("version %q: image %s, version %s; want %s, %s", c.name, got.Image(), got.(etcd.Target).Version(), c.image, c.version)
		}
	}
	for _, c := range []struct {
		recipe string
		ok     bool
	}{{"", true}, {etcd.RecipeMutex, true}, {etcd.RecipeLockRPC, true}, {"paxos", false}, {"Mutex", false}} {
		err := etcd.Target{}.Validate(targets.ClientConfig{TTL: time.Second, Recipe: c.recipe})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, targets.ErrBadConfig)) {
			t.Errorf("recipe %q: %v", c.recipe, err)
		}
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
