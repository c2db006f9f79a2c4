// Package history is the record of a run: every client operation as an
// invocation and a completion, the phases a lock client reports inside its
// critical section, and the faults the nemesis injected, all on one clock.
//
// The on-disk form is JSON Lines, one Event a line, written as the run goes
// (see Writer), so that a crashed run keeps what happened up to the crash.
//
// Semantics follow Jepsen: a completion of type Ok happened, Fail certainly
// did not happen, and Info may or may not have happened, at any time after its
// invocation. After an Info the logical process is retired and a fresh process
// id continues, so a process never has two operations outstanding.
package history

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Type is an event's type.
type Type string

// Event types. Invoke, Ok, Fail and Info are Jepsen's; Phase marks a step a
// client reported inside an operation (lock acquired, value read, ...), which
// is not an operation of its own and never changes an operation's outcome.
const (
	Invoke Type = "invoke"
	Ok     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
	Phase  Type = "phase"
)

// Completes reports whether t ends an operation.
func (t Type) Completes() bool { return t == Ok || t == Fail || t == Info }

// Process identifies a logical client. Client processes are numbered from 0;
// the nemesis has its own id, written as the string "nemesis" in JSON.
type Process int

// Nemesis is the process of fault events.
const Nemesis Process = -1

// SideWriter is the first process of the side writer (--side-writer): a
// batch job that writes the resource without the lock and without a token.
// After an info it continues as SideWriter+1, and so on.
const SideWriter Process = 2_000_000

// IsSideWriter reports whether p is a process of the side writer.
func (p Process) IsSideWriter() bool { return p >= SideWriter }

// FinalRead is the process of the harness's final reads, after the
// clients' operations (it is no client's, and never a worker's).
const FinalRead Process = 1_000_000

// Worker names the client that ran process p, of workers clients, as the
// harness names their containers and the report's timeline its lanes:
// "w1" for process 0. Process p runs on worker p mod workers (after an
// info the harness retires a process and continues with p+workers on the
// same worker), so one client keeps one name through its processes. The
// side writer is "side writer", the final reads "harness" and the nemesis
// "nemesis". With workers unknown (0 or less), p runs on worker p.
func (p Process) Worker(workers int) string {
	switch {
	case p == Nemesis:
		return "nemesis"
	case p.IsSideWriter():
		return "side writer"
	case p >= FinalRead:
		return "harness"
	case workers <= 0:
		return "w" + strconv.Itoa(int(p)+1)
	}
	return "w" + strconv.Itoa(int(p)%workers+1)
}

// Client names the client that ran process p, of workers clients, as every
// file a run writes for people names it: by its worker (Worker), never by
// its process number, which only history.jsonl keeps. A process the
// harness continued with after operations with an unknown outcome says how
// many came before it on the same worker (Unknowns), in words: "w1" for
// process 0, "w1 (after an unknown outcome)" for process workers, "w1
// (after 2 unknown outcomes)" for process 2*workers; the side writer
// likewise ("side writer (after an unknown outcome)"). The final reads
// are "harness", the nemesis "nemesis".
func (p Process) Client(workers int) string {
	if n := p.Unknowns(workers); n > 0 {
		return p.Worker(workers) + " (" + AfterUnknowns(n) + ")"
	}
	return p.Worker(workers)
}

// Unknowns is how many operations with an unknown outcome its worker (of
// workers) had before the harness continued with process p: 0 for a
// worker's first process, 1 for the one after its first info, and so on.
// It is 0 for the nemesis and the final reads, and with workers unknown
// (0 or less) for every client process (p runs on worker p).
func (p Process) Unknowns(workers int) int {
	switch {
	case p.IsSideWriter():
		return int(p - SideWriter)
	case p < 0 || p >= FinalRead || workers <= 0:
		return 0
	}
	return int(p) / workers
}

// AfterUnknowns says in words that n operations with an unknown outcome
// came before: "after an unknown outcome", "after 2 unknown outcomes"
// ("" for n of 0 or less).
func AfterUnknowns(n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return "after an unknown outcome"
	}
	return "after " + strconv.Itoa(n) + " unknown outcomes"
}

// MarshalJSON writes a client process as a number and Nemesis as "nemesis".
func (p Process) MarshalJSON() ([]byte, error) {
	if p == Nemesis {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Process) UnmarshalJSON(b []byte) error {
	if string(b) == `"nemesis"` {
		*p = Nemesis
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return fmt.Errorf("history: process %s: want a number >= 0 or \"nemesis\"", b)
	}
	*p = Process(n)
	return nil
}

// String returns "nemesis", "side-writer" (then "side-writer#2", ...) or
// the number.
func (p Process) String() string {
	switch {
	case p == Nemesis:
		return "nemesis"
	case p == SideWriter:
		return "side-writer"
	case p > SideWriter:
		return "side-writer#" + strconv.Itoa(int(p-SideWriter)+1)
	}
	return strconv.Itoa(int(p))
}

// Event is one line of history.jsonl.
//
// Time is nanoseconds on the harness's monotonic clock since the test
// started; Index is the event's position in the history, from 0. Value's
// shape depends on the workload and F; it stays raw here so that any workload
// can be stored and read back by the same code.
type Event struct {
	Index   int             `json:"index"`
	Time    int64           `json:"time_ns"`
	Process Process         `json:"process"`
	Type    Type            `json:"type"`
	F       string          `json:"f"`
	Value   json.RawMessage `json:"value,omitempty"`
}

// Decode unmarshals the event's value into v.
func (e Event) Decode(v any) error {
	if len(e.Value) == 0 {
		return fmt.Errorf("history: event %d (%s %s) has no value", e.Index, e.Type, e.F)
	}
	if err := json.Unmarshal(e.Value, v); err != nil {
		return fmt.Errorf("history: event %d (%s %s): %w", e.Index, e.Type, e.F, err)
	}
	return nil
}

// Nemesis event functions: a fault starts and stops. Their value is a
// FaultValue.
const (
	FStart = "start"
	FStop  = "stop"
)

// PhaseFailpointTimeout is the phase a worker reports when it gave up
// waiting for the harness at its failpoint (workloads.Env's Failpoint) and
// went on: a fault aimed at that critical section may have missed it.
// Value: none.
const PhaseFailpointTimeout = "failpoint-timeout"

// PhaseAcquired is the phase a workload reports when a client is granted
// a lock (lock-append's critical section reports it, with its token); the
// liveness checker measures how soon after a fault the lock is granted
// again by these.
const PhaseAcquired = "acquired"

// PhaseLate is the phase the harness records when an operation it already
// recorded as info (it timed out) finally completes: the worker's late
// result, as a Late value. It does not change the operation's outcome in the
// history (an info stays "maybe"), but tells what happened.
const PhaseLate = "late-result"

// Late is the value of a late-result phase: the completion the worker
// reported, with its type.
type Late struct {
	Type       Type            `json:"type"`
	Completion json.RawMessage `json:"completion"`
}

// Op is one client operation: its invocation, its completion (nil while it
// is outstanding or when the history ends before it completes, which counts
// as Info), and the phases reported in between, in order.
type Op struct {
	Process  Process
	F        string
	Invoke   Event
	Complete *Event
	Phases   []Event
}

// Type is the operation's outcome; an operation that never completed is Info.
func (o Op) Type() Type {
	if o.Complete == nil {
		return Info
	}
	return o.Complete.Type
}

// End is the completion time, or -1 for an operation that never completed.
func (o Op) End() int64 {
	if o.Complete == nil {
		return -1
	}
	return o.Complete.Time
}

// PhaseEvent returns the first phase named f, if the client reported it.
func (o Op) PhaseEvent(f string) (Event, bool) {
	for _, p := range o.Phases {
		if p.F == f {
			return p, true
		}
	}
	return Event{}, false
}

// Pair groups client events into operations, in invocation order. Nemesis
// events are skipped; see Faults. Phase and completion events are matched to
// the latest invocation of their process; events that match no invocation,
// or a second invocation while one is outstanding, are errors: the history
// breaks the one-operation-per-process rule.
func Pair(events []Event) ([]Op, error) {
	var ops []Op
	p := NewPairer(func(seq int, op Op) {
		if seq >= len(ops) {
			ops = append(ops, make([]Op, seq+1-len(ops))...)
		}
		ops[seq] = op
	})
	for _, e := range events {
		if err := p.Add(e); err != nil {
			return nil, err
		}
	}
	p.Flush()
	return ops, nil
}

// Pairer is Pair one event at a time, for a history read as it streams
// (ScanFile): it keeps only each process's latest operation. An operation
// is handed to emit once no later event can belong to it (its process
// invoked its next one; or Flush, at the end), with its sequence number:
// its place in Pair's invocation order (0, 1, ...). Operations are emitted
// out of that order; each exactly once.
type Pairer struct {
	emit   func(seq int, op Op)
	latest map[Process]*pairing // process -> its latest operation
	next   int
}

// pairing is an operation not yet emitted.
type pairing struct {
	op   Op
	seq  int
	open bool // not completed
}

// NewPairer returns a Pairer that hands each operation to emit.
func NewPairer(emit func(seq int, op Op)) *Pairer {
	return &Pairer{emit: emit, latest: map[Process]*pairing{}}
}

// Add takes the history's next event; its error is Pair's (the history
// breaks the one-operation-per-process rule).
func (p *Pairer) Add(e Event) error {
	if e.Process == Nemesis {
		return nil
	}
	l := p.latest[e.Process]
	switch {
	case e.Type == Invoke:
		if l != nil && l.open {
			return fmt.Errorf("history: event %d: process %d invoked %s while its %s (event %d) is outstanding",
				e.Index, e.Process, e.F, l.op.F, l.op.Invoke.Index)
		}
		if l != nil {
			p.emit(l.seq, l.op)
		}
		p.latest[e.Process] = &pairing{op: Op{Process: e.Process, F: e.F, Invoke: e}, seq: p.next, open: true}
		p.next++
	case e.Type == Phase:
		if l == nil {
			return fmt.Errorf("history: event %d: phase %s of process %d, which invoked nothing", e.Index, e.F, e.Process)
		}
		l.op.Phases = append(l.op.Phases, e)
	case e.Type.Completes():
		if l == nil || !l.open {
			return fmt.Errorf("history: event %d: %s of process %d, which has nothing outstanding", e.Index, e.Type, e.Process)
		}
		c := e
		l.op.Complete, l.open = &c, false
	default:
		return fmt.Errorf("history: event %d: unknown type %q", e.Index, e.Type)
	}
	return nil
}

// Flush emits every operation not yet emitted, in sequence order: the
// history ended.
func (p *Pairer) Flush() {
	left := slices.SortedFunc(maps.Values(p.latest), func(a, b *pairing) int { return a.seq - b.seq })
	clear(p.latest)
	for _, l := range left {
		p.emit(l.seq, l.op)
	}
}
