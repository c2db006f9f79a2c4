package nemesis_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/internal/base/platform/lazydisk"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/targets"
)

// diskCluster starts a cluster of target whose servers' data directories
// are on lazy disks, with no workers.
func diskCluster(t *testing.T, target targets.Target, nodes int) *harness.Cluster {
	t.Helper()
	if err := lazydisk.Supported(); err != nil {
		t.Fatalf("the disk faults need lazy disks here: %v", err)
	}
	return harnesstest.Cluster(t, harness.ClusterConfig{
		Target: target, Nodes: nodes, Workload: lockappend.Workload{}, LazyDisks: true,
		Config: workloads.Config{WorkerKnobs: spec.WorkerKnobs{AcquireTimeout: 10 * time.Second, Margin: 500 * time.Millisecond}},
		Client: targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 2 * time.Second},
	})
}

// TestDiskFaultsOnEtcd: disk-slow holds the leader's fsyncs, so a write
// takes at least the delay, and once healed writes go on with no fsync held
// any more; a power
// loss of every server (kill:lose-unsynced) loses no acknowledged write of
// etcd, which fsyncs its log before it answers, and the cluster serves
// again.
func TestDiskFaultsOnEtcd(t *testing.T) {
	harnesstest.RequireDocker(t)
	// Not parallel: see TestNetemModesOnRealContainers.
	cl := diskCluster(t, etcd.Target{}, 3)
	ctx := context.Background()
	var eps []string
	for _, n := range cl.Servers() {
		eps = append(eps, cl.Addr(n)+":2379")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put := func(k, v string) time.Duration {
		t.Helper()
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := c.Put(pctx, k, v); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		return time.Since(start)
	}
	put("warm", "1")

	t.Run("disk-slow", func(t *testing.T) {
		f, err := nemesis.Parse("disk-slow:leader:600ms")
		if err != nil {
			t.Fatal(err)
		}
		inj := inject(t, cl, f[0])
		took := put("slow", "1")
		recover(t, inj)
		// A lower bound: a loaded machine only lengthens the write.
		if took < 600*time.Millisecond {
			t.Errorf("a write took %s while the leader's fsyncs were held 600ms", took)
		}
		if n := inj.Record.(*nemesis.DiskSlowRecord).SlowedSyncs; n == nil || *n == 0 {
			t.Errorf("no fsync was held: %+v", inj.Record)
		}
		// Healed: writes succeed, their fsyncs reach the node's disk (a
		// follower's too, if the leader changed meanwhile), and the disk
		// holds none of them (lazydisk counts each fsync it holds, as it
		// begins to wait). Counted, not timed: on a loaded machine a
		// write after the heal can take longer than a fast machine's
		// 400 ms, while an fsync still held is counted however fast the
		// machine. The first write lets any fsync that began before the
		// heal be counted before the count is taken.
		node := inj.Nodes[0]
		put("healed", "1")
		before := diskStats(t, cl, node)
		for i := range 5 {
			put(fmt.Sprintf("fast%d", i), "1")
		}
		after := diskStats(t, cl, node)
		t.Logf("%s's disk after the heal: %d fsyncs, %d held, over 5 writes", node, after.Syncs-before.Syncs, after.Slowed-before.Slowed)
		if after.Syncs <= before.Syncs {
			t.Errorf("5 writes after the heal made no fsync on %s's disk (%+v then %+v): the count shows nothing", node, before, after)
		}
		if after.Slowed != before.Slowed {
			t.Errorf("%d of %s's fsyncs held after the heal", after.Slowed-before.Slowed, node)
		}
	})

	t.Run("kill:lose-unsynced", func(t *testing.T) {
		for i := range 50 {
			put(fmt.Sprintf("k%d", i), "v")
		}
		f, err := nemesis.Parse("kill:lose-unsynced")
		if err != nil {
			t.Fatal(err)
		}
		inj := inject(t, cl, f[0])
		if len(inj.Nodes) != 3 || inj.Record.(*nemesis.KillRecord).LostFiles == nil {
			t.Errorf("a power loss of every server: %v %+v", inj.Nodes, inj.Record)
		}
		recover(t, inj)
		healthy(t, cl)
		gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		resp, err := c.Get(gctx, "k", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 50 {
			t.Errorf("%d of 50 acknowledged keys after the power loss, want all", resp.Count)
		}
	})
}

// diskStats is what node's lazy disk has counted so far.
func diskStats(t *testing.T, cl *harness.Cluster, node string) nemesis.DiskStats {
	t.Helper()
	st, err := cl.DiskStats(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLoseUnsyncedRedis: with appendfsync everysec a power loss loses the
// acknowledged INCRs of the last second or so (the counter comes back
// lower than what clients were told); with appendfsync always it loses
// none. Each server is restarted and serves after the fault.
func TestLoseUnsyncedRedis(t *testing.T) {
	harnesstest.RequireDocker(t)
	for _, c := range []struct {
		target   redis.Target
		loseAcks bool
	}{{redis.Target{Everysec: true}, true}, {redis.Target{}, false}} {
		t.Run(c.target.Name(), func(t *testing.T) {
			cl := diskCluster(t, c.target, 1)
			rdb := goredis.NewClient(&goredis.Options{Addr: cl.Addr("n1") + ":6379", MaxRetries: -1})
			defer rdb.Close()
			// INCR as fast as one client can until the kill; acked
			// counts the answers.
			var acked atomic.Int64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if rdb.Incr(context.Background(), "ctr").Err() == nil {
						acked.Add(1)
					} else {
						return // the kill
					}
				}
			}()
			time.Sleep(1500 * time.Millisecond)
			f, err := nemesis.Parse("kill:lose-unsynced")
			if err != nil {
				t.Fatal(err)
			}
			inj := inject(t, cl, f[0])
			close(stop)
			<-done
			recover(t, inj)
			healthy(t, cl)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := rdb.Get(ctx, "ctr").Int64()
			if err != nil && err != goredis.Nil {
				t.Fatal(err)
			}
			t.Logf("%d INCRs acknowledged, the counter reads %d after the power loss (%s lost %s bytes)",
				acked.Load(), got, c.target.Name(), lostBytes(inj))
			if c.loseAcks && got >= acked.Load() {
				t.Errorf("appendfsync everysec lost no acknowledged INCR (%d acked, %d kept)", acked.Load(), got)
			}
			if !c.loseAcks && got < acked.Load() {
				t.Errorf("appendfsync always lost acknowledged INCRs: %d acked, %d kept", acked.Load(), got)
			}
		})
	}
}

// lostBytes is what a kill's power loss dropped, as its record says.
func lostBytes(inj *nemesis.Injection) string {
	if b := inj.Record.(*nemesis.KillRecord).LostBytes; b != nil {
		return fmt.Sprint(*b)
	}
	return "unrecorded"
}
