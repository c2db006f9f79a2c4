package nemesis_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources/postgres"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/targets"
)

// retransmitted is how many TCP segments a node's network namespace has
// sent again (RetransSegs of /proc/net/snmp, read by its network helper).
func retransmitted(t *testing.T, cl *harness.Cluster, node string) int {
	t.Helper()
	out, err := cl.NetExec(context.Background(), node, "cat", "/proc/net/snmp")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "Tcp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "RetransSegs" && i < len(f) {
				v, _ := strconv.Atoi(f[i])
				return v
			}
		}
	}
	t.Fatalf("no RetransSegs in %s's /proc/net/snmp", node)
	return 0
}

// TestNetemModesOnRealContainers: each of netem's packet modes takes effect
// on a real etcd server and on a lock holder, counted; the corrupted
// packets make TCP send again; the rate limit slows a read to the link's
// speed; and once healed the cluster serves at full speed.
func TestNetemModesOnRealContainers(t *testing.T) {
	harnesstest.RequireDocker(t)
	// Not parallel: the package's parallel tests already run two
	// clusters, beside other packages' on a 2-core CI machine.
	cl := workerCluster(t, harness.ClusterConfig{Target: etcd.Target{}, Nodes: 3, Workers: 1, NetHelpers: true})
	ctx := context.Background()
	parse := func(spec string) nemesis.Fault {
		f, err := nemesis.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return f[0]
	}
	count := func(inj *nemesis.Injection, field func(*nemesis.NetemRecord) *int64) int64 {
		n := field(inj.Record.(*nemesis.NetemRecord))
		if n == nil {
			t.Fatalf("not counted: %+v", inj.Record)
		}
		return *n
	}

	packets := func(r *nemesis.NetemRecord) *int64 { return r.Packets }
	duplicated := func(r *nemesis.NetemRecord) *int64 { return r.Duplicated }
	for _, c := range []struct {
		mode  string
		count func(*nemesis.NetemRecord) *int64
	}{
		{"duplicate", duplicated},
		{"reorder", func(r *nemesis.NetemRecord) *int64 { return r.Reordered }},
		{"corrupt", func(r *nemesis.NetemRecord) *int64 { return r.Corrupted }},
	} {
		t.Run("netem:"+c.mode, func(t *testing.T) {
			f := parse("netem:" + c.mode)
			inj := inject(t, cl, f)
			node := inj.Nodes[0]
			before := retransmitted(t, cl, node)
			// Data from the node meanwhile, besides raft's heartbeats:
			// reads of the cluster's status, answered by the node for
			// 2 s. A corrupted data segment is sent again; a corrupted
			// pure ACK is not, so heartbeats alone may show no
			// retransmission.
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
				_, _, _ = memberStatus(t, cl, node)
			}
			after := retransmitted(t, cl, node)
			recover(t, inj)
			t.Logf("healed: %+v; TCP retransmissions from %s: %d then %d", inj.Record, node, before, after)
			if n := count(inj, c.count); n == 0 || count(inj, packets) < 10 {
				t.Errorf("%s: %+v", c.mode, inj.Record)
			}
			if c.mode == "corrupt" && after <= before {
				t.Errorf("corrupted packets but no TCP retransmission from %s (%d then %d)", node, before, after)
			}
			healthy(t, cl)
		})
	}

	t.Run("netem:rate", func(t *testing.T) {
		// A 64 KiB value, written before the fault (replicating it
		// through a 16 KiB/s leader would outlast etcd's request
		// timeout), read from the degraded server itself (a
		// serializable read) comes at 16 KiB/s: about 4 s.
		var eps []string
		for _, n := range cl.Servers() {
			eps = append(eps, cl.Addr(n)+":2379")
		}
		w, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = w.Put(pctx, "big", strings.Repeat("x", 64<<10))
		pcancel()
		if err != nil {
			t.Fatal(err)
		}
		inj := inject(t, cl, parse("netem:rate"))
		node := inj.Nodes[0]
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{cl.Addr(node) + ":2379"}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		get := func() time.Duration {
			gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := c.Get(gctx, "big", clientv3.WithSerializable()); err != nil {
				t.Fatal(err)
			}
			return time.Since(start)
		}
		slow := get()
		recover(t, inj)
		fast := get()
		t.Logf("64 KiB read: %s at 16 KiB/s, %s after", slow, fast)
		// Both bounds are the link's, not the machine's: 64 KiB at 16
		// KiB/s take 4 s, so the limited read cannot be under 3 s (a
		// loaded machine only slows it), and a read under 2 s cannot
		// have crossed a link still limited (a loaded machine's read of
		// 64 KiB on a free one takes well under that; on an idle one,
		// milliseconds).
		if slow < 3*time.Second || fast > 2*time.Second {
			t.Errorf("a 64 KiB read took %s on a 16 KiB/s link and %s after the heal", slow, fast)
		}
		if out, _ := cl.NetExec(ctx, node, "iptables", "-w", "-S", "OUTPUT"); strings.Contains(out, "NFQUEUE") {
			t.Errorf("the queue rule that paced %s is left: %s", node, out)
		}
		healthy(t, cl)
	})

	t.Run("netem:duplicate:client", func(t *testing.T) {
		stop := busy(ctx, cl, 0)
		inj := inject(t, cl, parse("netem:duplicate:client"))
		time.Sleep(time.Second)
		recover(t, inj)
		stop()
		if !inj.Hit() || count(inj, duplicated) == 0 || inj.Nodes[0] != "w1" {
			t.Errorf("the holder's packets: %+v on %v", inj.Record, inj.Nodes)
		}
		if err := cl.RunOne(ctx, 0, 10*time.Millisecond); err != nil {
			t.Errorf("the client after the heal: %v", err)
		}
	})
}

// TestHolderCutOffFromResource: partition-client:replies:resource cuts the
// holder off from PostgreSQL's answers alone, inside its critical section:
// the rules drop packets, the lock service still answers it, and once
// healed it writes again.
func TestHolderCutOffFromResource(t *testing.T) {
	harnesstest.RequireDocker(t)
	// Not parallel: the package's parallel tests already run two
	// clusters, beside other packages' on a 2-core CI machine.
	cl := workerCluster(t, harness.ClusterConfig{Target: etcd.Target{}, Nodes: 1, Workers: 1, NetHelpers: true,
		Resources: []harness.ResourceUse{{Resource: postgres.Resource{}, Fencing: targets.FencingToken}}})
	ctx := context.Background()
	fs, err := nemesis.Parse("partition-client:replies:resource")
	if err != nil {
		t.Fatal(err)
	}
	stop := busy(ctx, cl, 0)
	inj := inject(t, cl, fs[0])
	// The lock service still answers the holder.
	if _, _, err := memberStatus(t, cl, "n1"); err != nil {
		t.Errorf("etcd from the test: %v", err)
	}
	if out, err := cl.NetExec(ctx, "w1", "sh", "-c", "iptables -w -S INPUT"); err != nil || !strings.Contains(out, cl.Addr("pg")) || strings.Contains(out, cl.Addr("n1")+"/") {
		t.Errorf("the holder's INPUT rules name the resource, not the server: %q %v", out, err)
	}
	time.Sleep(time.Second)
	recover(t, inj)
	stop()
	rec, ok := inj.Record.(*nemesis.PartitionClientRecord)
	if !ok {
		t.Fatalf("partition-client's record is a %T", inj.Record)
	}
	t.Logf("healed: %+v", rec)
	if !inj.Hit() || rec.Dropped == nil || *rec.Dropped == 0 {
		t.Errorf("the cut: %+v", rec)
	}
	if err := cl.RunOne(ctx, 0, 10*time.Millisecond); err != nil {
		t.Errorf("the client after the heal: %v", err)
	}
}
