package consul

// Integration tests on real Consul servers in Docker (no workers), like
// targets/etcd's. The first one may build the consul image (about 3 minutes
// on 2 cores with empty Go caches).

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

const testTTL = 10 * time.Second

func ptr[T any](v T) *T { return &v }

// startConsul starts a real Consul cluster in Docker and returns the
// harness's client of it, with TTL 10s and the given lock-delay.
func startConsul(t *testing.T, nodes int, delay *time.Duration) (*harness.Cluster, *client) {
	t.Helper()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: Target{}, Nodes: nodes,
		Client: targets.ClientConfig{TTL: testTTL, RPCTimeout: 2 * time.Second, LockDelay: delay},
	})
	return cl, cl.Host().Lock.(*client)
}

func TestLockTokensAndFencing(t *testing.T) {
	cl, c := startConsul(t, 3, ptr(time.Duration(0)))
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
	// The client counts a TTL from the session's creation, inside the
	// Acquire: never more than the TTL, and no less than the TTL less the
	// time the Acquire took, however long a loaded machine made it.
	left := a.Remaining()
	if took := time.Since(start); left > testTTL || left < testTTL-took {
		t.Errorf("fresh lease has %s left %s after the Acquire began, want the 10s TTL less that at most", left, took)
	}
	// The session is what we asked for: the TTL, no checks, lock-delay 0
	// (which the api's Session().Create would have turned into 15s).
	se, _, err := c.api.Session().Info(a.(*lease).id, nil)
	if err != nil || se == nil {
		t.Fatalf("session info: %v %v", se, err)
	}
	if se.TTL != "10s" || se.LockDelay != 0 || len(se.NodeChecks) != 0 || len(se.Checks) != 0 || se.Behavior != api.SessionBehaviorRelease {
		t.Errorf("session %+v: want TTL 10s, lock-delay 0, no checks, behavior release", se)
	}

	// Nobody else gets the lock while a holds it, and a cancelled Acquire
	// returns soon after its deadline: at the end of the blocking read
	// under way (lockWait), and the requests around it, a few seconds on a
	// loaded machine; one that ignored its deadline would wait as long as
	// a holds the lock.
	if waited := targettest.Exclusive(t, c, 1500*time.Millisecond); waited > 1500*time.Millisecond+lockWait+5*time.Second {
		t.Errorf("a refused Acquire returned %s after the call, for a 1.5s deadline", waited)
	}
	// The fenced writes are transactions and give their Raft index; a
	// plain PUT gives none.
	b, revs := targettest.Fences(t, c, a)
	if revs.Token <= b.Token() || revs.CAS == 0 || revs.Unfenced != 0 {
		t.Errorf("revisions %+v: want the token write's above the token %d, the cas write's set, none for the plain put", revs, b.Token())
	}
	// The token is the lock key's ModifyIndex, the grant's Raft index.
	if pair, _, err := c.api.KV().Get(c.lock, nil); err != nil || pair == nil || int64(pair.ModifyIndex) != b.Token() || pair.Session != b.(*lease).id {
		t.Errorf("lock key %+v (%v): want ModifyIndex %d held by b's session", pair, err, b.Token())
	}

	// Renewals keep the lease: past one TTL it is still held, and the
	// client's estimate was moved forward. Any time left shows a renewal:
	// counted from the session's creation, more than a TTL ago, none would
	// be (how much is left depends on when the last renewal's answer
	// came, which a loaded machine delays).
	time.Sleep(testTTL + time.Second)
	if left := b.Remaining(); left <= 0 {
		t.Errorf("after %s the lease has %s left: not renewed", testTTL+time.Second, left)
	}
	if _, err := c.Write(ctx, []int64{9, 4}, b, targets.FencingCAS); err != nil {
		t.Errorf("cas write of the holder after one TTL: %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Error(err)
	}
	// The released session is gone.
	if se, _, err := c.api.Session().Info(b.(*lease).id, nil); err != nil || se != nil {
		t.Errorf("released session: %+v %v, want it destroyed", se, err)
	}
	d, err := c.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire after a release: %v", err)
	}
	if d.Token() <= b.Token() {
		t.Errorf("token %d after %d", d.Token(), b.Token())
	}
	d.Release(ctx)

	targettest.Emptied(t, c)
	// Tokens stay monotonic across a reset, which deletes the lock key
	// (its LockIndex would start again at 1).
	e, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.Token() <= d.Token() {
		t.Errorf("token %d after a reset, after %d", e.Token(), d.Token())
	}
	if pair, _, _ := c.api.KV().Get(c.lock, nil); pair == nil || pair.LockIndex != 1 {
		t.Errorf("lock key after a reset: %+v, want LockIndex 1", pair)
	}
	e.Release(ctx)
}

// A session that is not renewed ends 2 TTL after its last renewal (Consul's
// grace multiplier) and the lock passes on, with lock-delay 0 at once: the
// basis of every pause scenario. The wait must stay within MaxLease.
func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	delay := time.Duration(0)
	cl, c := startConsul(t, 1, &delay)
	ctx := context.Background()
	lc, err := Target{}.Dial(ctx, cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	other := lc.(*client)
	defer other.Close()
	// Closing the client stops its renewals, as in a frozen process; the
	// session's creation was its last renewal. Consul keeps it about 2 TTL.
	maxLease := Target{}.MaxLease(cl.ClientConfig())
	a, b, waited := targettest.PassesOn(t, c, other, 2*testTTL-2*time.Second, maxLease)
	t.Logf("lock passed on %s after the holder's last renewal (TTL %s, lock-delay 0, MaxLease %s)", waited.Round(time.Millisecond), testTTL, maxLease)
	if _, err := other.Write(ctx, []int64{2}, b, targets.FencingToken); err != nil {
		t.Fatal(err)
	}
	for _, f := range []targets.Fencing{targets.FencingToken, targets.FencingCAS} {
		if _, err := other.Write(ctx, []int64{1}, a, f); !errors.Is(err, targets.ErrFenced) {
			t.Errorf("%s write of the expired holder: %v, want ErrFenced", f, err)
		}
	}
	b.Release(ctx)
}

// With a lock-delay, a lock whose holder stopped renewing passes on after
// 2 TTL, the lock-delay, and at most the api's 5s retry: within MaxLease.
func TestLeaseExpiresAfterLockDelay(t *testing.T) {
	delay := 5 * time.Second
	cl, c := startConsul(t, 1, &delay)
	ctx := context.Background()
	other, err := Target{}.Dial(ctx, cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	start := time.Now()
	b, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	maxLease := Target{}.MaxLease(cl.ClientConfig())
	t.Logf("lock passed on %s after the holder's last renewal (TTL %s, lock-delay %s, MaxLease %s)", waited.Round(time.Millisecond), testTTL, delay, maxLease)
	if waited < 2*testTTL+delay-2*time.Second || waited > maxLease {
		t.Errorf("lock passed on after %s, want at least 2 TTL + lock-delay = %s and within MaxLease %s", waited, 2*testTTL+delay, maxLease)
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}
	b.Release(ctx)
}

// With Consul's default lock-delay (15s) a session asks for it, and a lock
// that is released (not lost) passes on at once: the lock-delay only
// follows an invalidated session.
func TestDefaultLockDelayAndRelease(t *testing.T) {
	_, c := startConsul(t, 1, nil)
	ctx := context.Background()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := c.api.Session().Info(a.(*lease).id, nil)
	if err != nil || se == nil || se.LockDelay != DefaultLockDelay {
		t.Errorf("session %+v %v: want lock-delay %s", se, err, DefaultLockDelay)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// 10 s: at once, short of the 15 s lock-delay that a lost session's
	// lock would wait, and room for a loaded machine's Acquire.
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	b, err := c.Acquire(cctx)
	cancel()
	if err != nil {
		t.Fatalf("acquire right after a release: %v", err)
	}
	t.Logf("acquired %s after the release", time.Since(start).Round(time.Millisecond))
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}
	b.Release(ctx)
}

func TestKVReadModes(t *testing.T) {
	_, c := startConsul(t, 3, nil)
	ctx := context.Background()
	var kv targets.KV = c
	if modes := (Target{}).ReadModes(); !slices.Equal(modes, []string{"default", "consistent", "stale"}) {
		t.Errorf("read modes %v", modes)
	}
	if _, found, err := kv.Get(ctx, "k0", "default"); err != nil || found {
		t.Errorf("absent key: found %v, %v", found, err)
	}
	if err := kv.Put(ctx, "k0", 3); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"", "default", "consistent", "stale"} {
		// A stale read may come from a follower a moment behind.
		deadline := time.Now().Add(2 * time.Second)
		for {
			v, found, err := kv.Get(ctx, "k0", mode)
			if err == nil && found && v == 3 {
				break
			}
			if mode != "stale" || time.Now().After(deadline) {
				t.Errorf("mode %q: %d %v %v, want 3", mode, v, found, err)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if ok, err := kv.CAS(ctx, "k0", 3, 4); !ok || err != nil {
		t.Errorf("cas 3->4: %v %v", ok, err)
	}
	if ok, err := kv.CAS(ctx, "k0", 3, 5); ok || err != nil {
		t.Errorf("cas 3->5 on 4: %v %v, want false", ok, err)
	}
	if ok, err := kv.CAS(ctx, "absent", 0, 1); ok || err != nil {
		t.Errorf("cas on an absent key: %v %v, want false", ok, err)
	}
	if v, _, err := kv.Get(ctx, "k0", "consistent"); v != 4 || err != nil {
		t.Errorf("after cas: %d %v, want 4", v, err)
	}
	if _, _, err := kv.Get(ctx, "k0", "linearizable"); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("unknown read mode: %v", err)
	}
	// The registers live under the run's prefix.
	if pair, _, err := c.api.KV().Get(c.kv+"k0", nil); err != nil || pair == nil || string(pair.Value) != "4" || !strings.HasPrefix(pair.Key, "fencecheck/") {
		t.Errorf("register key %+v %v", pair, err)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		ttl   time.Duration
		delay *time.Duration
		ok    bool
	}{
		{10 * time.Second, nil, true},
		{10 * time.Second, ptr(time.Duration(0)), true},
		{15 * time.Second, ptr(1500 * time.Millisecond), true},
		{10 * time.Second, ptr(60 * time.Second), true},
		{9 * time.Second, nil, false},
		{2 * time.Second, nil, false},
		{10500 * time.Millisecond, nil, false},
		{0, nil, false},
		{25 * time.Hour, nil, false},
		{10 * time.Second, ptr(-time.Second), false},
		{10 * time.Second, ptr(61 * time.Second), false},
		{10 * time.Second, ptr(time.Microsecond), false},
	} {
		err := Target{}.Validate(targets.ClientConfig{TTL: c.ttl, LockDelay: c.delay})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, targets.ErrBadConfig)) {
			t.Errorf("ttl %s, lock-delay %v: %v", c.ttl, c.delay, err)
		}
	}
	if _, err := (Target{}).Nodes(0); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("0 nodes: %v", err)
	}
	if _, err := (Target{}).Dial(context.Background(), targets.ClientConfig{TTL: time.Second}); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("dial with TTL 1s: %v", err)
	}
}

func TestMaxLease(t *testing.T) {
	for _, c := range []struct {
		ttl   time.Duration
		delay *time.Duration
		want  time.Duration
	}{
		{10 * time.Second, ptr(time.Duration(0)), 21 * time.Second},
		{10 * time.Second, nil, 41 * time.Second}, // Consul's default lock-delay, 15s, and the api's 5s retry
		{30 * time.Second, ptr(5 * time.Second), 71 * time.Second},
		{10 * time.Second, ptr(90 * time.Second), 86 * time.Second}, // Consul caps the lock-delay at 60s
	} {
		cfg := targets.ClientConfig{TTL: c.ttl, LockDelay: c.delay}
		if got := (Target{}).MaxLease(cfg); got != c.want {
			t.Errorf("MaxLease(ttl %s, delay %v) = %s, want %s", c.ttl, c.delay, got, c.want)
		}
		if got := targets.MaxLease(Target{}, cfg); got != c.want {
			t.Errorf("targets.MaxLease does not use the target's: %s", got)
		}
	}
}

func TestNodesAndImage(t *testing.T) {
	specs, err := Target{}.Nodes(3)
	if err != nil || len(specs) != 3 {
		t.Fatalf("%v %v", specs, err)
	}
	cmd := strings.Join(specs[1].Cmd, " ")
	for _, want := range []string{"agent -server", "-bootstrap-expect 3", "-node n2", "-client 0.0.0.0", "-retry-join n1", "-retry-join n3", "disable_update_check = true"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("n2's command %q lacks %q", cmd, want)
		}
	}
	if specs[1].Port != 8500 {
		t.Errorf("port %d", specs[1].Port)
	}
	if (Target{}).Image() != images.Consul || !strings.HasPrefix((Target{}).Version(), "1.14.") {
		t.Errorf("image %s, version %s: want the consul image of a 1.14.x server", Target{}.Image(), Target{}.Version())
	}
	if !strings.HasPrefix(images.ConsulRef(), "fencecheck/consul:"+images.ConsulVersion()+"-") {
		t.Errorf("consul ref %s", images.ConsulRef())
	}
}

// The election recipe (a session lock on the leader key): one leader at a
// time, terms that grow.
func TestElection(t *testing.T) {
	cl, c := startConsul(t, 1, ptr(time.Duration(0)))
	other, err := Target{}.Dial(context.Background(), cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	targettest.Elects(t, c, other, 2*time.Second)
}

// Every version of the table but the default (which the tests above run)
// serves with the target's command line, reports the version the table
// names, and passes the lock contract with the client library of
// fencecheck's go.mod.
func TestVersions(t *testing.T) {
	suite.All(t, "every other Consul version's image (each compiles for 15 minutes of CPU)")
	for _, name := range (Target{}).Versions()[1:] {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			target := Target{}.WithVersion(name)
			cl := harnesstest.Cluster(t, harness.ClusterConfig{
				Target: target, Nodes: 1,
				Client: targets.ClientConfig{TTL: testTTL, RPCTimeout: 2 * time.Second, LockDelay: ptr(time.Duration(0))},
			})
			c := cl.Host().Lock.(*client)
			a, err := newAPI(cl.Nodes[0].Addr, 5*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			self, err := a.Agent().Self()
			if err != nil {
				t.Fatal(err)
			}
			if got := self["Config"]["Version"]; got != name {
				t.Errorf("server reports version %v, want %s", got, name)
			}
			if target.Image() != images.Consul+"@"+name {
				t.Errorf("image %s", target.Image())
			}
			ctx := context.Background()
			l, err := c.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			targettest.Exclusive(t, c, 500*time.Millisecond)
			b, revs := targettest.Fences(t, c, l)
			if revs.Token <= b.Token() || revs.CAS == 0 || revs.Unfenced != 0 {
				t.Errorf("revisions %+v: want the token write's above the token %d, the cas write's set, none for the plain put", revs, b.Token())
			}
			b.Release(ctx)
		})
	}
}

// The leader Consul's Raft configuration names is the node whose client
// address has the Raft address's host: an attached run's s2, not Consul's
// own name for it; without a match, Consul's name.
func TestServerName(t *testing.T) {
	nodes := []targets.Node{{Name: "s1", Addr: "https://10.0.0.5:8501"}, {Name: "s2", Addr: "10.0.0.6:8500"}}
	for _, c := range []struct{ node, address, want string }{
		{"consul-b", "10.0.0.6:8300", "s2"},
		{"consul-a", "10.0.0.5:8300", "s1"},
		{"n3", "10.0.0.7:8300", "n3"},
		{"n1", "not an address", "n1"},
	} {
		if got := serverName(nodes, c.node, c.address); got != c.want {
			t.Errorf("serverName(%s at %s) = %s, want %s", c.node, c.address, got, c.want)
		}
	}
}
