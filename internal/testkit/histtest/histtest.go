// Package histtest builds lock-append histories for tests, event by
// event (Hist: each event 1 ms after the one before) or as a long
// synthetic run: the checkers' tests and the lock-append workload's share
// it.
package histtest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

// Hist builds a history by hand: events in the order they are added, each
// 1 MS after the one before (or at the same time after same()).
type Hist struct {
	T      testing.TB
	Events []history.Event
	now    int64
	hold   bool
}

// New is an empty history of test t.
func New(t testing.TB) *Hist { return &Hist{T: t} }

// MS is a millisecond in a history's times (ns).
const MS = int64(1_000_000)

// Add appends an event of p, 1 ms after the last one (or at its time after
// Same).
func (h *Hist) Add(p history.Process, typ history.Type, f string, v any) *Hist {
	h.T.Helper()
	if !h.hold {
		h.now += MS
	}
	h.hold = false
	var raw json.RawMessage
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			h.T.Fatalf("marshal %v: %v", v, err)
		}
		raw = b
	}
	h.Events = append(h.Events, history.Event{Index: len(h.Events), Time: h.now, Process: p, Type: typ, F: f, Value: raw})
	return h
}

// Same makes the next event happen at the same time as the last one.
func (h *Hist) Same() *Hist { h.hold = true; return h }

// Time is the time of the last event.
func (h *Hist) Time() int64 { return h.now }

// Invoke is p's invocation of an append of element e.
func (h *Hist) Invoke(p history.Process, e int64) *Hist {
	return h.Add(p, history.Invoke, lockappend.FAppend, lockappend.Invoke{Element: e})
}

// Acquired is p's grant of the lock with token.
func (h *Hist) Acquired(p history.Process, token int64) *Hist {
	return h.Add(p, history.Phase, lockappend.PhaseAcquired, lockappend.Acquired{Token: token})
}

// Read is p's read of the list l.
func (h *Hist) Read(p history.Process, l ...int64) *Hist {
	return h.Add(p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: List(l)})
}

// WriteSent is p's write leaving.
func (h *Hist) WriteSent(p history.Process) *Hist {
	return h.Add(p, history.Phase, lockappend.PhaseWriteSent, nil)
}

// Released is p's release of the lock.
func (h *Hist) Released(p history.Process) *Hist {
	return h.Add(p, history.Phase, lockappend.PhaseReleased, lockappend.Released{})
}

// Ok is p's append of e acknowledged, having read read.
func (h *Hist) Ok(p history.Process, e, token int64, read ...int64) *Hist {
	return h.Add(p, history.Ok, lockappend.FAppend, lockappend.Completion{Element: e, Token: token, Read: List(read)})
}

// Fail is p's append of e failed for reason.
func (h *Hist) Fail(p history.Process, e, token int64, reason string, read ...int64) *Hist {
	return h.Add(p, history.Fail, lockappend.FAppend, lockappend.Completion{Element: e, Token: token, Read: List(read), Reason: reason})
}

// Info is the harness's own info: the element and a reason, nothing read.
func (h *Hist) Info(p history.Process, e int64) *Hist {
	return h.Add(p, history.Info, lockappend.FAppend, lockappend.Completion{Element: e, Reason: "timeout"})
}

// Late is p's late result.
func (h *Hist) Late(p history.Process, typ history.Type, c lockappend.Completion) *Hist {
	return h.Add(p, history.Phase, lockappend.PhaseLate, lockappend.Late{Type: typ, Completion: c})
}

// FinalRead is an ok final read of l by p.
func (h *Hist) FinalRead(p history.Process, l ...int64) *Hist {
	h.Add(p, history.Invoke, lockappend.FFinalRead, nil)
	return h.Add(p, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: List(l)})
}

// Section is a whole critical section that writes read+[e], ok.
func (h *Hist) Section(p history.Process, e, token int64, read ...int64) *Hist {
	return h.Invoke(p, e).Acquired(p, token).Read(p, read...).WriteSent(p).Released(p).Ok(p, e, token, read...)
}

// List makes a list that is never null in JSON.
func List(l []int64) []int64 { return append([]int64{}, l...) }

// Seq is the list 1..n.
func Seq(n int64) []int64 {
	var l []int64
	for i := int64(1); i <= n; i++ {
		l = append(l, i)
	}
	return l
}

// Pair is history.Pair for a test.
func Pair(t testing.TB, events []history.Event) []history.Op {
	t.Helper()
	ops, err := history.Pair(events)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// Synthetic returns a lock-append history of n critical sections by five
// workers queueing for one lock, as a real run records it: each worker
// invokes its next section as soon as its last one ends and waits for the
// lock, so five sections are outstanding at any time. Every infoEvery-th
// section (if > 0) times out as info; every other one of those still writes
// (its element shows up in later reads), the rest never do. The history ends
// with a final read.
func Synthetic(tb testing.TB, n, infoEvery int) []history.Event {
	tb.Helper()
	const workers = 5
	type ev struct {
		history.Event
		seq int
	}
	var evs []ev
	add := func(t int64, p history.Process, typ history.Type, f string, v any) {
		var raw json.RawMessage
		if v != nil {
			b, err := json.Marshal(v)
			if err != nil {
				tb.Fatal(err)
			}
			raw = b
		}
		evs = append(evs, ev{history.Event{Time: t, Process: p, Type: typ, F: f, Value: raw}, len(evs)})
	}
	const us = int64(1000)
	proc := make([]history.Process, workers)
	free := make([]int64, workers) // when each worker invokes next
	for w := range proc {
		proc[w] = history.Process(w)
		free[w] = int64(w) * us
	}
	next := history.Process(workers)
	var state []int64
	lock := int64(0)
	for i := range n {
		w := i % workers
		p, e, token := proc[w], int64(i+1), int64(100+i)
		inv := free[w]
		add(inv, p, history.Invoke, lockappend.FAppend, lockappend.Invoke{Element: e})
		t := max(lock, inv) + 10*us
		read := slices.Clone(state)
		add(t, p, history.Phase, lockappend.PhaseAcquired, lockappend.Acquired{Token: token})
		add(t+us, p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: List(read)})
		add(t+2*us, p, history.Phase, lockappend.PhaseWriteSent, nil)
		if infoEvery > 0 && i%infoEvery == infoEvery/2 {
			// Times out: the harness records info and retires p; the
			// worker finishes later.
			add(t+3*us, p, history.Info, lockappend.FAppend, lockappend.Completion{Element: e, Reason: "timeout"})
			wrote := (i/infoEvery)%2 == 0
			typ := history.Fail
			if wrote {
				state = append(state, e)
				typ = history.Ok
			}
			add(t+4*us, p, history.Phase, lockappend.PhaseReleased, lockappend.Released{})
			add(t+5*us, p, history.Phase, lockappend.PhaseLate, lockappend.Late{Type: typ, Completion: lockappend.Completion{Element: e, Token: token, Read: List(read)}})
			proc[w] = next
			next++
			lock, free[w] = t+5*us, t+6*us
			continue
		}
		state = append(state, e)
		add(t+3*us, p, history.Phase, lockappend.PhaseReleased, lockappend.Released{})
		add(t+4*us, p, history.Ok, lockappend.FAppend, lockappend.Completion{Element: e, Token: token, Read: List(read)})
		lock, free[w] = t+4*us, t+5*us
	}
	end := slices.Max(free) + us
	add(end, next, history.Invoke, lockappend.FFinalRead, nil)
	add(end+us, next, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: List(state)})
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.Time != b.Time {
			if a.Time < b.Time {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	out := make([]history.Event, len(evs))
	for i, e := range evs {
		out[i] = e.Event
		out[i].Index = i
	}
	return out
}

// Multi appends a critical section of a two-resource run (pg then px): the
// holder read both lists, and each write ended as given.
func (h *Hist) Multi(p history.Process, e, token int64, pgRead, pxRead []int64, pg, px history.Type) *Hist {
	return h.MultiBegin(p, e, token, pgRead, pxRead).MultiEnd(p, e, token, pgRead, pxRead, pg, px)
}

// MultiBegin is a two-resource section up to its reads.
func (h *Hist) MultiBegin(p history.Process, e, token int64, pgRead, pxRead []int64) *Hist {
	h.Invoke(p, e).Acquired(p, token)
	h.Add(p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: List(pgRead), Resource: "pg"})
	return h.Add(p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: List(pxRead), Resource: "px"})
}

// MultiEnd is the rest: the writes and the completion.
func (h *Hist) MultiEnd(p history.Process, e, token int64, pgRead, pxRead []int64, pg, px history.Type) *Hist {
	h.WriteSent(p).Released(p)
	parts := []lockappend.ResourcePart{{Resource: "pg", Read: List(pgRead), Type: pg}, {Resource: "px", Read: List(pxRead), Type: px}}
	t := history.Ok
	c := lockappend.Completion{Element: e, Token: token, Read: List(pgRead), Resources: parts}
	for i := range parts {
		if parts[i].Type == history.Fail {
			parts[i].Reason = lockappend.ReasonFenced
			c.Reason = lockappend.ReasonPartial
		}
	}
	if pg == history.Fail && px == history.Fail {
		t, c.Reason = history.Fail, lockappend.ReasonFenced
	}
	return h.Add(p, t, lockappend.FAppend, c)
}

// FinalOf is an ok final read of l from resource r by p.
func (h *Hist) FinalOf(p history.Process, r string, l ...int64) *Hist {
	h.Add(p, history.Invoke, lockappend.FFinalRead, nil)
	return h.Add(p, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: List(l), Resource: r})
}

// SectionOn is Section on lock l: the invocation names the lock.
func (h *Hist) SectionOn(l int, p history.Process, e, token int64, read ...int64) *Hist {
	h.Add(p, history.Invoke, lockappend.FAppend, lockappend.Invoke{Element: e, Lock: l})
	return h.Acquired(p, token).Read(p, read...).WriteSent(p).Released(p).Ok(p, e, token, read...)
}

// FinalReadOn is lock l's final read.
func (h *Hist) FinalReadOn(l int, p history.Process, v ...int64) *Hist {
	h.Add(p, history.Invoke, lockappend.FFinalRead, nil)
	return h.Add(p, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: List(v), Lock: l})
}
