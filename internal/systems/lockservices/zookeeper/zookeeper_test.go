package zookeeper_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/zookeeper"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

const ttl = 2 * time.Second

// startZooKeeper starts a real ensemble in Docker (no workers) and returns
// the harness's client of it.
func startZooKeeper(t *testing.T, nodes int) (*harness.Cluster, targets.Client) {
	t.Helper()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: zookeeper.Target{}, Nodes: nodes,
		Client: targets.ClientConfig{TTL: ttl, RPCTimeout: 2 * time.Second},
	})
	return cl, cl.Host().Lock
}

func dial(t *testing.T, cl *harness.Cluster) targets.Client {
	t.Helper()
	c, err := zookeeper.Target{}.Dial(context.Background(), cl.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func fourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	nc.Write([]byte(cmd))
	b, _ := io.ReadAll(nc)
	return string(b)
}

func TestLockTokensAndFencing(t *testing.T) {
	cl, c := startZooKeeper(t, 3)
	ctx := context.Background()

	leader, err := cl.Leader(ctx)
	if err != nil || !slices.ContainsFunc(cl.Nodes, func(n targets.Node) bool { return n.Name == leader }) {
		t.Fatalf("leader %q, %v", leader, err)
	}
	if srvr := fourLetter(t, cl.Nodes[0].Addr, "srvr"); !strings.Contains(srvr, "Zookeeper version: "+(zookeeper.Target{}).Version()) {
		t.Errorf("srvr says %q, want version %s", srvr, zookeeper.Target{}.Version())
	}
	start := time.Now()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The lease runs a TTL from the last time the server was heard on
	// its session, which the Acquire's own requests were: never more than
	// the TTL, and no less than the TTL less the time since the Acquire
	// began, however long a loaded machine made it.
	left := a.Remaining()
	if took := time.Since(start); left > ttl || left < ttl-took {
		t.Errorf("fresh lease has %s left %s after the Acquire began, want %s less that at most", left, took, ttl)
	}
	targettest.Exclusive(t, c, 500*time.Millisecond)
	b, revs := targettest.Fences(t, c, a)
	if !revs.AllSet() {
		t.Errorf("revisions %+v: want a zxid for every write", revs)
	}
	b.Release(ctx)
	targettest.Emptied(t, c)
}

// A holder that stops (its session neither pinged nor closed, as in a
// crash) loses the lock once the session expires: about the TTL, at most
// MaxLease.
func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	cl, c := startZooKeeper(t, 1)
	// Closing the client stops the lease's session without closing it.
	a, _, _ := targettest.PassesOn(t, c, dial(t, cl), ttl/2, 3*(zookeeper.Target{}).MaxLease(cl.ClientConfig()))
	if a.Remaining() != 0 {
		t.Errorf("the stopped holder believes it has %s left", a.Remaining())
	}
}

// The czxid token grows across a leader's death: the new leader's epoch
// (the zxid's high 32 bits) is higher.
func TestTokenGrowsAcrossLeaderKill(t *testing.T) {
	cl, c := startZooKeeper(t, 3)
	ctx := context.Background()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	leader, err := cl.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(ctx, leader); err != nil {
		t.Fatal(err)
	}
	// A new leader among the two others, then the old one back.
	deadline := time.Now().Add(time.Minute)
	var b targets.Lease
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		b, err = c.Acquire(actx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lock within a minute of the leader's kill: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	newLeader, _ := cl.Leader(ctx)
	if err := b.Release(ctx); err != nil {
		t.Error(err)
	}
	if err := cl.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cl.Healthy(hctx); err != nil {
		t.Fatalf("the killed leader did not come back: %v", err)
	}
	epoch := func(z int64) int64 { return z >> 32 }
	t.Logf("leader %s killed, %s leads; token %#x (epoch %d) -> %#x (epoch %d)",
		leader, newLeader, a.Token(), epoch(a.Token()), b.Token(), epoch(b.Token()))
	if b.Token() <= a.Token() {
		t.Errorf("token %#x after %#x: not increasing", b.Token(), a.Token())
	}
	if epoch(b.Token()) <= epoch(a.Token()) {
		t.Errorf("epoch %d after %d: the new leader's epoch did not rise", epoch(b.Token()), epoch(a.Token()))
	}
	if newLeader == leader {
		t.Errorf("%s still leads after its kill", leader)
	}
	// The restarted node kept its data: it serves the lock's history.
	if list, err := targettest.LockStore(t, c).Read(ctx); err != nil || list == nil {
		t.Errorf("read after restart: %v %v", list, err)
	}
}

// Two campaigners elect one leader, and each leads once the other
// resigns, with growing terms (targettest.Elects); a leader whose session
// ends (its client stops, as in a crash) is followed by the next
// campaigner once the session times out, with a higher term still.
func TestCampaign(t *testing.T) {
	cl, c := startZooKeeper(t, 3)
	ctx := context.Background()
	targettest.Elects(t, dial(t, cl), dial(t, cl), 500*time.Millisecond)

	other := dial(t, cl)
	first, err := c.(targets.Elector).Campaign(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	start := time.Now()
	second, err := other.(targets.Elector).Campaign(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("terms %#x then %#x; the second led %s after the first's client stopped",
		first.Token(), second.Token(), time.Since(start).Round(time.Millisecond))
	if second.Token() <= first.Token() {
		t.Errorf("term %d after %d", second.Token(), first.Token())
	}
	if first.Remaining() != 0 {
		t.Errorf("the stopped leader believes it has %s left", first.Remaining())
	}
	second.Release(ctx)
}

// The registers: a synced read sees the last write; CAS compares.
func TestRegisters(t *testing.T) {
	_, c := startZooKeeper(t, 1)
	ctx := context.Background()
	kv := c.(targets.KV)
	if _, found, err := kv.Get(ctx, "k", zookeeper.ReadSync); err != nil || found {
		t.Fatalf("absent register: found %v, %v", found, err)
	}
	if err := kv.Put(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	for _, mode := range (zookeeper.Target{}).ReadModes() {
		if v, found, err := kv.Get(ctx, "k", mode); err != nil || !found || v != 3 {
			t.Errorf("%s read: %d %v %v", mode, v, found, err)
		}
	}
	if ok, err := kv.CAS(ctx, "k", 2, 4); ok || err != nil {
		t.Errorf("cas 2->4 on 3: %v %v", ok, err)
	}
	if ok, err := kv.CAS(ctx, "k", 3, 4); !ok || err != nil {
		t.Errorf("cas 3->4: %v %v", ok, err)
	}
	if v, _, _ := kv.Get(ctx, "k", zookeeper.ReadSync); v != 4 {
		t.Errorf("after cas: %d", v)
	}
}

func TestValidate(t *testing.T) {
	for ttl, ok := range map[time.Duration]bool{
		2 * time.Second: true, 20 * time.Second: true, 2500 * time.Millisecond: true,
		time.Second: false, 21 * time.Second: false, 0: false, 2*time.Second + time.Microsecond: false,
	} {
		err := zookeeper.Target{}.Validate(targets.ClientConfig{TTL: ttl})
		if (err == nil) != ok || (err != nil && !errors.Is(err, targets.ErrBadConfig)) {
			t.Errorf("ttl %s: %v", ttl, err)
		}
		if err != nil && !strings.Contains(err.Error(), "between 2 and 20 ticks") && ttl%time.Millisecond == 0 {
			t.Errorf("ttl %s: %v does not name the bound", ttl, err)
		}
	}
	for _, n := range []int{0, 8} {
		if _, err := (zookeeper.Target{}).Nodes(n); !errors.Is(err, targets.ErrBadConfig) {
			t.Errorf("%d nodes: %v", n, err)
		}
	}
	specs, err := zookeeper.Target{}.Nodes(3)
	if err != nil || len(specs) != 3 {
		t.Fatal(specs, err)
	}
	env := strings.Join(specs[1].Env, "\n")
	for _, want := range []string{"ZK_MYID=2", "server.3=n3:2888:3888", "tickTime=1000", "4lw.commands.whitelist=ruok,srvr,stat,mntr", "admin.enableServer=false"} {
		if !strings.Contains(env, want) {
			t.Errorf("n2's environment lacks %q", want)
		}
	}
	if got := (zookeeper.Target{}).MaxLease(targets.ClientConfig{TTL: 3 * time.Second}); got != 5*time.Second {
		t.Errorf("MaxLease %s, want TTL + 2 ticks", got)
	}
}
