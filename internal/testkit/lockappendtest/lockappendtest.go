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

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
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

// Fault records a pause-holder fault on node from start to stop, with rec's
// record (Pause makes one).
func (h *Hist) Fault(start, stop float64, node string, rec history.FaultValue) {
	v := rec
	v.Fault, v.Nodes = "pause-holder", []string{node}
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
			WorkerKnobs: spec.WorkerKnobs{Concurrency: workers, Margin: 500 * time.Millisecond},
			Nemesis:     "pause-holder", Nodes: 3, TTL: 2 * time.Second, TimeLimit: 20 * time.Second},
		Found: store.Found{RunID: "00000001", TargetVersion: "3.6.16",
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
	pause := Pause(0, 4, 2100*time.Millisecond)
	pause.Figures = history.FiguresOf(map[string]string{"note": evil})
	h.Fault(0.09, 2.19, "w1", pause)
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
	s := &synth{rev: 1, token: 1, now: 50 * synthMS, acked: map[int64]synthAck{}, free: make([]int64, workers), workers: workers}
	for i := 0; i < n; {
		if i%300 != 150 {
			s.section(i % workers)
			i++
			continue
		}
		i = s.pause(i)
	}
	s.add(s.now+500*synthMS, 1000000, history.Invoke, la.FFinalRead, nil)
	s.add(s.now+501*synthMS, 1000000, history.Ok, la.FFinalRead, la.ReadValue{Value: s.state.list()})
	// Events were appended out of time order around pauses; sort them.
	sortEvents(s.ev)
	return s.ev, s.results()
}

const synthMS = int64(time.Millisecond)

// synthNode is an element of the simulated list, a persistent list: each
// write makes a new head on the list it read.
type synthNode struct {
	elem int64
	prev *synthNode
}

// list is the list ending at s, cut to its last 32 elements (empty, not
// nil, for none).
func (s *synthNode) list() []int64 {
	const keep = 32
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

// synthAck is an acknowledged element: who wrote it, with which token,
// when.
type synthAck struct {
	p       int
	tok, at int64
}

// synth is Synthetic's simulation: the events so far, the resource's list
// and revision, the last token granted, the time, the last element, the
// acknowledged elements, and when each worker can invoke again.
type synth struct {
	ev                    []history.Event
	state                 *synthNode
	rev, token, now, elem int64
	acked                 map[int64]synthAck
	free                  []int64
	workers               int
}

func (s *synth) add(t int64, p int, typ history.Type, f string, v any) {
	var raw json.RawMessage
	if v != nil {
		raw, _ = json.Marshal(v)
	}
	s.ev = append(s.ev, history.Event{Index: len(s.ev), Time: t, Process: history.Process(p), Type: typ, F: f, Value: raw})
}

// begin has worker w invoke an append, acquire the lock, read the list and
// check its lease (remainingMS left); it returns the element, the token,
// the time of the grant and the list read.
func (s *synth) begin(w int, remainingMS int64) (e, tok, acq int64, read *synthNode) {
	s.elem++
	e = s.elem
	s.add(max(s.free[w], s.now-300*synthMS), w, history.Invoke, la.FAppend, la.Invoke{Element: e})
	s.token += 3
	tok = s.token
	acq = s.now + synthMS
	s.add(acq, w, history.Phase, la.PhaseAcquired, la.Acquired{Token: tok})
	read = s.state
	s.add(acq+synthMS, w, history.Phase, la.PhaseRead, la.ReadValue{Value: read.list()})
	s.add(acq+2*synthMS, w, history.Phase, la.PhaseChecked, la.Checked{RemainingMS: remainingMS, OK: true})
	return e, tok, acq, read
}

// write has worker w write element e on the list read at time at, the
// write acknowledged (with a released phase before, if released).
func (s *synth) write(w int, e, tok, at int64, read *synthNode, released bool) {
	s.add(at, w, history.Phase, la.PhaseWriteSent, nil)
	s.rev += 3
	s.state = &synthNode{e, read}
	s.add(at+3*synthMS, w, history.Phase, la.PhaseReleasing, nil)
	if released {
		s.add(at+8*synthMS, w, history.Phase, la.PhaseReleased, la.Released{})
	}
	s.add(at+9*synthMS, w, history.Ok, la.FAppend, la.Completion{Element: e, Token: tok, Read: read.list(), Rev: s.rev})
	s.acked[e] = synthAck{w, tok, at + 9*synthMS}
	s.free[w] = at + 10*synthMS
	s.now = at + 10*synthMS
}

// section is one whole critical section of worker w.
func (s *synth) section(w int) {
	e, tok, acq, read := s.begin(w, 1900)
	s.write(w, e, tok, acq+250*synthMS, read, true)
}

// pause is the pause of section i: a worker acquires, reads, and is frozen
// for 4s while others write; it returns the next section's number.
func (s *synth) pause(i int) int {
	workers := s.workers
	a := (i / 300) % workers
	ea, ta, acq, readA := s.begin(a, 1950)
	ra := readA.list()
	nodeName := "w" + strconv.Itoa(a+1)
	fv := Pause(history.Process(a), ta, 4*time.Second)
	fv.Fault, fv.Nodes = "pause-holder", []string{nodeName}
	pause := acq + 100*synthMS
	s.add(pause, -1, history.Info, history.FStart, fv)
	s.now = acq + 2100*synthMS // the lease expires
	others := 0
	for w := range workers {
		if w != a && others < 3 {
			s.section(w)
			others++
			i++
		}
	}
	resume := pause + 4000*synthMS
	s.now = max(s.now, resume-200*synthMS)
	pattern2 := (i/300)%2 == 1
	var c int
	var cAcq, ec, tc int64
	var cRead *synthNode
	if pattern2 {
		// C acquires and reads before A's write lands.
		c = (a + 1) % workers
		ec, tc, cAcq, cRead = s.begin(c, 1900)
	}
	s.add(resume, -1, history.Info, history.FStop, fv)
	s.add(resume+synthMS, a, history.Phase, la.PhaseWriteSent, nil)
	s.rev += 3
	s.state = &synthNode{ea, readA}
	s.add(resume+4*synthMS, a, history.Phase, la.PhaseReleasing, nil)
	s.add(resume+9*synthMS, a, history.Ok, la.FAppend, la.Completion{Element: ea, Token: ta, Read: ra, Rev: s.rev})
	s.acked[ea] = synthAck{a, ta, resume + 9*synthMS}
	s.free[a] = resume + 10*synthMS
	s.now = resume + 10*synthMS
	i++
	if pattern2 {
		s.write(c, ec, tc, cAcq+250*synthMS, cRead, false)
		i++
	}
	return i
}

// results are the simulation's results: its lost updates from the
// simulated list, the other checkers run on the history.
func (s *synth) results() *store.Results {
	present := map[int64]bool{}
	for p := s.state; p != nil; p = p.prev {
		present[p.elem] = true
	}
	lost := checkers.LostUpdates{Acknowledged: len(s.acked), Elements: []checkers.LostElement{}}
	for e := int64(1); e <= s.elem; e++ {
		if a, ok := s.acked[e]; ok && !present[e] {
			lost.Elements = append(lost.Elements, checkers.LostElement{Element: e, Process: history.Process(a.p), Token: a.tok, Acknowledged: a.at})
		}
	}
	lost.Lost = len(lost.Elements)
	ops, _ := history.Pair(s.ev)
	h, err := lockappend.ParseHistory(ops)
	if err != nil {
		panic("lockappendtest: the synthetic history does not decode: " + err.Error())
	}
	la := lockappend.Result{Valid: checkers.Invalid, LostUpdates: lost}
	la.Checkers.Stats = h.Stats()
	la.Checkers.Overlap = h.Overlap()
	la.Checkers.TokenMonotonic = h.Tokens()
	la.Checkers.LostUpdates = checkers.LostUpdatesResult{Verdict: checkers.Verdict{Valid: checkers.Invalid, Message: "synthetic"}, LostUpdates: lost}
	la.Checkers.Linearizable.Message = "not run on the synthetic history (its lists are cut)"
	la.Overlaps = la.Checkers.Overlap.Overlaps
	fs, _ := history.Faults(s.ev)
	return &store.Results{Workload: "lock-append", Result: &la, Faults: fs, Events: len(s.ev), CheckTime: "-"}
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

// Pause is the record of a pause of the holder process p, holding token, for
// hold.
func Pause(p history.Process, token int64, hold time.Duration) history.FaultValue {
	return history.FaultValue{Hold: history.Duration(hold), Holder: &history.Aim{Process: p, Token: &token}}
}

// WithFaultParam returns a copy of events whose first fault start carries
// one more figure, a string.
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
		figures := map[string]any{}
		if len(f.Figures) > 0 {
			if err := json.Unmarshal(f.Figures, &figures); err != nil {
				t.Fatal(err)
			}
		}
		figures[key] = value
		f.Figures = history.FiguresOf(figures)
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
