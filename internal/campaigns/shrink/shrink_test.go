package shrink

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// fake is a Runner whose runs fail by a rule on the candidate (known
// failing subsets), or by a script of outcomes; it records what it ran.
type fake struct {
	fails  func(Candidate) bool
	script []bool // if not nil, the outcomes in order, whatever the candidate
	ran    []Candidate
	loss   time.Duration
	onRun  func(n int)
}

func (f *fake) Run(ctx context.Context, c Candidate) (Outcome, error) {
	f.ran = append(f.ran, c.clone())
	if f.onRun != nil {
		f.onRun(len(f.ran))
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	failed := false
	if f.script != nil {
		failed, f.script = f.script[0], f.script[1:]
	} else {
		failed = f.fails(c)
	}
	o := Outcome{Failed: failed, Verdict: "valid", Dir: fmt.Sprintf("run-%d", len(f.ran))}
	if failed {
		o.Verdict, o.FirstLoss = "invalid (lost-updates)", f.loss
	}
	return o, nil
}

// schedule is n pause-holder steps, each after 1s and held 4s.
func schedule(n int) Candidate {
	c := Candidate{Clients: 5, Nodes: 3, TimeLimit: 30 * time.Second}
	for range n {
		c.Steps = append(c.Steps, nemesis.Step{Fault: "pause-holder", After: time.Second, Hold: 4 * time.Second, Role: nemesis.RoleHolder, Nodes: []string{"w1"}})
	}
	return c
}

func has(c Candidate, of int) (nemesis.Step, bool) {
	i := slices.Index(c.Of, of)
	if i < 0 {
		return nemesis.Step{}, false
	}
	return c.Steps[i], true
}

var opts = Options{Confirm: Confirm{2, 3}, Budget: 100, MinNodes: 1}

// The blamed fault alone is tried first, then 2 clients, the time limit
// past the first loss, 1 node, and the hold halved while it still fails.
func TestSearchBlamedFirst(t *testing.T) {
	f := &fake{loss: 5 * time.Second, fails: func(c Candidate) bool {
		st, ok := has(c, 3)
		return ok && st.Hold >= 2*time.Second && c.TimeLimit >= 7*time.Second
	}}
	o := opts
	o.Blamed = []int{3}
	res := Search(context.Background(), f, schedule(6), o)
	b := res.Best
	if !slices.Equal(b.Of, []int{3}) || b.Clients != 2 || b.Nodes != 1 || b.Steps[0].Hold != 2*time.Second {
		t.Fatalf("best %v (of %v, hold %s), want step 3 alone, 2 clients, 1 node, held 2s", b, b.Of, b.Steps[0].Hold)
	}
	// 5s + max(2s, 5s/4): 7s, and no earlier than the schedule's end (1s + 4s) + 1s.
	if b.TimeLimit != 7*time.Second {
		t.Errorf("time limit %s, want 7s", b.TimeLimit)
	}
	var phases []string
	for _, tr := range res.Trials {
		phases = append(phases, tr.Phase)
	}
	want := []string{PhaseFaults, PhaseClients, PhaseTimeLimit, PhaseNodes, PhaseHold, PhaseHold, PhaseHold}
	if !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if first := f.ran[0]; !slices.Equal(first.Of, []int{3}) || first.Clients != 5 {
		t.Errorf("first run %v of %v, want the blamed step alone, all else as stored", first, first.Of)
	}
	if res.Stopped != "done" || res.Runs != len(f.ran) {
		t.Errorf("stopped %q after %d runs (runner ran %d)", res.Stopped, res.Runs, len(f.ran))
	}
	for _, tr := range res.Trials {
		failed := 0
		for _, r := range tr.Runs {
			if r.Failed {
				failed++
			}
		}
		if tr.Kept != (failed >= 2) {
			t.Errorf("trial %s: kept %v with %d of %d failed", tr.Summary, tr.Kept, failed, len(tr.Runs))
		}
	}
}

// Without a blame, chunks are dropped, the later before the earlier,
// down to the two steps that fail only together.
func TestSearchDropsChunks(t *testing.T) {
	f := &fake{fails: func(c Candidate) bool {
		_, a := has(c, 1)
		_, b := has(c, 6)
		return a && b
	}}
	res := Search(context.Background(), f, schedule(8), opts)
	if !slices.Equal(res.Best.Of, []int{1, 6}) {
		t.Fatalf("best %v, want steps 1 and 6", res.Best.Of)
	}
	// The first candidate drops the later half.
	if first := f.ran[0]; !slices.Equal(first.Of, []int{0, 1, 2, 3}) {
		t.Errorf("first candidate %v, want the later half dropped", first.Of)
	}
}

// The clients phase tries the fewest first, and keeps the first that
// fails; nodes are not cut when a fault names a node.
func TestSearchClientsAndNodes(t *testing.T) {
	f := &fake{fails: func(c Candidate) bool { return c.Clients >= 3 }}
	start := schedule(1)
	start.Steps[0].Role = ""
	res := Search(context.Background(), f, start, opts)
	var tried []int
	for _, tr := range res.Trials {
		if tr.Phase == PhaseClients {
			tried = append(tried, tr.Candidate.Clients)
		}
		if tr.Phase == PhaseNodes {
			t.Errorf("nodes tried with a fault aimed at a node by name: %s", tr.Summary)
		}
	}
	if !slices.Equal(tried, []int{2, 3}) || res.Best.Clients != 3 {
		t.Errorf("clients tried %v, best %d; want 2 then 3, best 3", tried, res.Best.Clients)
	}
}

// A candidate is kept on its K-th failure, rejected as soon as K can no
// longer be reached, and its runs stop there.
func TestConfirmRule(t *testing.T) {
	for _, tc := range []struct {
		script []bool
		kept   bool
		runs   int
	}{
		{[]bool{true, true}, true, 2},
		{[]bool{true, false, true}, true, 3},
		{[]bool{false, true, true}, true, 3},
		{[]bool{false, false}, false, 2},
		{[]bool{true, false, false}, false, 3},
	} {
		f := &fake{script: slices.Clone(tc.script)}
		start := schedule(1)
		start.Steps[0].Hold = 0 // nothing after the clients phase
		start.Clients = 3
		res := Search(context.Background(), f, start, Options{Confirm: Confirm{2, 3}, Budget: 10})
		if len(res.Trials) != 1 {
			t.Fatalf("%v: %d trials, want 1", tc.script, len(res.Trials))
		}
		tr := res.Trials[0]
		if tr.Kept != tc.kept || len(tr.Runs) != tc.runs || res.Runs != tc.runs {
			t.Errorf("%v: kept %v after %d runs, want %v after %d", tc.script, tr.Kept, len(tr.Runs), tc.kept, tc.runs)
		}
		if (res.Best.Clients == 2) != tc.kept {
			t.Errorf("%v: best has %d clients", tc.script, res.Best.Clients)
		}
	}
}

// The budget ends the search; the candidate it cut short is not kept,
// and the best so far stays.
func TestBudget(t *testing.T) {
	f := &fake{fails: func(Candidate) bool { return true }}
	res := Search(context.Background(), f, schedule(4), Options{Confirm: Confirm{2, 3}, Budget: 3, Blamed: []int{2}})
	if res.Stopped != "budget" || res.Runs != 3 || len(f.ran) != 3 {
		t.Fatalf("stopped %q after %d runs (%d ran), want budget after 3", res.Stopped, res.Runs, len(f.ran))
	}
	if !slices.Equal(res.Best.Of, []int{2}) || res.Best.Clients != 5 {
		t.Errorf("best %v (of %v), want step 2 alone with 5 clients: the clients trial was cut short", res.Best, res.Best.Of)
	}
	last := res.Trials[len(res.Trials)-1]
	if last.Kept || !last.Unfinished {
		t.Errorf("last trial %+v: want unfinished, not kept", last)
	}
}

// Ctrl-C (ctx) ends the search with the best so far.
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fake{fails: func(Candidate) bool { return true }, onRun: func(n int) {
		if n == 3 {
			cancel()
		}
	}}
	res := Search(ctx, f, schedule(4), Options{Confirm: Confirm{2, 3}, Budget: 40, Blamed: []int{1}})
	if res.Stopped != "interrupted" || res.Runs != 2 {
		t.Fatalf("stopped %q after %d runs, want interrupted after 2 counted", res.Stopped, res.Runs)
	}
	if !slices.Equal(res.Best.Of, []int{1}) {
		t.Errorf("best %v, want step 1 alone", res.Best.Of)
	}
}

// The deadline ends the search before the next run.
func TestDeadline(t *testing.T) {
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	f := &fake{fails: func(Candidate) bool { return true }, onRun: func(int) { now = now.Add(time.Minute) }}
	res := Search(context.Background(), f, schedule(4), Options{Confirm: Confirm{2, 3}, Blamed: []int{0},
		Deadline: now.Add(150 * time.Second), Now: func() time.Time { return now }})
	if res.Stopped != "deadline" || res.Runs != 3 {
		t.Fatalf("stopped %q after %d runs, want deadline after 3", res.Stopped, res.Runs)
	}
}

func TestParseConfirm(t *testing.T) {
	if c, err := ParseConfirm("2/3"); err != nil || c != (Confirm{2, 3}) {
		t.Errorf("2/3: %v %v", c, err)
	}
	for _, bad := range []string{"", "3/2", "0/3", "2/3x", "2", "1/21", "-1/2"} {
		if _, err := ParseConfirm(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestBlamed(t *testing.T) {
	tok := func(n int64) *int64 { return &n }
	faults := []history.Fault{
		{FaultValue: history.FaultValue{Fault: "pause-holder", Holder: &history.Aim{Process: 0, Token: tok(4)}}},
		{FaultValue: history.FaultValue{Fault: "pause-server"}},
		{FaultValue: history.FaultValue{Fault: "pause-holder", Holder: &history.Aim{Process: 2, Token: tok(9)}}},
		{FaultValue: history.FaultValue{Fault: "pause-holder", Holder: &history.Aim{Process: 1, Token: tok(12)}}},
	}
	losses := []checkers.LostElement{
		// A stale write of process 2 (token 9) erased it.
		{Element: 5, Process: 1, Token: 11, OverwrittenBy: &checkers.Overwrite{Known: true, Stale: true, Process: 2, Token: 9}},
		// Process 1's own write with token 12, erased by a newer holder.
		{Element: 8, Process: 1, Token: 12, OverwrittenBy: &checkers.Overwrite{Known: true, Process: 3, Token: 14}},
		{Element: 9, Process: 2, Token: 9, OverwrittenBy: &checkers.Overwrite{Known: true, Process: 3, Token: 14}},
	}
	if got := Blamed(faults, losses); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("blamed %v, want [2 3]", got)
	}
	if got := Blamed(faults, nil); got != nil {
		t.Errorf("no loss: blamed %v", got)
	}
}
