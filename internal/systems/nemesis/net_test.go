package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/platform/netdelay"
)

// netEnv is fakeEnv counting the calls that change a node's network: what
// the harness runs from the node's network helper.
type netEnv struct {
	*fakeEnv
	mu    sync.Mutex
	calls []string
}

func (e *netEnv) note(call string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, call)
}

func (e *netEnv) NetExec(ctx context.Context, node string, cmd ...string) (string, error) {
	e.note("NetExec " + node)
	return e.fakeEnv.NetExec(ctx, node, cmd...)
}

func (e *netEnv) Shape(ctx context.Context, node string, p netdelay.Policy) error {
	e.note("Shape " + node)
	return e.fakeEnv.Shape(ctx, node, p)
}

func (e *netEnv) Unshape(ctx context.Context, node string) (netdelay.Counts, error) {
	e.note("Unshape " + node)
	return e.fakeEnv.Unshape(ctx, node)
}

// A fault of the table is marked Net exactly when its injection or its
// recovery changes a node's network (NetExec, Shape): for every fault and
// scope, injected into a run of three servers, a resource container and a
// holder, and recovered. A Net fault is a NetFault too (the harness warms
// the helpers of the nodes it names). So NeedsNet, by which the harness
// ensures the helpers' image, misses no fault that needs it, and asks for
// it for none that does not.
func TestNetMarksMatchInjection(t *testing.T) {
	marked := 0
	for _, f := range allFaults(t) {
		env := &netEnv{fakeEnv: &fakeEnv{holders: make(chan Holder, 1)}}
		env.holders <- env.fakeEnv.holder("w1", 0, 7)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		inj, err := f.Inject(ctx, env, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Errorf("%s: inject: %v", f.Name(), err)
		}
		if inj != nil && inj.Recover != nil {
			if err := inj.Recover(ctx); err != nil {
				t.Errorf("%s: recover: %v", f.Name(), err)
			}
		}
		cancel()
		net := NeedsNet([]Fault{f})
		if touched := len(env.calls) > 0; touched != net {
			t.Errorf("%s: marked Net %v, but its injection and recovery made the network calls %q", f.Name(), net, env.calls)
		}
		if _, warmed := f.(NetFault); warmed != net {
			t.Errorf("%s: marked Net %v, a NetFault %v", f.Name(), net, warmed)
		}
		if net {
			marked++
		}
	}
	if marked == 0 {
		t.Fatalf("no fault of the table is marked Net")
	}
	if NeedsNet(nil) || NeedsNet([]Fault{PauseHolder{}, Kill{Scope: ScopeOne}}) || !NeedsNet([]Fault{PauseHolder{}, Partition{Scope: PartHalves}}) {
		t.Errorf("NeedsNet does not say whether any of the faults is Net")
	}
}
