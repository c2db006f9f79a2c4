package kubernetes_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/kubernetes"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

const ttl = 2 * time.Second

// startKubernetes starts a real control plane in Docker (three etcd nodes,
// apis apiservers; no workers) and returns the harness's client of it.
func startKubernetes(t *testing.T, apis int) (*harness.Cluster, targets.Client) {
	t.Helper()
	suite.All(t, "the Kubernetes image (kube-apiserver compiles for 20 minutes of CPU)")
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: kubernetes.Target{}, Nodes: apis,
		Client:       targets.ClientConfig{TTL: ttl, RPCTimeout: 2 * time.Second},
		ReadyTimeout: 2 * time.Minute,
	})
	return cl, cl.Host().Lock
}

func dial(t *testing.T, cl *harness.Cluster, recipe string) targets.Client {
	t.Helper()
	cfg := cl.ClientConfig()
	cfg.Recipe = recipe
	c, err := kubernetes.Target{}.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The control plane: etcd nodes of tier etcd, apiservers that clients
// reach, TLS that only the run's CA vouches for, and no request without the
// run's token. Then the lock contract (targettest) and the election's.
func TestLockTokensAndFencing(t *testing.T) {
	cl, c := startKubernetes(t, 2)
	ctx := context.Background()
	var tiers []string
	for _, n := range cl.Nodes {
		tiers = append(tiers, n.Name+":"+n.Tier)
	}
	if want := []string{"n1:etcd", "n2:etcd", "n3:etcd", "a1:apiserver", "a2:apiserver"}; !slices.Equal(tiers, want) {
		t.Errorf("nodes %v, want %v", tiers, want)
	}
	cfg := cl.ClientConfig()
	if len(cfg.Endpoints) != 2 || !strings.HasSuffix(cfg.Endpoints[0], ":6443") {
		t.Errorf("client endpoints %v: want the two apiservers", cfg.Endpoints)
	}
	leader, err := cl.Leader(ctx)
	if err != nil || !strings.HasPrefix(leader, "n") {
		t.Errorf("leader %q, %v: want an etcd node", leader, err)
	}
	// Without the token: 401. With it, but trusting the system's CAs
	// only: the certificate is refused.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(cfg.Credentials.CA))
	anon := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: kubernetes.ServerName}}}
	resp, err := anon.Get("https://" + cfg.Endpoints[0] + "/apis/coordination.k8s.io/v1/namespaces/default/leases")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without the token: %s, want 401", resp.Status)
	}
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get("https://" + cfg.Endpoints[0] + "/readyz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client that does not trust the run's CA: %v, want a certificate error", err)
	}

	// The lock contract with each recipe, one after the other on the same
	// Lease (its tokens go on growing).
	for _, recipe := range (kubernetes.Target{}).Recipes() {
		t.Run(recipe, func(t *testing.T) {
			c := dial(t, cl, recipe)
			targettest.Emptied(t, c)
			start := time.Now()
			a, err := c.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// leaderelection leads for its renew deadline after a renewal;
			// the lease-lock holder counts a TTL from its own. The
			// renewal was sent inside the Acquire: never more than that
			// left, and no less than it less the time the Acquire took,
			// however long a loaded machine made it (a millisecond
			// spare: the Lease's times are to the microsecond).
			_, most, _ := kubernetes.Timings(ttl)
			if recipe == kubernetes.RecipeLeaseLock {
				most = ttl
			}
			left := a.Remaining()
			if took := time.Since(start); left > most || left < most-took-time.Millisecond {
				t.Errorf("fresh lease has %s left %s after the Acquire began, want %s less that at most", left, took, most)
			}
			targettest.Exclusive(t, c, 3*ttl)
			b, revs := targettest.Fences(t, c, a)
			if !revs.AllSet() {
				t.Errorf("revisions %+v: want a resourceVersion for every write", revs)
			}
			if err := b.Release(ctx); err != nil {
				t.Error(err)
			}
			targettest.Emptied(t, c)
		})
	}
	targettest.Elects(t, c, dial(t, cl, ""), 3*ttl)
}

// A holder that stops (its process frozen or dead: no renewal, no release)
// keeps the Lease for its duration; then another candidate takes it, with a
// higher term, and the stopped one's estimate has run out.
func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	cl, _ := startKubernetes(t, 1)
	for _, recipe := range (kubernetes.Target{}).Recipes() {
		t.Run(recipe, func(t *testing.T) {
			// Within 5 TTLs: the Lease's duration, the taker's retries
			// and its update through a kube-apiserver on a machine that
			// may be loaded; a Lease that never expires blocks for good.
			a, b, _ := targettest.PassesOn(t, dial(t, cl, recipe), dial(t, cl, recipe), ttl/2, 5*ttl)
			if left := a.Remaining(); left != 0 {
				t.Errorf("the stopped holder believes it has %s left", left)
			}
			if err := b.Release(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// The term is leaseTransitions, kept in etcd: it grows across the kill of
// an apiserver (another than the client's) and of the etcd leader.
func TestTokenGrowsAcrossFailures(t *testing.T) {
	cl, _ := startKubernetes(t, 2)
	ctx := context.Background()
	// A client of a1 alone: the faults below kill a2 and the etcd leader.
	cfg := cl.ClientConfig()
	for _, n := range cl.Nodes {
		if n.Name == "a1" {
			cfg.Endpoints = []string{n.Addr}
		}
	}
	c, err := kubernetes.Target{}.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acquire := func() targets.Lease {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			l, err := c.Acquire(actx)
			cancel()
			if err == nil {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatalf("no lock within a minute: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	last := int64(0)
	for _, victim := range []string{"a2", "leader"} {
		l := acquire()
		if l.Token() <= last {
			t.Errorf("token %d after %d", l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Error(err)
		}
		node := victim
		if victim == "leader" {
			var err error
			if node, err = cl.Leader(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.Kill(ctx, node); err != nil {
			t.Fatal(err)
		}
		l2 := acquire()
		if l2.Token() <= last {
			t.Errorf("after the kill of %s (%s): token %d after %d", node, victim, l2.Token(), last)
		}
		t.Logf("killed %s (%s): token %d -> %d", node, victim, last, l2.Token())
		last = l2.Token()
		l2.Release(ctx)
		if err := cl.Restart(ctx, node); err != nil {
			t.Fatal(err)
		}
		hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := cl.Healthy(hctx)
		cancel()
		if err != nil {
			t.Fatalf("%s did not come back: %v", node, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		ttl time.Duration
		ok  bool
	}{{time.Second, true}, {2 * time.Second, true}, {15 * time.Second, true}, {1500 * time.Millisecond, false}, {500 * time.Millisecond, false}} {
		err := kubernetes.Target{}.Validate(targets.ClientConfig{TTL: c.ttl})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, targets.ErrBadConfig)) {
			t.Errorf("ttl %s: %v", c.ttl, err)
		}
	}
	for _, n := range []int{0, 6} {
		if _, err := (kubernetes.Target{}).Nodes(n); !errors.Is(err, targets.ErrBadConfig) {
			t.Errorf("%d apiservers: %v", n, err)
		}
	}
	if got := kubernetes.LeaseName("/fencecheck/AB_12/lock-2"); got != "fencecheck.ab-12.lock-2" {
		t.Errorf("LeaseName = %q", got)
	}
}
