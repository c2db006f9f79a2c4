package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/harness/harnesstest"
	"github.com/fencecheck/fencecheck/internal/history"
	la "github.com/fencecheck/fencecheck/internal/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/resources/proxy"
	"github.com/fencecheck/fencecheck/internal/resources/resourcetest"
	"github.com/fencecheck/fencecheck/internal/targets/redis"
	"github.com/fencecheck/fencecheck/internal/workloads"
	"github.com/fencecheck/fencecheck/internal/workloads/lockappend"
	"github.com/fencecheck/fencecheck/targets"
)

func TestContract(t *testing.T) {
	for _, r := range []proxy.Resource{{}, {Volatile: true}} {
		t.Run(r.Name(), func(t *testing.T) {
			t.Parallel()
			_, s := resourcetest.Start(t, r)
			resourcetest.Contract(t, r, s, resourcetest.Tokens())
		})
	}
}

// A stale holder frozen across a restart of the proxy: the durable proxy
// still refuses its write, the volatile one lets it through, and the
// checkers catch that as a lost update.
//
// A acquires the lock and is frozen at its failpoint; B waits for A's
// lease to expire, reads through the proxy (raising its fence to B's
// token) and writes; the proxy is SIGKILLed and restarted; A resumes and
// writes with its older token.
func TestProxyRestartUnderAStaleHolder(t *testing.T) {
	for _, c := range []struct {
		r     proxy.Resource
		valid checkers.Validity
	}{{proxy.Resource{}, checkers.Valid}, {proxy.Resource{Volatile: true}, checkers.Invalid}} {
		t.Run(c.r.Name(), func(t *testing.T) {
			t.Parallel()
			name := c.r.Name()
			cl := harnesstest.Cluster(t, harness.ClusterConfig{
				Target: redis.Target{}, Nodes: 1, Workers: 2, Workload: lockappend.Workload{},
				Resources: []harness.ResourceUse{{Resource: c.r, Fencing: targets.FencingToken}},
				Config: workloads.Config{Fencings: map[string]targets.Fencing{name: targets.FencingToken},
					AcquireTimeout: 20 * time.Second, Margin: 500 * time.Millisecond},
				Client:       targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 8 * time.Second},
				WorkerBinary: harnesstest.WorkerBinary(t),
			})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			rec := history.NewMemoryRecorder()
			if err := cl.Connect(ctx, rec); err != nil {
				t.Fatal(err)
			}
			holder := cl.ArmHolder()
			aDone := make(chan error, 1)
			go func() { aDone <- cl.RunOne(ctx, 0, 0) }()
			var h = <-holder
			if err := cl.Signal(ctx, h.Node, "SIGSTOP"); err != nil {
				t.Fatal(err)
			}
			h.Proceed()
			if err := cl.RunOne(ctx, 1, 0); err != nil {
				t.Fatalf("B's critical section: %v", err)
			}
			if err := cl.Kill(ctx, "proxy"); err != nil {
				t.Fatal(err)
			}
			if err := cl.Restart(ctx, "proxy"); err != nil {
				t.Fatal(err)
			}
			if err := cl.Healthy(ctx); err != nil {
				t.Fatal(err)
			}
			if err := cl.Signal(ctx, h.Node, "SIGCONT"); err != nil {
				t.Fatal(err)
			}
			aErr := <-aDone
			t.Logf("A's stale write: %v", aErr)
			rec.Record(harness.FinalReadProcess, history.Invoke, la.FFinalRead, nil)
			st, err := cl.Host().Resources[0].Store.Read(ctx, resources.Access{Fencing: targets.FencingNone})
			if err != nil {
				t.Fatal(err)
			}
			rec.Record(harness.FinalReadProcess, history.Ok, la.FFinalRead, la.ReadValue{Value: st.List})
			res := checkers.CheckLockAppend(rec.Events(), checkers.Options{Timeout: 10 * time.Second})
			t.Logf("final list %v; %s: %d of %d lost, %d fence rejections", st.List, res.Valid,
				res.LostUpdates.Lost, res.LostUpdates.Acknowledged, res.FenceRejections)
			if res.Valid != c.valid {
				t.Errorf("verdict %s, want %s", res.Valid, c.valid)
			}
			if (aErr == nil) != (c.valid == checkers.Invalid) {
				t.Errorf("A's stale write: %v; want it accepted only by the volatile proxy", aErr)
			}
		})
	}
}
