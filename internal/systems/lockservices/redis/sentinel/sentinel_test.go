package sentinel_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis/sentinel"
	"github.com/fencecheck/fencecheck/internal/testkit/redistest"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

func TestLockTokensAndFencing(t *testing.T) {
	_, c := redistest.Start(t, sentinel.Target{}, 2)
	redistest.LockAndFences(t, c)
}

// appendOnce runs one critical section with token fencing and returns its
// token.
func appendOnce(t *testing.T, c targettest.Client, element int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	defer l.Release(ctx)
	list, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if _, err := c.Write(ctx, append(list, element), l, targets.FencingToken); err != nil {
		t.Fatalf("write: %v", err)
	}
	return l.Token()
}

// waitLeader waits until the Sentinels name want as the primary.
func waitLeader(t *testing.T, cl *harness.Cluster, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got string
	var err error
	for time.Now().Before(deadline) {
		if got, err = cl.Leader(context.Background()); err == nil && got == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the sentinels name %q (%v) after %s, want %s", got, err, within, want)
}

// replicated waits until the replica, n2, has applied everything the
// primary, n1, wrote so far (their replication offsets), 30 s at most: a
// fixed sleep would be a guess at how soon a loaded machine runs the
// replica.
func replicated(t *testing.T, cl *harness.Cluster) {
	t.Helper()
	offset := func(node, field string) int64 {
		t.Helper()
		rdb := goredis.NewClient(&goredis.Options{Addr: net.JoinHostPort(cl.Addr(node), strconv.Itoa(redis.Port)), MaxRetries: -1})
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		info, err := rdb.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatalf("replication info of %s: %v", node, err)
		}
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s of %s: %q", field, node, l)
				}
				return n
			}
		}
		t.Fatalf("no %s in %s's replication info:\n%s", field, node, info)
		return 0
	}
	want := offset("n1", "master_repl_offset")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := offset("n2", "slave_repl_offset")
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 replicated up to offset %d, n1 wrote up to %d, after 30 s", got, want)
		}
	}
}

func killAndWaitFailover(t *testing.T, cl *harness.Cluster) time.Duration {
	t.Helper()
	start := time.Now()
	if err := cl.Kill(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, cl, "n2", 20*time.Second)
	return time.Since(start)
}

func restartHealthy(t *testing.T, cl *harness.Cluster, node string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.Restart(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := cl.Healthy(ctx); err != nil {
		t.Fatalf("not healthy after %s came back: %v", node, err)
	}
}

// The client finds the primary through the Sentinels, and follows a
// failover: after n1 dies, n2 is promoted, the same client's next grant
// comes from n2, and its token is higher (n2 had replicated everything).
// n1 comes back as n2's replica.
func TestPrimaryFoundAndFailoverFollowed(t *testing.T) {
	cl, c := redistest.Start(t, sentinel.Target{}, 2)
	// 10 s, not a failover's time: the Sentinels name n1 from the start
	// (asking them takes a while on a loaded machine), and n2 after it.
	waitLeader(t, cl, "n1", 10*time.Second)
	before := appendOnce(t, c, 1)
	replicated(t, cl) // well under a millisecond on an idle machine
	took := killAndWaitFailover(t, cl)
	t.Logf("failover to n2 in %s", took.Round(time.Millisecond))
	after := appendOnce(t, c, 2)
	if after <= before {
		t.Errorf("token %d after the failover, %d before: want higher", after, before)
	}
	if list, err := c.Read(context.Background()); err != nil || !slices.Equal(list, []int64{1, 2}) {
		t.Errorf("list %v %v after the failover, want [1 2]", list, err)
	}
	restartHealthy(t, cl, "n1")
	waitLeader(t, cl, "n2", 10*time.Second)
}

// Where tokens break: the replica stops receiving the replication stream
// (its side of the link drops n1's packets), the primary grants three more
// tokens, then dies. The Sentinels promote the replica, whose counter
// stopped three grants earlier: it grants the same tokens again, and the
// writes of those three grants are gone.
func TestFailoverToALaggingReplicaReusesTokens(t *testing.T) {
	cl, c := redistest.Start(t, sentinel.Target{}, 2)
	ctx := context.Background()
	synced := appendOnce(t, c, 1)
	replicated(t, cl)
	if _, err := cl.NetExec(ctx, "n2", "iptables", "-w", "-A", "INPUT", "-s", cl.Addr("n1"), "-j", "DROP"); err != nil {
		t.Fatal(err)
	}
	var lost []int64
	for i := int64(2); i <= 4; i++ {
		lost = append(lost, appendOnce(t, c, i))
	}
	killAndWaitFailover(t, cl)
	if _, err := cl.NetExec(ctx, "n2", "iptables", "-w", "-F", "INPUT"); err != nil {
		t.Fatal(err)
	}
	again := appendOnce(t, c, 5)
	t.Logf("tokens: %d replicated, %v granted by n1 alone, %d granted by n2 after the failover", synced, lost, again)
	if again != lost[0] {
		t.Errorf("the new primary granted token %d; want %d again (its counter stopped at %d)", again, lost[0], synced)
	}
	if list, _ := c.Read(ctx); !slices.Equal(list, []int64{1, 5}) {
		t.Errorf("list %v, want [1 5]: elements 2, 3, 4 were acknowledged by n1 alone", list)
	}
	restartHealthy(t, cl, "n1")
}

func TestNodes(t *testing.T) {
	specs, err := sentinel.Target{}.Nodes(2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"n1", "n2", "s1", "s2", "s3"}) {
		t.Errorf("nodes %v", names)
	}
	for _, n := range []int{1, 6} {
		if _, err := (sentinel.Target{}).Nodes(n); !errors.Is(err, targets.ErrBadConfig) {
			t.Errorf("%d nodes: %v", n, err)
		}
	}
}
