package proxy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/systems/resources/proxy"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/resourcetest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
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
// writes with its older token. The verdict is asserted only once the
// history shows that this is what happened (harnesstest.Scenario).
func TestProxyRestartUnderAStaleHolder(t *testing.T) {
	for _, c := range []struct {
		r     proxy.Resource
		valid checkers.Validity
	}{{proxy.Resource{}, checkers.Valid}, {proxy.Resource{Volatile: true}, checkers.Invalid}} {
		t.Run(c.r.Name(), func(t *testing.T) {
			t.Parallel()
			var got staleHolder
			harnesstest.Scenario(t, 3, func() (err error) {
				got, err = playStaleHolder(t, c.r)
				return err
			})
			res := got.res
			t.Logf("final list %v; %s: %d of %d lost, %d fence rejections; A: %v", got.final, res.Valid,
				res.LostUpdates.Lost, res.LostUpdates.Acknowledged, res.FenceRejections, got.aErr)
			if res.Valid != c.valid {
				t.Errorf("verdict %s, want %s; history:\n%s", res.Valid, c.valid, history.Format(got.events))
			}
			if c.valid == checkers.Valid {
				if got.aErr == nil || !strings.Contains(got.aErr.Error(), la.ReasonFenced) || res.FenceRejections != 1 {
					t.Errorf("A's stale write: %v with %d fence rejections; want it fenced by the durable proxy", got.aErr, res.FenceRejections)
				}
			} else if got.aErr != nil {
				t.Errorf("A's stale write: %v; want it accepted by the volatile proxy", got.aErr)
			}
		})
	}
}

type staleHolder struct {
	res    lockappend.Result
	final  []int64
	aErr   error
	events []history.Event
}

// playStaleHolder plays the scenario once, on a cluster of its own. It
// returns an error wrapping harness.ErrNotSetUp when the scenario did
// not take place as scripted.
func playStaleHolder(t *testing.T, r proxy.Resource) (staleHolder, error) {
	var out staleHolder
	name := r.Name()
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: redis.Target{}, Nodes: 1, Workers: 2, Workload: lockappend.Workload{},
		Resources: []harness.ResourceUse{{Resource: r, Fencing: targets.FencingToken}},
		Config: workloads.Config{Fencings: map[string]targets.Fencing{name: targets.FencingToken},
			WorkerKnobs: spec.WorkerKnobs{AcquireTimeout: 20 * time.Second, Margin: 500 * time.Millisecond}},
		Client:       targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 8 * time.Second},
		WorkerBinary: harnesstest.WorkerBinary(t),
	})
	defer cl.Close("")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := history.NewMemoryRecorder()
	if err := cl.Connect(ctx, rec); err != nil {
		t.Fatal(err)
	}
	fault := func(f, node string) {
		rec.Record(history.Nemesis, history.Info, f, history.FaultValue{Fault: node, Nodes: []string{node}})
	}
	holder := cl.ArmHolder()
	aDone := make(chan error, 1)
	go func() { aDone <- cl.RunOne(ctx, 0, 0) }()
	h := <-holder
	if err := cl.Signal(ctx, h.Node, "SIGSTOP"); err != nil {
		t.Fatal(err)
	}
	fault(history.FStart, h.Node)
	// A is frozen (Signal returns once every thread is stopped); it must
	// still have waited at its failpoint.
	if !h.Proceed() {
		cl.Signal(ctx, h.Node, "SIGCONT")
		<-aDone
		return out, fmt.Errorf("%w: A (%s) had given up waiting at its failpoint", harness.ErrNotSetUp, h.Node)
	}
	if err := cl.RunOne(ctx, 1, 0); err != nil {
		t.Fatalf("B's critical section: %v", err)
	}
	fault(history.FStart, "proxy")
	if err := cl.Kill(ctx, "proxy"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Restart(ctx, "proxy"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	fault(history.FStop, "proxy")
	fault(history.FStop, h.Node)
	if err := cl.Signal(ctx, h.Node, "SIGCONT"); err != nil {
		t.Fatal(err)
	}
	out.aErr = <-aDone
	rec.Record(harness.FinalReadProcess, history.Invoke, la.FFinalRead, nil)
	st, err := cl.Host().Resources[0].Store.Read(ctx, resources.Access{Fencing: targets.FencingNone})
	if err != nil {
		t.Fatal(err)
	}
	rec.Record(harness.FinalReadProcess, history.Ok, la.FFinalRead, la.ReadValue{Value: st.List})
	out.final, out.events = st.List, rec.Events()
	// A frozen after its lease check; B's whole critical section and the
	// proxy's restart while A is frozen; A's write only after.
	if err := history.CheckOrder(out.events,
		history.Step{Name: "A checks its lease", Process: 0, Type: history.Phase, F: la.PhaseChecked},
		history.Step{Name: "A frozen", Process: history.Nemesis, Type: history.Info, F: history.FStart},
		history.Step{Name: "B acquires", Process: 1, Type: history.Phase, F: la.PhaseAcquired},
		history.Step{Name: "B reads", Process: 1, Type: history.Phase, F: la.PhaseRead},
		history.Step{Name: "B's write acknowledged", Process: 1, Type: history.Ok, F: la.FAppend},
		history.Step{Name: "the proxy restarted", Process: history.Nemesis, Type: history.Info, F: history.FStop},
		history.Step{Name: "A writes", Process: 0, Type: history.Phase, F: la.PhaseWriteSent},
	); err != nil {
		return out, fmt.Errorf("%w: %w\n%s", harness.ErrNotSetUp, err, history.Format(out.events))
	}
	out.res = lockappend.Check(out.events, checkers.Options{Timeout: 10 * time.Second})
	return out, nil
}
