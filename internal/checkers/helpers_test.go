package checkers

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
)

// hist builds a history by hand: events in the order they are added, each
// 1 ms after the one before (or at the same time after same()).
type hist struct {
	t      testing.TB
	events []history.Event
	now    int64
	hold   bool
}

func newHist(t testing.TB) *hist { return &hist{t: t} }

const ms = int64(1_000_000)

func (h *hist) add(p history.Process, typ history.Type, f string, v any) *hist {
	h.t.Helper()
	if !h.hold {
		h.now += ms
	}
	h.hold = false
	var raw json.RawMessage
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			h.t.Fatalf("marshal %v: %v", v, err)
		}
		raw = b
	}
	h.events = append(h.events, history.Event{Index: len(h.events), Time: h.now, Process: p, Type: typ, F: f, Value: raw})
	return h
}

// same makes the next event happen at the same time as the last one.
func (h *hist) same() *hist { h.hold = true; return h }

// time is the time of the last event.
func (h *hist) time() int64 { return h.now }

func (h *hist) invoke(p history.Process, e int64) *hist {
	return h.add(p, history.Invoke, lockappend.FAppend, lockappend.Invoke{Element: e})
}

func (h *hist) acquired(p history.Process, token int64) *hist {
	return h.add(p, history.Phase, lockappend.PhaseAcquired, lockappend.Acquired{Token: token})
}

func (h *hist) read(p history.Process, l ...int64) *hist {
	return h.add(p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: list(l)})
}

func (h *hist) writeSent(p history.Process) *hist {
	return h.add(p, history.Phase, lockappend.PhaseWriteSent, nil)
}

func (h *hist) released(p history.Process) *hist {
	return h.add(p, history.Phase, lockappend.PhaseReleased, lockappend.Released{})
}

func (h *hist) ok(p history.Process, e, token int64, read ...int64) *hist {
	return h.add(p, history.Ok, lockappend.FAppend, lockappend.Completion{Element: e, Token: token, Read: list(read)})
}

func (h *hist) fail(p history.Process, e, token int64, reason string, read ...int64) *hist {
	return h.add(p, history.Fail, lockappend.FAppend, lockappend.Completion{Element: e, Token: token, Read: list(read), Reason: reason})
}

// info is the harness's own info: the element and a reason, nothing read.
func (h *hist) info(p history.Process, e int64) *hist {
	return h.add(p, history.Info, lockappend.FAppend, lockappend.Completion{Element: e, Reason: "timeout"})
}

func (h *hist) late(p history.Process, typ history.Type, c lockappend.Completion) *hist {
	return h.add(p, history.Phase, lockappend.PhaseLate, lockappend.Late{Type: typ, Completion: c})
}

func (h *hist) finalRead(p history.Process, l ...int64) *hist {
	h.add(p, history.Invoke, lockappend.FFinalRead, nil)
	return h.add(p, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: list(l)})
}

// section is a whole critical section that writes read+[e], ok.
func (h *hist) section(p history.Process, e, token int64, read ...int64) *hist {
	return h.invoke(p, e).acquired(p, token).read(p, read...).writeSent(p).released(p).ok(p, e, token, read...)
}

// list makes a list that is never null in JSON.
func list(l []int64) []int64 { return append([]int64{}, l...) }

func seq(n int64) []int64 {
	var l []int64
	for i := int64(1); i <= n; i++ {
		l = append(l, i)
	}
	return l
}

// pair is history.Pair for a test.
func pair(t testing.TB, events []history.Event) []history.Op {
	t.Helper()
	ops, err := history.Pair(events)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// synthetic returns a lock-append history of n critical sections by five
// workers queueing for one lock, as a real run records it: each worker
// invokes its next section as soon as its last one ends and waits for the
// lock, so five sections are outstanding at any time. Every infoEvery-th
// section (if > 0) times out as info; every other one of those still writes
// (its element shows up in later reads), the rest never do. The history ends
// with a final read.
func synthetic(tb testing.TB, n, infoEvery int) []history.Event {
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
		add(t+us, p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: list(read)})
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
			add(t+5*us, p, history.Phase, lockappend.PhaseLate, lockappend.Late{Type: typ, Completion: lockappend.Completion{Element: e, Token: token, Read: list(read)}})
			proc[w] = next
			next++
			lock, free[w] = t+5*us, t+6*us
			continue
		}
		state = append(state, e)
		add(t+3*us, p, history.Phase, lockappend.PhaseReleased, lockappend.Released{})
		add(t+4*us, p, history.Ok, lockappend.FAppend, lockappend.Completion{Element: e, Token: token, Read: list(read)})
		lock, free[w] = t+4*us, t+5*us
	}
	end := slices.Max(free) + us
	add(end, next, history.Invoke, lockappend.FFinalRead, nil)
	add(end+us, next, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: list(state)})
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
