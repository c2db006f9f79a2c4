package report

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
)

// hist builds a history by hand, with times in seconds.
type hist struct {
	t  *testing.T
	ev []history.Event
}

func (h *hist) add(sec float64, p history.Process, typ history.Type, f string, v any) {
	h.t.Helper()
	var raw json.RawMessage
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			h.t.Fatal(err)
		}
		raw = b
	}
	h.ev = append(h.ev, history.Event{Index: len(h.ev), Time: int64(sec * 1e9), Process: p, Type: typ, F: f, Value: raw})
}

func (h *hist) invoke(sec float64, p history.Process, element int64) {
	h.add(sec, p, history.Invoke, lockappend.FAppend, lockappend.Invoke{Element: element})
}

func (h *hist) phase(sec float64, p history.Process, f string, v any) {
	h.add(sec, p, history.Phase, f, v)
}

// section records a whole critical section of p: acquired with token,
// read, checked, write sent at write, released, and the ok completion with
// rev.
func (h *hist) section(p history.Process, element, token int64, read []int64, invoke, acq, write float64, rev int64) {
	h.invoke(invoke, p, element)
	h.phase(acq, p, lockappend.PhaseAcquired, lockappend.Acquired{Token: token})
	h.phase(acq+0.001, p, lockappend.PhaseRead, lockappend.ReadValue{Value: read})
	h.phase(acq+0.002, p, lockappend.PhaseChecked, lockappend.Checked{RemainingMS: 1900, OK: true})
	h.phase(write, p, lockappend.PhaseWriteSent, nil)
	h.phase(write+0.002, p, lockappend.PhaseReleasing, nil)
	h.phase(write+0.004, p, lockappend.PhaseReleased, lockappend.Released{})
	h.add(write+0.005, p, history.Ok, lockappend.FAppend, lockappend.Completion{Element: element, Token: token, Read: read, Rev: rev})
}

// begin records the start of p's critical section up to its lease check.
func (h *hist) begin(p history.Process, element, token int64, read []int64, invoke, acq float64) {
	h.invoke(invoke, p, element)
	h.phase(acq, p, lockappend.PhaseAcquired, lockappend.Acquired{Token: token})
	h.phase(acq+0.001, p, lockappend.PhaseRead, lockappend.ReadValue{Value: read})
	h.phase(acq+0.002, p, lockappend.PhaseChecked, lockappend.Checked{RemainingMS: 1950, OK: true})
}

func (h *hist) fault(start, stop float64, node string, params map[string]string) {
	v := history.FaultValue{Fault: "pause-holder", Nodes: []string{node}, Params: params}
	h.add(start, history.Nemesis, history.Info, history.FStart, v)
	h.add(stop, history.Nemesis, history.Info, history.FStop, v)
}

func (h *hist) final(sec float64, list []int64) {
	h.add(sec, 1000000, history.Invoke, lockappend.FFinalRead, nil)
	h.add(sec+0.001, 1000000, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: list})
}

// sorted returns the events in time order, re-indexed (hand-written
// histories add a section's events together).
func (h *hist) sorted() []history.Event {
	ev := append([]history.Event(nil), h.ev...)
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].Time < ev[j-1].Time; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
	for i := range ev {
		ev[i].Index = i
	}
	return ev
}

// check runs the real checkers on a history and returns its results, as
// the harness would store them.
func check(t *testing.T, ev []history.Event) *store.Results {
	t.Helper()
	la := checkers.CheckLockAppend(ev, checkers.Options{})
	fs, err := history.Faults(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &store.Results{Workload: "lock-append", Result: &la, Faults: fs, Events: len(ev), CheckTime: "1ms"}
}

// storiesOf builds the stories of a history checked by the real checkers.
func storiesOf(t *testing.T, ev []history.Event, fencing string, workers int) (lost, fenced []Story, res *store.Results) {
	t.Helper()
	res = check(t, ev)
	m, err := buildLockAppend(ev)
	if err != nil {
		t.Fatal(err)
	}
	lost, fenced = stories(m, laResult(res).LostUpdates.Elements, storyConfig{Fencing: fencing, TTL: "2s", Margin: "500ms", Workers: workers})
	return lost, fenced, res
}

func testInfo(fencing string, workers int) store.TestInfo {
	return store.TestInfo{
		Spec: spec.Spec{Name: "test", Target: "etcd", Workload: "lock-append", Fencing: fencing,
			Nemesis: "pause-holder", Concurrency: workers, Nodes: 3, TTL: 2 * time.Second, Margin: 500 * time.Millisecond, TimeLimit: 20 * time.Second},
		Found: store.Found{RunID: "r1", TargetVersion: "3.6.16",
			Servers: []store.NodeInfo{{Name: "n1", Addr: "10.0.0.1:2379"}, {Name: "n2", Addr: "10.0.0.2:2379"}, {Name: "n3", Addr: "10.0.0.3:2379"}}}}
}

// laResult is a lock-append run's checker result.
func laResult(r *store.Results) *checkers.LockAppendResult {
	return r.Result.(*checkers.LockAppendResult)
}
