package report

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// A story's actors keep their letters on their lock-belief bars, however
// short the bar: a letter and token that fit are written inside, a
// ZooKeeper token (ten digits) that does not is left out for the letter
// alone, and a bar too short for even the letter has it written just
// before it. No label is wider than the bar it is written in.
func TestBeliefLabelsKeepTheLetter(t *testing.T) {
	grant := func(p history.Process, from, to int64, token int64) *Op {
		return &Op{Proc: p, Label: "append", Writes: true, Invoke: from - 1e6, End: to, Type: history.Ok, StaleFrom: -1, WriteIdx: -1,
			CriticalSection: CriticalSection{Acquired: true, AcquiredAt: from, Token: token, ReadAt: -1, CheckedAt: -1, WriteSentAt: -1, ReleasingAt: to, LateAt: -1}}
	}
	a := grant(0, 1e9, 1.05e9, 8589934662)   // about 2 units wide
	b := grant(1, 2e9, 12e9, 8589934700)     // about 500
	c := grant(2, 13e9, 13.8e9, 12884901890) // about 40: the letter, not the token
	m := &OpModel{Ops: []*Op{a, b, c}, Last: 20e9}
	f := DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 3, From: 0, To: 20e9,
		Involved: map[*Op]bool{a: true, b: true, c: true}, Actors: map[*Op]string{a: "A", b: "B", c: "C"}})
	s := scale{t0: 0, t1: 20e9, x0: labelW, x1: figW - rightPad}
	got := map[string]text{}
	for _, tx := range f.Texts {
		if tx.Class == "belief-label" || tx.Class == "belief-label out" {
			got[tx.Text] = tx
		}
	}
	for _, c := range []struct {
		label string
		op    *Op
		out   bool
	}{{"A", a, true}, {"B 8589934700", b, false}, {"C", c, false}} {
		tx, ok := got[c.label]
		if !ok {
			t.Errorf("no label %q; labels %v", c.label, got)
			continue
		}
		x0, x1 := s.x(c.op.AcquiredAt), s.x(c.op.ReleasingAt)
		switch {
		case c.out && (tx.Class != "belief-label out" || tx.X > x0):
			t.Errorf("%q at x %v (%s), want it before the bar at %v", c.label, tx.X, tx.Class, x0)
		case !c.out && (tx.X < x0 || tx.X+px(len(c.label))*labelCharW > x1):
			t.Errorf("%q at x %v does not fit in its bar [%v, %v]", c.label, tx.X, x0, x1)
		}
	}
	if len(got) != 3 {
		t.Errorf("labels %v, want 3", got)
	}
}
