package election

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/register"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// builder writes hand-made election histories; times are in ms.
type builder struct {
	t      *testing.T
	events []history.Event
}

func (b *builder) add(ms int64, p history.Process, typ history.Type, f string, v any) {
	b.t.Helper()
	var raw json.RawMessage
	if v != nil {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			b.t.Fatal(err)
		}
	}
	b.events = append(b.events, history.Event{Index: len(b.events), Time: ms * 1e6, Process: p, Type: typ, F: f, Value: raw})
}

// entry is one entry of a leadership: its element, the list its leader
// read, when it was read, sent and answered, and the answer.
type entry struct {
	element            int64
	read               []int64
	readAt, sent, done int64
	typ                history.Type // ok, fail (fenced) or "" (no answer)
}

// lead records a leadership of process p with term from invoke to complete
// (complete 0: never completed), electing at elected, resigning at end.
func (b *builder) lead(p history.Process, term, invoke, elected, end, complete int64, ctype history.Type, es ...entry) {
	els := make([]int64, len(es))
	for i, e := range es {
		els[i] = e.element
	}
	b.add(invoke, p, history.Invoke, FLead, Invoke{Elements: els})
	b.add(elected, p, history.Phase, PhaseElected, Elected{Term: term})
	written := 0
	for i, e := range es {
		b.add(e.readAt, p, history.Phase, PhaseEntry, Entry{Term: term, Seq: i + 1, Element: e.element})
		b.add(e.readAt, p, history.Phase, PhaseRead, la.ReadValue{Value: e.read})
		b.add(e.sent, p, history.Phase, PhaseWriteSent, nil)
		switch e.typ {
		case history.Ok:
			written++
			b.add(e.done, p, history.Phase, PhaseWritten, Written{Element: e.element, Type: history.Ok})
		case history.Fail:
			b.add(e.done, p, history.Phase, PhaseWritten, Written{Element: e.element, Type: history.Fail, Reason: la.ReasonFenced, Error: "rejected by fencing"})
		}
	}
	b.add(end, p, history.Phase, PhaseResigning, nil)
	if complete > 0 {
		c := Completion{Term: term, Written: written}
		if ctype == history.Fail {
			c.Reason = la.ReasonFenced
		}
		b.add(complete, p, ctype, FLead, c)
	}
}

func (b *builder) final(ms int64, list ...int64) {
	b.add(ms, 100, history.Invoke, la.FFinalRead, nil)
	b.add(ms+1, 100, history.Ok, la.FFinalRead, la.ReadValue{Value: list})
}

func (b *builder) check() *Result {
	return Check(b.events, checkers.Options{})
}

func TestCleanHandover(t *testing.T) {
	b := &builder{t: t}
	b.lead(0, 5, 0, 10, 60, 70, history.Ok,
		entry{element: 1, read: []int64{}, readAt: 11, sent: 20, done: 25, typ: history.Ok},
		entry{element: 2, read: []int64{1}, readAt: 26, sent: 30, done: 35, typ: history.Ok})
	b.lead(1, 6, 5, 80, 120, 130, history.Ok,
		entry{element: 4, read: []int64{1, 2}, readAt: 81, sent: 90, done: 95, typ: history.Ok})
	b.final(200, 1, 2, 4)
	r := b.check()
	if r.Valid != checkers.Valid || r.Leaderships != 2 || r.Forks != 0 || r.SplitBrain != 0 || r.LostUpdates.Acknowledged != 3 {
		t.Fatalf("clean handover: %+v", r)
	}
}

func TestTwoLeadersInOneTerm(t *testing.T) {
	b := &builder{t: t}
	b.lead(0, 5, 0, 10, 40, 50, history.Ok,
		entry{element: 1, read: []int64{}, readAt: 11, sent: 20, done: 25, typ: history.Ok})
	b.lead(1, 5, 60, 70, 100, 110, history.Ok,
		entry{element: 4, read: []int64{1}, readAt: 71, sent: 80, done: 85, typ: history.Ok})
	b.final(200, 1, 4)
	r := b.check()
	if r.Valid != checkers.Invalid || r.Checkers.Terms.Valid != checkers.Invalid || r.Checkers.Terms.Count != 1 {
		t.Fatalf("two leaders in term 5: %+v", r.Checkers.Terms)
	}
}

// forked is the seed's story: leader 0 (term 5) is paused after reading;
// leader 1 (term 6) is elected and writes entry 6.1; leader 0 wakes up and
// appends 5.1 after it.
func forked(t *testing.T, staleType history.Type) *builder {
	b := &builder{t: t}
	b.lead(1, 6, 5, 3000, 3100, 3110, history.Ok,
		entry{element: 4, read: []int64{}, readAt: 3001, sent: 3010, done: 3020, typ: history.Ok})
	ctype := history.Ok
	if staleType == history.Fail {
		ctype = history.Fail
	}
	b.lead(0, 5, 0, 10, 5000, 5010, ctype,
		entry{element: 1, read: []int64{}, readAt: 11, sent: 4000, done: 4010, typ: staleType})
	return b
}

func TestForkedLog(t *testing.T) {
	b := forked(t, history.Ok)
	b.final(6000, 1) // the stale write erased 4
	r := b.check()
	if r.Valid != checkers.Invalid || r.Forks != 1 || r.LostUpdates.Lost != 1 {
		t.Fatalf("forked log: forks %d lost %d valid %s", r.Forks, r.LostUpdates.Lost, r.Valid)
	}
	f := r.Checkers.ForkedLog.Forks[0]
	if f.Kind != ForkBranch || f.Stale.Term != 5 || f.Newer.Term != 6 || f.Stale.Leader != 0 || f.Newer.Leader != 1 {
		t.Fatalf("fork: %+v", f)
	}
	// The clients by their workers, never their process numbers.
	if m := r.Checkers.ForkedLog.Message; !strings.Contains(m, "entry 5.1 of w1 was accepted on a branch apart from entry 6.1 of w2") {
		t.Errorf("forked log's message: %s", m)
	}
	if r.SplitBrain != 1 {
		t.Fatalf("split brain: %d windows, want 1", r.SplitBrain)
	}
	s := Stories(b.events, r, 2)
	if len(s) != 1 || s[0].Outcome != "accepted" || !strings.Contains(s[0].Text, "The old leader, w1 (term 5)") || !strings.Contains(s[0].Text, "w2 became leader with term 6 and wrote entry 6.1") {
		t.Fatalf("stories: %+v", s)
	}
	if o, ok := OutcomeOf(&store.Results{Result: r}); !ok || o != (Outcome{Forks: 1, Lost: 1, Refused: 0}) {
		t.Errorf("outcome %+v, %v", o, ok)
	}
	if _, ok := OutcomeOf(&store.Results{Result: &register.Result{}}); ok {
		t.Error("an outcome of a register result")
	}
}

// A fork that erases nothing (the old leader read the new leader's entry
// and wrote its own after it) is still invalid: an old term after a newer.
func TestForkWithoutLoss(t *testing.T) {
	b := &builder{t: t}
	b.lead(1, 6, 5, 3000, 3100, 3110, history.Ok,
		entry{element: 4, read: []int64{}, readAt: 3001, sent: 3010, done: 3020, typ: history.Ok})
	b.lead(0, 5, 0, 10, 5000, 5010, history.Ok,
		entry{element: 1, read: []int64{4}, readAt: 3500, sent: 4000, done: 4010, typ: history.Ok})
	b.final(6000, 4, 1)
	r := b.check()
	if r.Checkers.ForkedLog.Valid != checkers.Invalid || r.LostUpdates.Lost != 0 || r.Checkers.ForkedLog.Forks[0].Kind != ForkAfter {
		t.Fatalf("fork without loss: %+v", r.Checkers.ForkedLog)
	}
}

// Forks are read from the lists the writes wrote, not from timing: an old
// leader's write whose write-sent phase the harness recorded late (after
// the new leader's acknowledgement), but whose list the new leader read,
// is no fork.
func TestNoForkFromLateTimestamps(t *testing.T) {
	b := &builder{t: t}
	b.lead(0, 5, 0, 10, 5000, 5010, history.Ok,
		entry{element: 1, read: []int64{}, readAt: 11, sent: 4000, done: 4010, typ: history.Ok})
	b.lead(1, 6, 5, 3000, 4100, 4110, history.Ok,
		entry{element: 4, read: []int64{1}, readAt: 3001, sent: 3010, done: 3020, typ: history.Ok})
	b.final(6000, 1, 4)
	if r := b.check(); r.Forks != 0 {
		t.Fatalf("forks %d (%+v), want 0", r.Forks, r.Checkers.ForkedLog)
	}
}

func TestFencedStaleEntry(t *testing.T) {
	b := forked(t, history.Fail)
	b.final(6000, 4)
	r := b.check()
	if r.Valid != checkers.Valid || r.FenceRejections != 1 || r.Forks != 0 {
		t.Fatalf("fenced stale entry: valid %s rejections %d forks %d", r.Valid, r.FenceRejections, r.Forks)
	}
	s := Stories(b.events, r, 2)
	if len(s) != 1 || s[0].Outcome != "rejected" {
		t.Fatalf("stories: %+v", s)
	}
}

// An entry whose answer never came is info: it may or may not be in the
// log, and either is valid; the leader's process is retired after it.
func TestInfoEntries(t *testing.T) {
	for _, final := range [][]int64{{1, 2}, {1}} {
		b := &builder{t: t}
		b.lead(0, 5, 0, 10, 60, 70, history.Info,
			entry{element: 1, read: []int64{}, readAt: 11, sent: 20, done: 25, typ: history.Ok},
			entry{element: 2, read: []int64{1}, readAt: 26, sent: 30, typ: ""})
		b.final(200, final...)
		r := b.check()
		if r.Valid != checkers.Valid || r.Checkers.Stats.Info != 1 || r.Checkers.Stats.Ok != 1 {
			t.Fatalf("info entry, final %v: valid %s stats %+v", final, r.Valid, r.Checkers.Stats)
		}
	}
	// A leadership that never completed (its worker was lost) is info too.
	b := &builder{t: t}
	b.lead(1, 4, 0, 1, 5, 8, history.Ok,
		entry{element: 7, read: []int64{}, readAt: 2, sent: 3, done: 4, typ: history.Ok})
	b.lead(0, 5, 9, 10, 60, 0, "",
		entry{element: 1, read: []int64{7}, readAt: 11, sent: 20, typ: ""})
	b.final(200, 7, 1)
	if r := b.check(); r.Valid != checkers.Valid || r.Checkers.Stats.Info != 1 {
		t.Fatalf("lost leadership: valid %s stats %+v", r.Valid, r.Checkers.Stats)
	}
}

// An acknowledged entry missing from the final log is lost even without a
// fork (the log lost it).
func TestLostEntry(t *testing.T) {
	b := &builder{t: t}
	b.lead(0, 5, 0, 10, 60, 70, history.Ok,
		entry{element: 1, read: []int64{}, readAt: 11, sent: 20, done: 25, typ: history.Ok})
	b.final(200)
	if r := b.check(); r.Valid != checkers.Invalid || r.LostUpdates.Lost != 1 {
		t.Fatalf("lost entry: %+v", r)
	}
}

// A history that breaks the checkers' assumptions is unknown, with the
// reason.
func TestBrokenHistoryIsUnknown(t *testing.T) {
	b := &builder{t: t}
	b.lead(0, 5, 0, 10, 60, 70, history.Ok,
		entry{element: 1, read: []int64{}, readAt: 11, sent: 20, done: 25, typ: history.Ok})
	b.final(50, 1) // before the entry's acknowledgement... and overlapping
	b.lead(1, 6, 100, 110, 160, 170, history.Ok,
		entry{element: 1, read: []int64{1}, readAt: 111, sent: 120, done: 125, typ: history.Ok}) // duplicate element
	b.final(300, 1, 1)
	r := b.check()
	if r.Valid != checkers.Unknown || r.Error == "" {
		t.Fatalf("broken history: valid %s error %q", r.Valid, r.Error)
	}
}

// TestCutText: an election result's free text is bounded in a copy.
func TestCutText(t *testing.T) {
	huge := strings.Repeat("x", 1000)
	r := &Result{Valid: checkers.Unknown, Error: huge}
	r.Checkers.ForkedLog.Message = huge
	c, ok := r.CutText(func(s string) string { return s[:min(len(s), 10)] }).(*Result)
	if !ok || len(c.Error) != 10 || len(c.Checkers.ForkedLog.Message) != 10 || c.Valid != checkers.Unknown {
		t.Errorf("cut: %T %+v", c, c)
	}
	if r.Error != huge || r.Checkers.ForkedLog.Message != huge {
		t.Error("the result itself was changed")
	}
}
