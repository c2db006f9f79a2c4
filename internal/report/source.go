package report

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// A report's history is either held (Input.Events: a run just checked, a
// test's) or streamed from its file (Input.HistoryPath, with Events nil:
// a stored run's report, written by Write), so that a history of millions
// of events is read in the memory of one. Views and blocks read it only
// through EachEvent, which streams, or AllEvents, which holds it; a view
// that can build its figures event by event (lock-append's) never holds
// the history.

// streamed tells whether the history is read from HistoryPath as it
// streams (no events held).
func (in *Input) streamed() bool { return in.Events == nil && in.HistoryPath != "" }

// EachEvent hands fn the run's events in the history's order: the held
// Events (bounded by Render), or, when none are held, those of HistoryPath
// as the file is read, each bounded as Render bounds held ones
// (boundEvent), none of them kept. A history that cannot be read, or fn's
// error, ends it with that error (a view then shows the results alone:
// HistoryErr). A pass that reads the whole history notes its last time
// (LastTime).
func (in *Input) EachEvent(fn func(history.Event) error) error {
	var last int64
	n := 0
	if !in.streamed() {
		for _, e := range in.Events {
			last = max(last, e.Time)
			if err := fn(e); err != nil {
				return err
			}
		}
	} else if err := history.ScanFile(context.Background(), in.HistoryPath, func(e history.Event) error {
		if n++; n%paceEvery == 0 {
			pace()
		}
		last = max(last, e.Time)
		if b, ok := boundEvent(e); ok {
			e = b
		}
		return fn(e)
	}); err != nil {
		return err
	}
	in.last, in.lastKnown = last, true
	return nil
}

// AllEvents returns the run's events, bounded: the held Events, or the
// whole of HistoryPath read into memory and held from then on, for a view
// or block that needs every event at once. A history that cannot be read
// gives none, and says why in HistoryErr.
func (in *Input) AllEvents() []history.Event {
	if !in.streamed() {
		return in.Events
	}
	if in.release != nil {
		in.release() // the whole history is held from now on
	}
	var events []history.Event
	if err := in.EachEvent(func(e history.Event) error {
		events = append(events, e)
		return nil
	}); err != nil {
		if in.HistoryErr == "" {
			in.HistoryErr = err.Error()
		}
		events = []history.Event{}
	}
	in.Events, in.HistoryPath = events, ""
	return events
}

// LastTime is the time of the history's last event, by a pass over it
// (EachEvent) unless one already read it whole; 0 for none or a history
// that cannot be read.
func (in *Input) LastTime() int64 {
	if !in.lastKnown {
		if in.EachEvent(func(history.Event) error { return nil }) != nil {
			in.last, in.lastKnown = 0, true
		}
	}
	return in.last
}

// StreamedMemoryLimit is the runtime's soft memory limit while a report of
// a streamed history is written (Render of an Input with HistoryPath): its
// figures are built from a million operations' records, most of them
// garbage soon, and the collector, left to its default, lets garbage grow
// the heap to twice what is live. Under the limit it collects sooner, for
// some CPU time. A lower limit (the user's GOMEMLIMIT, a check's memory
// guard) wins (checkers.LowerMemoryLimit). A view that holds the whole
// history (AllEvents) ends the limit first: it is for a view that streams.
const StreamedMemoryLimit = 768 << 20

// StreamedGCPercent is the collector's GOGC while a report of a streamed
// history is written: the next collection comes when the heap has grown by
// a quarter of what is live, not by all of it (the default, 100), so that
// a loaded machine, whose collector lags, does not carry the garbage of a
// million operations' decoding far past the memory limit. It costs about a
// tenth more CPU time.
const StreamedGCPercent = 25

// tightGC holds GOGC at StreamedGCPercent (or lower, if it was) while any
// streamed report is written: the first to come sets it, the last to go
// puts the one before back.
var tightGC struct {
	mu     sync.Mutex
	n      int
	before int
}

// tighterGC takes tightGC and returns what gives it back (once).
func tighterGC() (release func()) {
	tightGC.mu.Lock()
	if tightGC.n++; tightGC.n == 1 {
		tightGC.before = debug.SetGCPercent(StreamedGCPercent)
		if tightGC.before >= 0 && tightGC.before < StreamedGCPercent {
			debug.SetGCPercent(tightGC.before)
		}
	}
	tightGC.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			tightGC.mu.Lock()
			defer tightGC.mu.Unlock()
			if tightGC.n--; tightGC.n == 0 {
				debug.SetGCPercent(tightGC.before)
			}
		})
	}
}

// paceEvery is how many streamed events pass between two looks at the
// heap (pace).
const paceEvery = 1 << 16

// paceHeap is the heap a stream lets grow before it waits for a
// collection: on a loaded machine the collector's background work lags
// the decoding, and what the stream allocates meanwhile counts as live.
const paceHeap = 640 << 20

// Pace is pace for a view between the steps that build its figures from
// a streamed history (a million operations' each), which allocate as the
// stream does; of a held history, it does nothing.
func (in *Input) Pace() {
	if in.streamed() {
		pace()
	}
}

// pace waits for a whole collection when the heap's objects are past
// paceHeap: the stream allocates nothing while it runs.
func pace() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > paceHeap {
		runtime.GC()
	}
}
