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

// A write that erased many elements is joined to them by one arc a lane
// (to the last of them there), its title counting them, not by a fan of
// an arc each.
func TestErasureArcsOneALane(t *testing.T) {
	write := func(p history.Process, at int64, element int64) *Op {
		return &Op{Proc: p, Label: "append", Writes: true, Invoke: at - 1e6, End: at, Type: history.Ok, StaleFrom: -1, WriteIdx: -1,
			CriticalSection: CriticalSection{Element: element, ReadAt: -1, CheckedAt: -1, WriteSentAt: at, ReleasingAt: -1, LateAt: -1}}
	}
	by := write(0, 9e9, 100)
	m := &OpModel{Ops: []*Op{by}, Last: 10e9}
	var victims []*Op
	for i := range int64(12) {
		v := write(history.Process(1+i%2), 1e9+i*5e8, i+1) // w2 and w3, six each
		victims = append(victims, v)
		m.Ops = append(m.Ops, v)
	}
	f := DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 3, From: 0, To: 10e9, Marks: Marks{Erasures: []Erasure{{By: by, Victims: victims}}}})
	var titles []string
	for _, p := range f.Paths {
		if p.Class == "erase" {
			titles = append(titles, p.Title)
		}
	}
	want := []string{"w1's write erased 6 elements (1, 3, 5, 7, 9, 11) of w2", "w1's write erased 6 elements (2, 4, 6, 8, 10, 12) of w3"}
	if len(titles) != 2 || titles[0] != want[0] || titles[1] != want[1] {
		t.Errorf("arcs %q, want %q", titles, want)
	}
}
