// Package lockappendtest makes lock-append histories for tests: critical
// sections written by hand (Hist), the seed story, a long synthetic run,
// and their results as the real checkers give them. The report's tests and
// the lock-append view's share it.
package lockappendtest

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/history"
	la "github.com/fencecheck/fencecheck/internal/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/internal/workloads/lockappend"
)

// Hist builds a history by hand, with times in seconds.
type Hist struct {
	T  testing.TB
	ev []history.Event
}

// Add records an event at sec seconds.
func (h *Hist) Add(sec float64, p history.Process, typ history.Type, f string, v any) {
	h.T.Helper()
	var raw json.RawMessage
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			h.T.Fatal(err)
		}
		raw = b
	}
	h.ev = append(h.ev, history.Event{Index: len(h.ev), Time: int64(sec * 1e9), Process: p, Type: typ, F: f, Value: raw})
}

// Invoke records p's invocation of an append of element.
func (h *Hist) Invoke(sec float64, p history.Process, element int64) {
	h.Add(sec, p, history.Invoke, la.FAppend, la.Invoke{Element: element})
}

// Phase records a phase of p's critical section.
func (h *Hist) Phase(sec float64, p history.Process, f string, v any) {
	h.Add(sec, p, history.Phase, f, v)
}

// Section records a whole critical section of p: acquired with token,
// read, checked, write sent at write, released, and the ok completion with
// rev.
func (h *Hist) Section(p history.Process, element, token int64, read []int64, invoke, acq, write float64, rev int64) {
	h.Invoke(invoke, p, element)
	h.Phase(acq, p, la.PhaseAcquired, la.Acquired{Token: token})
	h.Phase(acq+0.001, p, la.PhaseRead, la.ReadValue{Value: read})
	h.Phase(acq+0.002, p, la.PhaseChecked, la.Checked{RemainingMS: 1900, OK: true})
	h.Phase(write, p, la.PhaseWriteSent, nil)
	h.Phase(write+0.002, p, la.PhaseReleasing, nil)
	h.Phase(write+0.004, p, la.PhaseReleased, la.Released{})
	h.Add(write+0.005, p, history.Ok, la.FAppend, la.Completion{Element: element, Token: token, Read: read, Rev: rev})
}

// Begin records the start of p's critical section up to its lease check.
func (h *Hist) Begin(p history.Process, element, token int64, read []int64, invoke, acq float64) {
	h.Invoke(invoke, p, element)
	h.Phase(acq, p, la.PhaseAcquired, la.Acquired{Token: token})
	h.Phase(acq+0.001, p, la.PhaseRead, la.ReadValue{Value: read})
	h.Phase(acq+0.002, p, la.PhaseChecked, la.Checked{RemainingMS: 1950, OK: true})
}

// Fault records a pause-holder fault on node from start to stop.
func (h *Hist) Fault(start, stop float64, node string, params map[string]string) {
	v := history.FaultValue{Fault: "pause-holder", Nodes: []string{node}, Params: params}
	h.Add(start, history.Nemesis, history.Info, history.FStart, v)
	h.Add(stop, history.Nemesis, history.Info, history.FStop, v)
}

// Final records the final read of list.
func (h *Hist) Final(sec float64, list []int64) {
	h.Add(sec, 1000000, history.Invoke, la.FFinalRead, nil)
	h.Add(sec+0.001, 1000000, history.Ok, la.FFinalRead, la.ReadValue{Value: list})
}

// Sorted returns the events in time order, re-indexed (hand-written
// histories add a section's events together).
func (h *Hist) Sorted() []history.Event {
	ev := append([]history.Event(nil), h.ev...)
	sortEvents(ev)
	return ev
}

// Check runs the real checkers on a history and returns its results, as
// the harness would store them.
func Check(t testing.TB, ev []history.Event) *store.Results {
	t.Helper()
	la := lockappend.Check(ev, checkers.Options{})
	fs, err := history.Faults(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &store.Results{Workload: "lock-append", Result: &la, Faults: fs, Events: len(ev), CheckTime: "1ms"}
}

// TestInfo is the test.json of an etcd run with fencing and workers.
func TestInfo(fencing string, workers int) store.TestInfo {
	return store.TestInfo{
		Spec: spec.Spec{Name: "test", Target: "etcd", Workload: "lock-append", Fencing: fencing,
			Nemesis: "pause-holder", Concurrency: workers, Nodes: 3, TTL: 2 * time.Second, Margin: 500 * time.Millisecond, TimeLimit: 20 * time.Second},
		Found: store.Found{RunID: "r1", TargetVersion: "3.6.16",
			Servers: []store.NodeInfo{{Name: "n1", Addr: "10.0.0.1:2379"}, {Name: "n2", Addr: "10.0.0.2:2379"}, {Name: "n3", Addr: "10.0.0.3:2379"}}}}
}

// Result is a lock-append run's checker result.
func Result(r *store.Results) *lockappend.Result {
	return r.Result.(*lockappend.Result)
}

// SeedHistory is the seed story (the lock-append view's
// TestStoryStaleWriteErasesOthersUpdate) with extra strings that must be
// escaped wherever they land.
func SeedHistory(t testing.TB, evil string) []history.Event {
	h := &Hist{T: t}
	h.Begin(0, 1, 4, []int64{}, 0.06, 0.07)
	h.Fault(0.09, 2.19, "w1", map[string]string{"process": "0", "token": "4", "hold": evil})
	h.Invoke(0.09, 2, 3)
	h.Add(0.77, 2, history.Fail, la.FAppend, la.Completion{Element: 3, Reason: la.ReasonNotAcquired, Error: evil})
	h.Section(1, 2, 7, []int64{}, 0.77, 2.17, 2.175, 9)
	h.Phase(2.19, 0, la.PhaseWriteSent, nil)
	h.Phase(2.196, 0, la.PhaseReleasing, nil)
	h.Phase(2.2, 0, la.PhaseReleased, la.Released{Error: evil})
	h.Add(2.201, 0, history.Ok, la.FAppend, la.Completion{Element: 1, Token: 4, Read: []int64{}, Rev: 11})
	h.Final(2.21, []int64{1})
	return h.Sorted()
}

// Synthetic makes a lock-append history of n critical sections by workers
// clients, in memory, as a long unfenced run under pause-holder would
// record it: every 300 sections the holder is paused for 4s inside its
// critical section; its lease passes on; it wakes up and writes its stale
// list, which alternately erases the updates acknowledged meanwhile
// (pattern 1) or lands inside a newer holder's section and is erased by it
// (pattern 2). The resource is simulated exactly (a persistent list), but
// the lists in the events are cut to their last 32 elements, to keep the
// history's size linear (a real run's lists grow without bound); so the
// results are computed from the simulation, not by the checkers.
func Synthetic(n, workers int) ([]history.Event, *store.Results) {
	type node struct {
		elem int64
		prev *node
	}
	const keep = 32
	list := func(s *node) []int64 {
		var out []int64
		for p := s; p != nil && len(out) < keep; p = p.prev {
			out = append(out, p.elem)
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		if out == nil {
			out = []int64{}
		}
		return out
	}
	var ev []history.Event
	add := func(t int64, p int, typ history.Type, f string, v any) {
		var raw json.RawMessage
		if v != nil {
			raw, _ = json.Marshal(v)
		}
		ev = append(ev, history.Event{Index: len(ev), Time: t, Process: history.Process(p), Type: typ, F: f, Value: raw})
	}
	const ms = int64(time.Millisecond)
	var (
		state *node
		rev   int64 = 1
		token int64 = 1
		now   int64 = 50 * ms
		elem  int64
		acked = map[int64]struct {
			p       int
			tok, at int64
		}{}
		free   = make([]int64, workers) // when each worker can invoke again
		faults int
	)
	section := func(w int, stale bool) {
		elem++
		e := elem
		inv := max(free[w], now-300*ms)
		add(inv, w, history.Invoke, la.FAppend, la.Invoke{Element: e})
		token += 3
		tok := token
		acq := now + ms
		add(acq, w, history.Phase, la.PhaseAcquired, la.Acquired{Token: tok})
		read := state
		rl := list(read)
		add(acq+ms, w, history.Phase, la.PhaseRead, la.ReadValue{Value: rl})
		add(acq+2*ms, w, history.Phase, la.PhaseChecked, la.Checked{RemainingMS: 1900, OK: true})
		write := acq + 250*ms
		add(write, w, history.Phase, la.PhaseWriteSent, nil)
		rev += 3
		state = &node{e, read}
		add(write+3*ms, w, history.Phase, la.PhaseReleasing, nil)
		add(write+8*ms, w, history.Phase, la.PhaseReleased, la.Released{})
		add(write+9*ms, w, history.Ok, la.FAppend, la.Completion{Element: e, Token: tok, Read: rl, Rev: rev})
		acked[e] = struct {
			p       int
			tok, at int64
		}{w, tok, write + 9*ms}
		now = write + 10*ms
		free[w] = now
	}
	for i := 0; i < n; {
		if i%300 != 150 {
			section(i%workers, false)
			i++
			continue
		}
		// A pause: worker a acquires, reads, and is frozen for 4s.
		a := (i / 300) % workers
		elem++
		ea := elem
		add(max(free[a], now-300*ms), a, history.Invoke, la.FAppend, la.Invoke{Element: ea})
		token += 3
		ta := token
		acq := now + ms
		add(acq, a, history.Phase, la.PhaseAcquired, la.Acquired{Token: ta})
		readA := state
		ra := list(readA)
		add(acq+ms, a, history.Phase, la.PhaseRead, la.ReadValue{Value: ra})
		add(acq+2*ms, a, history.Phase, la.PhaseChecked, la.Checked{RemainingMS: 1950, OK: true})
		nodeName := "w" + strconv.Itoa(a+1)
		fv := history.FaultValue{Fault: "pause-holder", Nodes: []string{nodeName}, Params: map[string]string{"process": strconv.Itoa(a), "token": strconv.FormatInt(ta, 10), "hold": "4s"}}
		pause := acq + 100*ms
		add(pause, -1, history.Info, history.FStart, fv)
		faults++
		now = acq + 2100*ms // the lease expires
		others := 0
		for w := range workers {
			if w != a && others < 3 {
				section(w, false)
				others++
				i++
			}
		}
		resume := pause + 4000*ms
		now = max(now, resume-200*ms)
		pattern2 := (i/300)%2 == 1
		var c int
		var cAcq int64
		var cRead *node
		var ec, tc int64
		if pattern2 {
			// C acquires and reads before A's write lands.
			c = (a + 1) % workers
			elem++
			ec = elem
			add(max(free[c], now-300*ms), c, history.Invoke, la.FAppend, la.Invoke{Element: ec})
			token += 3
			tc = token
			cAcq = now + ms
			add(cAcq, c, history.Phase, la.PhaseAcquired, la.Acquired{Token: tc})
			cRead = state
			add(cAcq+ms, c, history.Phase, la.PhaseRead, la.ReadValue{Value: list(cRead)})
			add(cAcq+2*ms, c, history.Phase, la.PhaseChecked, la.Checked{RemainingMS: 1900, OK: true})
		}
		add(resume, -1, history.Info, history.FStop, fv)
		add(resume+ms, a, history.Phase, la.PhaseWriteSent, nil)
		rev += 3
		state = &node{ea, readA}
		add(resume+4*ms, a, history.Phase, la.PhaseReleasing, nil)
		add(resume+9*ms, a, history.Ok, la.FAppend, la.Completion{Element: ea, Token: ta, Read: ra, Rev: rev})
		acked[ea] = struct {
			p       int
			tok, at int64
		}{a, ta, resume + 9*ms}
		free[a] = resume + 10*ms
		now = resume + 10*ms
		i++
		if pattern2 {
			write := cAcq + 250*ms
			add(write, c, history.Phase, la.PhaseWriteSent, nil)
			rev += 3
			state = &node{ec, cRead}
			add(write+3*ms, c, history.Phase, la.PhaseReleasing, nil)
			add(write+9*ms, c, history.Ok, la.FAppend, la.Completion{Element: ec, Token: tc, Read: list(cRead), Rev: rev})
			acked[ec] = struct {
				p       int
				tok, at int64
			}{c, tc, write + 9*ms}
			free[c] = write + 10*ms
			now = write + 10*ms
			i++
		}
	}
	add(now+500*ms, 1000000, history.Invoke, la.FFinalRead, nil)
	add(now+501*ms, 1000000, history.Ok, la.FFinalRead, la.ReadValue{Value: list(state)})
	// Events were appended out of time order around pauses; sort them.
	sortEvents(ev)

	present := map[int64]bool{}
	for p := state; p != nil; p = p.prev {
		present[p.elem] = true
	}
	lost := checkers.LostUpdates{Acknowledged: len(acked), Elements: []checkers.LostElement{}}
	for e := int64(1); e <= elem; e++ {
		if a, ok := acked[e]; ok && !present[e] {
			lost.Elements = append(lost.Elements, checkers.LostElement{Element: e, Process: history.Process(a.p), Token: a.tok, Acknowledged: a.at})
		}
	}
	lost.Lost = len(lost.Elements)
	ops, _ := history.Pair(ev)
	la := lockappend.Result{Valid: checkers.Invalid, LostUpdates: lost}
	la.Checkers.Stats = checkers.CheckStats(ops)
	la.Checkers.Overlap = checkers.CheckOverlap(ops)
	la.Checkers.TokenMonotonic = checkers.CheckTokens(ops)
	la.Checkers.LostUpdates = checkers.LostUpdatesResult{Verdict: checkers.Verdict{Valid: checkers.Invalid, Message: "synthetic"}, LostUpdates: lost}
	la.Checkers.Linearizable.Message = "not run on the synthetic history (its lists are cut)"
	la.Overlaps = la.Checkers.Overlap.Overlaps
	fs, _ := history.Faults(ev)
	return ev, &store.Results{Workload: "lock-append", Result: &la, Faults: fs, Events: len(ev), CheckTime: "-"}
}

func sortEvents(ev []history.Event) {
	// Insertion sort: events are nearly in order.
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].Time < ev[j-1].Time; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
	for i := range ev {
		ev[i].Index = i
	}
}

// WriteHistory writes events as history.jsonl.
func WriteHistory(t testing.TB, path string, ev []history.Event) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, e := range ev {
		b, _ := json.Marshal(e)
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// WithFaultParam returns a copy of events whose first fault start carries
// one more parameter.
func WithFaultParam(t testing.TB, events []history.Event, key, value string) []history.Event {
	out := append([]history.Event(nil), events...)
	for i, e := range out {
		if e.Process != history.Nemesis || e.F != history.FStart {
			continue
		}
		var f history.FaultValue
		if err := e.Decode(&f); err != nil {
			t.Fatal(err)
		}
		f.Params[key] = value
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		out[i].Value = b
		return out
	}
	t.Fatal("no fault in the history")
	return nil
}

// ResultsOf is the results of a synthetic history with its faults as the
// harness takes them from the history.
func ResultsOf(t testing.TB, res *store.Results, events []history.Event) *store.Results {
	r := *res
	fs, err := history.Faults(events)
	if err != nil {
		t.Fatal(err)
	}
	r.Faults = fs
	return &r
}
