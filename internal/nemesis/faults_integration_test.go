package nemesis_test

// Every fault against a real etcd cluster and real worker containers: it
// takes effect, and once recovered the cluster serves again. One cluster
// serves all the subtests, in order; each leaves it healthy. The servers run
// twice, concurrently: from fencecheck's etcd image, and from a FROM-scratch
// image with nothing but the static etcd binary (no shell, no iptables), as
// a user's distroless image would be: every fault acts from outside the
// server's image (network helpers, the Engine, the host's /proc).

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/harness/harnesstest"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/targets/etcd"
	"github.com/fencecheck/fencecheck/internal/workloads"
	"github.com/fencecheck/fencecheck/internal/workloads/lockappend"
	"github.com/fencecheck/fencecheck/targets"

	la "github.com/fencecheck/fencecheck/internal/history/lockappend"
)

func startCluster(t *testing.T, image string) *harness.Cluster {
	t.Helper()
	return workerCluster(t, harness.ClusterConfig{Target: etcd.Target{}, TargetImage: image, Nodes: 3, Workers: 2})
}

// workerCluster starts cfg's cluster with lock-append workers (a 2 s TTL,
// a 500 ms margin) and connects to them.
func workerCluster(t *testing.T, cfg harness.ClusterConfig) *harness.Cluster {
	t.Helper()
	cfg.Workload = lockappend.Workload{}
	cfg.Config = workloads.Config{AcquireTimeout: 10 * time.Second, Margin: 500 * time.Millisecond}
	cfg.Client = targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 2 * time.Second}
	cfg.WorkerBinary = harnesstest.WorkerBinary(t)
	cl := harnesstest.Cluster(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Connect(ctx, history.NewMemoryRecorder()); err != nil {
		t.Fatal(err)
	}
	return cl
}

// memberStatus asks one member who it thinks leads (0: nobody), within a
// second.
func memberStatus(t *testing.T, cl *harness.Cluster, node string) (leader uint64, self uint64, err error) {
	t.Helper()
	return memberStatusWithin(t, cl, node, time.Second)
}

// memberStatusWithin is memberStatus within d: a new connection's
// handshakes under a 200 ms delay on every packet the member sends take
// about a second alone.
func memberStatusWithin(t *testing.T, cl *harness.Cluster, node string, d time.Duration) (leader uint64, self uint64, err error) {
	t.Helper()
	addr := cl.Addr(node) + ":2379"
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: d, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	st, err := c.Status(ctx, addr)
	if err != nil {
		return 0, 0, err
	}
	return st.Leader, st.Header.MemberId, nil
}

// eventually retries f every 100ms until it returns nil or d passes.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %v", what, d, err)
}

func healthy(t *testing.T, cl *harness.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Healthy(ctx); err != nil {
		t.Fatalf("cluster unhealthy after recovery: %v", err)
	}
	// And it serves a linearizable write and read.
	if err := cl.Host().Resources[0].Store.Reset(ctx); err != nil {
		t.Fatalf("cluster does not serve after recovery: %v", err)
	}
}

func inject(t *testing.T, cl *harness.Cluster, f nemesis.Fault) *nemesis.Injection {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inj, err := f.Inject(ctx, cl, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatalf("%s: %v", f.Name(), err)
	}
	t.Logf("%s on %v %v", f.Name(), inj.Nodes, inj.Params)
	return inj
}

func recover(t *testing.T, inj *nemesis.Injection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inj.Recover(ctx); err != nil {
		t.Fatalf("recover: %v", err)
	}
}

func TestFaultsOnRealContainers(t *testing.T) {
	harnesstest.RequireDocker(t)
	t.Run("fencecheck-image", func(t *testing.T) {
		t.Parallel()
		everyFault(t, startCluster(t, ""))
	})
	t.Run("scratch-image", func(t *testing.T) {
		t.Parallel()
		cl := startCluster(t, harnesstest.ScratchImage(t, "etcd"))
		// The servers' image has no shell and no iptables: nothing runs
		// in their containers but etcd.
		for _, cmd := range [][]string{{"sh", "-c", "true"}, {"iptables", "-S"}} {
			if out, err := cl.Exec(context.Background(), "n1", cmd...); err == nil {
				t.Fatalf("%q ran in the scratch image: %s", cmd, out)
			}
		}
		everyFault(t, cl)
	})
}

func everyFault(t *testing.T, cl *harness.Cluster) {
	ctx := context.Background()

	t.Run("network helper follows a restart", func(t *testing.T) {
		// A chain made in n1's namespace, from its helper; n1 killed and
		// restarted gets a fresh namespace, and NetExec a fresh helper in
		// it: the chain is gone and the rules work.
		start := time.Now()
		if _, err := cl.NetExec(ctx, "n1", "iptables", "-w", "-N", "fencecheck-mark"); err != nil {
			t.Fatal(err)
		}
		first := time.Since(start)
		start = time.Now()
		if out, err := cl.NetExec(ctx, "n1", "iptables", "-w", "-S"); err != nil || !strings.Contains(out, "fencecheck-mark") {
			t.Fatalf("chain not made: %v %s", err, out)
		}
		t.Logf("NetExec on n1: %s with the helper's start, %s once it runs", first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if err := cl.Kill(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.NetExec(ctx, "n1", "true"); err == nil {
			t.Errorf("NetExec on a killed node succeeded")
		}
		if err := cl.Restart(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		out, err := cl.NetExec(ctx, "n1", "iptables", "-w", "-S")
		if err != nil || strings.Contains(out, "fencecheck-mark") {
			t.Errorf("after the restart: %v %s", err, out)
		}
		healthy(t, cl)
	})

	t.Run("pause-server:leader", func(t *testing.T) {
		old, err := cl.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, oldID, _ := memberStatus(t, cl, old)
		inj := inject(t, cl, nemesis.PauseServer{Scope: nemesis.ScopeLeader})
		if inj.Nodes[0] != old {
			t.Fatalf("paused %v, leader is %s", inj.Nodes, old)
		}
		if st, _ := cl.ProcessState(ctx, old); st != "T" {
			t.Errorf("paused leader in state %q, want T", st)
		}
		// The others elect a new leader.
		eventually(t, 10*time.Second, "a new leader among the others", func() error {
			for _, n := range cl.Servers() {
				if n == old {
					continue
				}
				l, _, err := memberStatus(t, cl, n)
				if err != nil || l == 0 || l == oldID {
					return errors.New("no new leader yet")
				}
			}
			return nil
		})
		recover(t, inj)
		if st, _ := cl.ProcessState(ctx, old); st == "T" {
			t.Errorf("resumed leader still in state T")
		}
		healthy(t, cl)
	})

	t.Run("kill:one", func(t *testing.T) {
		inj := inject(t, cl, nemesis.Kill{Scope: nemesis.ScopeOne})
		node := inj.Nodes[0]
		if _, _, err := memberStatus(t, cl, node); err == nil {
			t.Errorf("killed %s still answers", node)
		}
		if st, _ := cl.ProcessState(ctx, node); st != "" {
			t.Errorf("killed %s has a process in state %q", node, st)
		}
		addr := cl.Addr(node)
		recover(t, inj)
		healthy(t, cl)
		if cl.Addr(node) != addr {
			t.Errorf("%s came back at %s, was %s", node, cl.Addr(node), addr)
		}
		// It rejoined as a member that follows the leader.
		eventually(t, 10*time.Second, node+" follows a leader", func() error {
			l, _, err := memberStatus(t, cl, node)
			if err != nil || l == 0 {
				return errors.New("no leader seen")
			}
			return nil
		})
	})

	t.Run("partition:leader", func(t *testing.T) {
		old, err := cl.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inj := inject(t, cl, nemesis.Partition{Scope: nemesis.PartLeader})
		if !strings.Contains(inj.Params["grudge"], old+" drops ") {
			t.Fatalf("grudge %q does not isolate leader %s", inj.Params["grudge"], old)
		}
		var oldID uint64
		_, oldID, _ = memberStatus(t, cl, old)
		eventually(t, 15*time.Second, "the majority elects another leader", func() error {
			for _, n := range cl.Servers() {
				if n == old {
					continue
				}
				l, _, err := memberStatus(t, cl, n)
				if err != nil || l == 0 || l == oldID {
					return errors.New("majority still without a new leader")
				}
			}
			return nil
		})
		eventually(t, 15*time.Second, "the isolated leader steps down", func() error {
			if l, _, _ := memberStatus(t, cl, old); l == oldID {
				return errors.New("still leads")
			}
			return nil
		})
		recover(t, inj)
		healthy(t, cl)
	})

	t.Run("netem:delay", func(t *testing.T) {
		latency := func(node string) time.Duration {
			best := time.Hour
			for i := 0; i < 5; i++ {
				start := time.Now()
				if _, _, err := memberStatusWithin(t, cl, node, 10*time.Second); err != nil {
					t.Fatal(err)
				}
				best = min(best, time.Since(start))
			}
			return best
		}
		inj := inject(t, cl, nemesis.Netem{Mode: nemesis.NetemDelay})
		node := inj.Nodes[0]
		during := latency(node)
		recover(t, inj)
		after := latency(node)
		t.Logf("status of %s: best of 5 %s with netem delay, %s after", node, during, after)
		if during < 140*time.Millisecond {
			t.Errorf("netem delay 200ms±50ms: status took only %s", during)
		}
		if after > 100*time.Millisecond {
			t.Errorf("after recovery status still takes %s", after)
		}
		if out, _ := cl.NetExec(ctx, node, "tc", "qdisc", "show", "dev", "eth0"); strings.Contains(out, "netem") {
			t.Errorf("qdisc left: %s", out)
		}
		healthy(t, cl)
	})

	t.Run("netem:loss", func(t *testing.T) {
		inj := inject(t, cl, nemesis.Netem{Mode: nemesis.NetemLoss})
		node := inj.Nodes[0]
		if out, _ := cl.NetExec(ctx, node, "iptables", "-w", "-S", "OUTPUT"); !strings.Contains(out, "statistic") {
			t.Errorf("no loss rule in %s: %s", node, out)
		}
		var worst time.Duration
		for i := 0; i < 20; i++ {
			start := time.Now()
			memberStatus(t, cl, node)
			worst = max(worst, time.Since(start))
		}
		recover(t, inj)
		t.Logf("slowest of 20 status requests to %s with 30%% loss: %s", node, worst)
		if worst < 150*time.Millisecond {
			t.Errorf("30%% loss never showed: slowest request %s", worst)
		}
		if out, _ := cl.NetExec(ctx, node, "iptables", "-w", "-S", "OUTPUT"); strings.Contains(out, "statistic") {
			t.Errorf("loss rule left in %s: %s", node, out)
		}
		healthy(t, cl)
	})

	t.Run("clock-skew:server", func(t *testing.T) {
		inj := inject(t, cl, nemesis.ClockSkew{Scope: nemesis.ClockServer})
		node := inj.Nodes[0]
		offset, err := time.ParseDuration(inj.Params["offset"])
		if err != nil {
			t.Fatal(err)
		}
		if skew := time.Until(serverTime(t, cl, node)); skew < offset-2*time.Second || skew > offset+2*time.Second {
			t.Errorf("%s's clock is %s ahead, want %s", node, skew.Round(time.Second), offset)
		}
		// etcd times leases on the monotonic clock: it keeps serving.
		healthy(t, cl)
		recover(t, inj)
		if skew := time.Until(serverTime(t, cl, node)); skew < -2*time.Second || skew > 2*time.Second {
			t.Errorf("after recovery %s's clock is %s off", node, skew.Round(time.Second))
		}
	})

	t.Run("pause-client", func(t *testing.T) {
		inj := inject(t, cl, nemesis.PauseClient{})
		if st, _ := cl.ProcessState(ctx, inj.Nodes[0]); st != "T" {
			t.Errorf("paused client in state %q", st)
		}
		recover(t, inj)
		if st, _ := cl.ProcessState(ctx, inj.Nodes[0]); st == "T" {
			t.Errorf("resumed client still stopped")
		}
	})

	for _, mode := range []string{nemesis.CutBoth, nemesis.CutRequests, nemesis.CutReplies, nemesis.CutReset} {
		f := nemesis.PartitionClient{Mode: mode}
		t.Run("partition-client:"+mode, func(t *testing.T) {
			// The fault waits for a holder: let a worker run critical
			// sections until it is injected.
			injected := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				var err error
				for {
					select {
					case <-injected:
						done <- err
						return
					default:
					}
					err = cl.RunOne(ctx, 0, 500*time.Millisecond)
				}
			}()
			inj := inject(t, cl, f)
			close(injected)
			node := inj.Nodes[0]
			if inj.Params["hit"] != "true" {
				t.Fatalf("%s missed its holder (params %v): the holder gave up waiting at its failpoint, so the partition says nothing about a critical section", f.Name(), inj.Params)
			}
			// A new connection fails whichever way the packets are lost
			// (a handshake needs both); with resets, at once.
			reach := func(limit string) (time.Duration, error) {
				start := time.Now()
				_, err := cl.NetExec(ctx, node, "timeout", limit, "bash", "-c", "</dev/tcp/"+cl.Addr(cl.Servers()[0])+"/2379")
				return time.Since(start), err
			}
			if took, err := reach("2"); err == nil {
				t.Errorf("%s still reaches the servers", node)
			} else if mode == nemesis.CutReset && took > time.Second {
				t.Errorf("with resets the connection failed after %s, not at once", took)
			}
			recover(t, inj)
			if n, err := strconv.Atoi(inj.Params["dropped"]); err != nil || n < 1 {
				t.Errorf("dropped %q: the rules stopped no packet", inj.Params["dropped"])
			}
			t.Logf("%s: %s packets stopped", f.Name(), inj.Params["dropped"])
			if _, err := reach("1"); err != nil {
				t.Errorf("%s does not reach the servers after recovery: %v", node, err)
			}
			if err := <-done; err != nil {
				t.Logf("the partitioned critical section: %v", err)
			}
			healthy(t, cl)
		})
	}

	t.Run("kill-holder", func(t *testing.T) {
		// Worker 0 runs critical sections (alone: each gets the lock)
		// until one is caught at its failpoint and its container killed.
		type end struct {
			err error
			at  time.Time
		}
		done := make(chan end, 1)
		go func() {
			for {
				if err := cl.RunOne(ctx, 0, 500*time.Millisecond); err != nil {
					done <- end{err, time.Now()}
					return
				}
			}
		}()
		inj := inject(t, cl, nemesis.KillHolder{})
		injected := time.Now()
		node := inj.Nodes[0]
		if node != "w1" || inj.Params["process"] != "0" || inj.Params["hit"] != "true" || inj.Params["ttl"] != "2s" {
			t.Errorf("killed %s, params %v: want w1, process 0, hit, ttl 2s", node, inj.Params)
		}
		if st, _ := cl.ProcessState(ctx, node); st != "" {
			t.Errorf("killed holder's container has a process in state %q", st)
		}
		// Its operation ended as info when its connection did (the
		// container's stop can take longer on a loaded machine).
		e := <-done
		if !strings.Contains(e.err.Error(), "info") {
			t.Errorf("the killed holder's critical section gave %v, want info", e.err)
		}
		killed := e.at
		t.Logf("the holder's operation ended %s before the kill returned", injected.Sub(killed).Round(time.Millisecond))
		// The other client gets the lock once the dead holder's lease
		// expires: not at once, and within about a TTL.
		if err := cl.RunOne(ctx, 1, 0); err != nil {
			t.Fatalf("the other client after the kill: %v", err)
		}
		waited := time.Since(killed)
		t.Logf("the other client's critical section ended %s after the kill (TTL 2s)", waited.Round(time.Millisecond))
		if waited < 500*time.Millisecond || waited > 4*time.Second {
			t.Errorf("lock passed on %s after the holder's kill, want after its lease expires (TTL 2s)", waited)
		}
		// Restarted, the worker serves again.
		recover(t, inj)
		if st, _ := cl.ProcessState(ctx, node); st == "" || st == "T" {
			t.Errorf("restarted %s in state %q", node, st)
		}
		if err := cl.RunOne(ctx, 0, 0); err != nil {
			t.Errorf("the restarted worker: %v", err)
		}
		healthy(t, cl)
	})

	t.Run("clock-skew:client", func(t *testing.T) {
		// A client whose lease clock runs 10 s ahead believes its fresh
		// 2 s lease has already expired: its careful check refuses to write.
		if err := cl.SkewClientClock(ctx, "w2", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		err := cl.RunOne(ctx, 1, 0)
		if err == nil || !strings.Contains(err.Error(), la.ReasonLeaseShort) {
			t.Errorf("with its clock 10s ahead the client's section gave %v, want %s", err, la.ReasonLeaseShort)
		}
		if err := cl.SkewClientClock(ctx, "w2", 0); err != nil {
			t.Fatal(err)
		}
		if err := cl.RunOne(ctx, 1, 0); err != nil {
			t.Errorf("with its clock restored: %v", err)
		}
	})

	t.Run("clock-rate:client", func(t *testing.T) {
		// Worker 1 runs critical sections (each logged with its own wall
		// clock's time) until told to stop; the fault takes it at its
		// failpoint and runs its clocks 4 times as fast.
		defer busy(ctx, cl, 1)()
		inj := inject(t, cl, nemesis.ClockRate{Scope: nemesis.ClockClient, Rate: 4})
		node := inj.Nodes[0]
		if node != "w2" || inj.Params["rate"] != "4" {
			t.Errorf("clock-rate on %s, params %v: want w2, rate 4", node, inj.Params)
		}
		time.Sleep(3 * time.Second)
		recover(t, inj)
		obs, err := strconv.ParseFloat(inj.Params["observed_rate"], 64)
		if err != nil || obs < 3 || obs > 5 {
			t.Errorf("observed rate %q over %s log lines, want about 4", inj.Params["observed_rate"], inj.Params["observed_lines"])
		}
		// Healed, its clock runs true.
		healed := time.Now()
		time.Sleep(2 * time.Second)
		if seen, err := cl.ObservedClock(ctx, node, healed); err != nil || seen.Rate < 0.8 || seen.Rate > 1.25 || seen.Offset.Abs() > time.Second {
			t.Errorf("after recovery %s's clock: %+v, %v", node, seen, err)
		}
	})

	t.Run("cpu-throttle:holder", func(t *testing.T) {
		// Worker 0 runs critical sections until told to stop; the fault
		// takes it at its failpoint and squeezes its container to 2 % of a
		// core. A shell loop run in the container (in its cgroup) shows
		// the squeeze, and its end.
		defer busy(ctx, cl, 0)()
		burn := func() time.Duration {
			start := time.Now()
			if out, err := cl.Exec(ctx, "w1", "sh", "-c", "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done"); err != nil {
				t.Fatalf("the loop: %v: %s", err, out)
			}
			return time.Since(start)
		}
		free := burn()
		inj := inject(t, cl, nemesis.CPUThrottle{Scope: nemesis.ScopeHolder, Percent: 2})
		if inj.Nodes[0] != "w1" || inj.Params["hit"] != "true" || inj.Params["cpus"] != "0.02" {
			t.Errorf("cpu-throttle on %v, params %v: want w1, hit, 0.02 cpus", inj.Nodes, inj.Params)
		}
		squeezed := burn()
		recover(t, inj)
		after := burn()
		t.Logf("the loop took %s free, %s at 2%%, %s after; the holder used %s of CPU (%s of a core)",
			free.Round(time.Millisecond), squeezed.Round(time.Millisecond), after.Round(time.Millisecond), inj.Params["cpu_used"], inj.Params["cpu_share"])
		if squeezed < 5*free || squeezed < 500*time.Millisecond {
			t.Errorf("at 2%% of a core the loop took %s, free %s: no squeeze", squeezed, free)
		}
		if after > 3*free+time.Second {
			t.Errorf("after recovery the loop took %s, free %s: still squeezed", after, free)
		}
		if share, err := strconv.ParseFloat(inj.Params["cpu_share"], 64); err != nil || share <= 0 || share > 0.05 {
			t.Errorf("cpu_share %q during the hold, want (0, 0.05]", inj.Params["cpu_share"])
		}
	})

	t.Run("clock-strobe:server", func(t *testing.T) {
		inj := inject(t, cl, nemesis.ClockStrobe{Scope: nemesis.ClockServer})
		node := inj.Nodes[0]
		delta, err := time.ParseDuration(inj.Params["delta"])
		if err != nil {
			t.Fatal(err)
		}
		// Sampled for 1.5 s, the server's clock is seen both true and
		// delta ahead.
		var atTrue, ahead int
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(30 * time.Millisecond) {
			switch skew := time.Until(serverTime(t, cl, node)); {
			case skew.Abs() <= 1500*time.Millisecond:
				atTrue++
			case (skew - delta).Abs() <= 1500*time.Millisecond:
				ahead++
			}
		}
		recover(t, inj)
		t.Logf("%s: %d samples true, %d ahead by %s; %s flips every %s", node, atTrue, ahead, delta, inj.Params["flips"], inj.Params["period"])
		if atTrue == 0 || ahead == 0 {
			t.Errorf("the strobed clock was seen true %d times and ahead %d times", atTrue, ahead)
		}
		if n, _ := strconv.Atoi(inj.Params["flips"]); n < 5 {
			t.Errorf("%s flips", inj.Params["flips"])
		}
		if skew := time.Until(serverTime(t, cl, node)); skew.Abs() > 2*time.Second {
			t.Errorf("after recovery %s's clock is %s off", node, skew.Round(time.Second))
		}
		healthy(t, cl)
	})

	t.Run("clock-rate:server", func(t *testing.T) {
		inj := inject(t, cl, nemesis.ClockRate{Scope: nemesis.ClockServer, Rate: 4})
		node := inj.Nodes[0]
		t0, s0 := time.Now(), serverTime(t, cl, node)
		time.Sleep(3 * time.Second)
		t1, s1 := time.Now(), serverTime(t, cl, node)
		// The Date header counts whole seconds: 12 s of server time, ±1.
		if r := s1.Sub(s0).Seconds() / t1.Sub(t0).Seconds(); r < 3.3 || r > 4.7 {
			t.Errorf("%s's clock ran at %.2f, want 4 (Date %s then %s)", node, r, s0.Format(time.TimeOnly), s1.Format(time.TimeOnly))
		}
		healthy(t, cl)
		recover(t, inj)
		if skew := time.Until(serverTime(t, cl, node)); skew < -2*time.Second || skew > 2*time.Second {
			t.Errorf("after recovery %s's clock is %s off", node, skew.Round(time.Second))
		}
		t.Logf("observed from %s's log: %s (%s lines)", node, inj.Params["observed_rate"], inj.Params["observed_lines"])
	})
}

// busy makes worker i run critical sections, one after another, until the
// function it returns is called (which waits for the last to end).
func busy(ctx context.Context, cl *harness.Cluster, i int) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				cl.RunOne(ctx, i, 100*time.Millisecond)
			}
		}
	}()
	return func() { close(stop); <-done }
}

// serverTime is an etcd server's wall clock, to the second: the Date of its
// /version answer.
func serverTime(t *testing.T, cl *harness.Cluster, node string) time.Time {
	t.Helper()
	resp, err := http.Get("http://" + cl.Addr(node) + ":2379/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	at, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		t.Fatal(err)
	}
	return at
}
