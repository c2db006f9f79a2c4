package nemesis

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
)

// A replay injects the recorded steps in order, each after its quiet time
// and held its recorded hold (whatever the seed would draw), aims role steps
// at the role (the holder that arrives, the leader of the moment), and stops
// after the last step although its context goes on.
func TestScheduleReplaysSteps(t *testing.T) {
	env := &fakeEnv{holders: make(chan Holder, 1)}
	env.holders <- env.holder("w2", 4, 40)
	steps := []Step{
		{Fault: "pause-holder", After: 30 * time.Millisecond, Hold: 120 * time.Millisecond, Role: RoleHolder, Nodes: []string{"w1"}},
		{Fault: "kill:leader", After: 60 * time.Millisecond, Hold: 70 * time.Millisecond, Role: RoleLeader, Nodes: []string{"n3"}},
		{Fault: "pause-server:all", After: 10 * time.Millisecond, Hold: 50 * time.Millisecond, Nodes: []string{"n1", "n2", "n3"}},
	}
	rec := history.NewMemoryRecorder()
	s := &Schedule{Faults: []Fault{PauseHolder{}}, Interval: time.Hour, Seed: 3, Steps: steps}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := rec.Since()
	done := make(chan struct{})
	go func() { s.Run(ctx, env, rec); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the replay did not end after its last step")
	}
	faults, err := history.Faults(rec.Events())
	if err != nil {
		t.Fatal(err)
	}
	if len(faults) != len(steps) {
		t.Fatalf("%d faults injected, want the %d steps: %+v", len(faults), len(steps), faults)
	}
	wantNodes := []string{"w2", "n2", "n1,n2,n3"} // the holder that came, the leader now, all
	prev := int64(began)
	for i, f := range faults {
		st := steps[i]
		if f.Fault != st.Fault {
			t.Errorf("fault %d is %s, want %s", i+1, f.Fault, st.Fault)
		}
		if got := strings.Join(slices.Sorted(slices.Values(f.Nodes)), ","); got != wantNodes[i] {
			t.Errorf("fault %d on %s, want %s", i+1, got, wantNodes[i])
		}
		if f.Hold.D() != st.Hold {
			t.Errorf("fault %d: hold %s, want the recorded %s", i+1, f.Hold, st.Hold)
		}
		// At least the recorded hold; the upper bound only catches a hold
		// not kept (a loaded machine may oversleep).
		if held := time.Duration(f.Stop - f.Start); f.Stop < 0 || held < st.Hold || held > st.Hold+5*time.Second {
			t.Errorf("fault %d held %s, want %s", i+1, held, st.Hold)
		}
		if quiet := time.Duration(f.Start - prev); quiet < st.After {
			t.Errorf("fault %d began %s after the previous stop, want at least %s", i+1, quiet, st.After)
		}
		if want := "step " + strconv.Itoa(i+1) + " of 3"; f.Replay != want {
			t.Errorf("fault %d: replay %q, want %q", i+1, f.Replay, want)
		}
		prev = f.Stop
	}
	if ctx.Err() != nil {
		t.Errorf("the replay ran until its context ended")
	}
}

// Replayed with the run's seed and fault list, faults whose nodes are drawn
// at random hit the nodes the original schedule drew, and their events say
// so by saying nothing of a difference; with another seed they say which
// nodes differ.
func TestReplayDrawsTheRecordedNodes(t *testing.T) {
	faults, err := Parse("pause-server:one,kill:minority,partition:halves,pause-client")
	if err != nil {
		t.Fatal(err)
	}
	env := &fakeEnv{}
	orig := history.NewMemoryRecorder()
	// The original run ends once its fourth fault began (each is held 1-3
	// leases: a fixed time would hold fewer faults on a loaded machine);
	// 30 s is a safety net.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	go func() {
		for ctx.Err() == nil {
			if fs, _ := history.Faults(orig.Events()); len(fs) >= 4 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	(&Schedule{Faults: faults, Interval: 5 * time.Millisecond, Seed: 42}).Run(ctx, env, orig)
	cancel()
	steps, err := Recorded(orig.Events())
	if err != nil {
		t.Fatal(err)
	}
	recorded, _ := history.Faults(orig.Events())
	if len(steps) < 3 {
		t.Fatalf("only %d faults recorded", len(steps))
	}
	for _, tc := range []struct {
		seed uint64
		same bool
	}{{42, true}, {43, false}} {
		rec := history.NewMemoryRecorder()
		(&Schedule{Faults: faults, Interval: time.Hour, Seed: tc.seed, Steps: steps}).Run(context.Background(), env, rec)
		got, err := history.Faults(rec.Events())
		if err != nil || len(got) != len(steps) {
			t.Fatalf("seed %d: %d faults replayed of %d (%v)", tc.seed, len(got), len(steps), err)
		}
		differ := 0
		for i, f := range got {
			same := sameNodes(f.Nodes, steps[i].Nodes)
			noted := strings.Contains(f.Replay, "recorded")
			if same == noted {
				t.Errorf("seed %d, step %d: nodes %v (recorded %v), replay %q", tc.seed, i+1, f.Nodes, steps[i].Nodes, f.Replay)
			}
			if g, rg := grudge(t, f), grudge(t, recorded[i]); tc.same && g != rg {
				t.Errorf("step %d: grudge %q, recorded %q", i+1, g, rg)
			}
			if !same {
				differ++
			}
		}
		if tc.same && differ > 0 {
			t.Errorf("seed %d (the run's): %d of %d steps hit other nodes than recorded", tc.seed, differ, len(got))
		}
		if !tc.same && differ == 0 {
			t.Errorf("seed %d: every step hit the recorded nodes; the test shows nothing", tc.seed)
		}
	}
}

// An empty recorded schedule injects nothing, whatever the fault list, and
// returns at once.
func TestReplayOfNoFaults(t *testing.T) {
	env := &fakeEnv{}
	rec := history.NewMemoryRecorder()
	// Its context never ends: a return at all (within the hang limit)
	// shows it waited for nothing.
	bound.Returns(t, "a replay of no steps", func() {
		(&Schedule{Faults: []Fault{PauseServer{Scope: ScopeAll}}, Interval: time.Millisecond, Seed: 1, Steps: []Step{}}).Run(context.Background(), env, rec)
	})
	if n := len(rec.Events()); n != 0 {
		t.Errorf("%d events, want none", n)
	}
}

// A replayed pause-holder:xM computes its own hold (M TTLs from finding the
// holder, its SIGSTOP included): the recorded hold is what was left after
// the original's SIGSTOP and is not replayed. A recorded health check is
// taken off the quiet time before the fault, since the replay makes its
// own.
func TestRecordedTimedPause(t *testing.T) {
	ev := func(i int, at time.Duration, f string, params map[string]string) history.Event {
		// A run recorded before typed records: params.
		raw, _ := json.Marshal(map[string]any{"fault": "pause-holder:x1.5", "nodes": []string{"w2"}, "params": params})
		return history.Event{Index: i, Time: int64(at), Process: history.Nemesis, Type: history.Info, F: f, Value: raw}
	}
	events := []history.Event{
		{Index: 0, Time: 0, Process: 0, Type: history.Invoke, F: "append"},
		ev(1, 3*time.Second, history.FStart, map[string]string{"hit": "true", "process": "1", "token": "7",
			"ttl_multiple": "1.5", "hold": "2.4s", "stop_took": "600ms"}),
		ev(2, 6*time.Second, history.FStop, nil),
		ev(3, 10*time.Second, history.FStart, map[string]string{"hold": "2s", "healthy_before": "after 250ms"}),
		ev(4, 12*time.Second, history.FStop, nil),
	}
	// The second fault shares the first's name here only to keep the
	// helper short; it is not a holder fault (no hit).
	steps, err := Recorded(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("steps %v", steps)
	}
	if steps[0].Hold != 0 || steps[0].Role != RoleHolder {
		t.Errorf("timed pause: hold %s role %q, want 0 (the fault's own) on the holder", steps[0].Hold, steps[0].Role)
	}
	if steps[1].Hold != 2*time.Second || steps[1].After != 4*time.Second-250*time.Millisecond {
		t.Errorf("second step: hold %s after %s, want 2s after 3.75s", steps[1].Hold, steps[1].After)
	}
}

// grudge is a partition's recorded grudge.
func grudge(t *testing.T, f history.Fault) string {
	var rec PartitionRecord
	if err := f.DecodeFigures(&rec); err != nil {
		t.Fatal(err)
	}
	return rec.Grudge
}

// A recorded start comes after the fault's injection (the Engine's answers
// included): the replay takes the injection's time off the quiet time, as
// it does the health check, and a holder step, timed by its failpoint,
// keeps its own.
func TestRecordedInjectionTime(t *testing.T) {
	ev := func(i int, at time.Duration, f string, v history.FaultValue) history.Event {
		raw, _ := json.Marshal(v)
		return history.Event{Index: i, Time: int64(at), Process: history.Nemesis, Type: history.Info, F: f, Value: raw}
	}
	events := []history.Event{
		{Index: 0, Time: 0, Process: 0, Type: history.Invoke, F: "append"},
		ev(1, 5*time.Second, history.FStart, history.FaultValue{Fault: "kill:leader", Nodes: []string{"n2"}, Hold: history.Ms(2 * time.Second),
			Health: history.Health{Before: history.Ms(200 * time.Millisecond)}, Took: history.Ms(3 * time.Second)}),
		ev(2, 8*time.Second, history.FStop, history.FaultValue{Fault: "kill:leader", Nodes: []string{"n2"}}),
	}
	steps, err := Recorded(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].After != 1800*time.Millisecond {
		t.Fatalf("steps %+v: want one after 1.8s (5s less 200ms of health check and 3s of injection)", steps)
	}
}
