package report

import (
	"strconv"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
)

// Op is an operation as a timeline draws it: its span (invocation to
// completion) and, for an operation that takes a lock and writes (a
// lock-append critical section), the phases it reported, decoded once.
// Times are ns since the start; -1 means "not reported".
type Op struct {
	Proc  history.Process
	Label string // what the op does, for tooltips: "append 12"
	// Writes is true for an operation whose write the timeline draws (a
	// lock-append critical section); the generic view draws operations as
	// spans only.
	Writes bool
	Invoke int64
	End    int64 // completion time, -1 when it never completed
	Type   history.Type
	// Append is what the operation's phases say of a critical section,
	// as the checkers read it (lockappend.ParseAppend); an operation of
	// another kind has its times at -1 (NoAppend).
	lockappend.Append

	// StaleFrom is when the lock was granted with a higher token while this
	// holder still believed it held it (-1: never). StaleBy is that grant.
	StaleFrom int64
	StaleBy   *Op
	// WriteIdx is the position of the op's landed write among the writes
	// in the order the resource applied them, -1 without one (set by the
	// view that orders them).
	WriteIdx int
}

// NoAppend is the Append of an operation that is no critical section:
// every phase time -1.
var NoAppend = lockappend.Append{ReadAt: -1, CheckedAt: -1, WriteSentAt: -1, ReleasingAt: -1, LateAt: -1}

// Landed reports whether the op's write reached the resource for certain:
// an ok completion, or an ok late result of an info op.
func (o *Op) Landed() bool {
	return o.Type == history.Ok || (o.Late != nil && o.Late.Type == history.Ok)
}

// WriteComp is the completion that tells about the write: the late result's
// when there is one, else the completion's.
func (o *Op) WriteComp() lockappend.Completion {
	if o.Late != nil {
		return o.Late.Completion
	}
	return o.Comp
}

// AckAt is when the client was told its write succeeded (or failed): the
// late result's time when there is one, else the completion's.
func (o *Op) AckAt() int64 {
	if o.Late != nil {
		return o.LateAt
	}
	return o.End
}

// WriteAt is the best-known time the write left: the write-sent phase, else
// the acknowledgement.
func (o *Op) WriteAt() int64 {
	if o.WriteSentAt >= 0 {
		return o.WriteSentAt
	}
	return o.AckAt()
}

// Rejected reports whether the write was refused by fencing: a fail with
// reason fenced, or a late result that says so. It returns the error text.
func (o *Op) Rejected() (bool, string) {
	if o.Type == history.Fail && o.Comp.Reason == lockappend.ReasonFenced {
		return true, o.Comp.Error
	}
	if o.Late != nil && o.Late.Type == history.Fail && o.Late.Completion.Reason == lockappend.ReasonFenced {
		return true, o.Late.Completion.Error
	}
	return false, ""
}

// RejectedAt is when the client learnt of the rejection.
func (o *Op) RejectedAt() int64 {
	if o.Late != nil && o.Late.Type == history.Fail {
		return o.LateAt
	}
	return o.End
}

// BeliefEnd is when the client stopped believing it held the lock, as the
// overlap checker defines it: releasing/released, else the late result,
// else the completion, else the end of the history.
func (o *Op) BeliefEnd(last int64) int64 {
	e := last
	switch {
	case o.ReleasingAt >= 0:
		e = o.ReleasingAt
	case o.Late != nil:
		e = o.LateAt
	case o.End >= 0:
		e = o.End
	}
	return max(e, o.AcquiredAt)
}

// OpModel is a history's operations as a timeline draws them, with its
// fault windows and the time of its last event.
type OpModel struct {
	Ops    []*Op // in invocation order
	Last   int64
	Faults []history.Fault
}

// TokenOf returns the op's token and whether it is known.
func (o *Op) TokenOf() (int64, bool) {
	if o.Acquired {
		return o.Token, true
	}
	return o.Token, o.Token != 0
}

// laneOf is the worker that ran process p, of workers: process p runs on
// worker p mod workers (after an info the harness retires a process and
// continues with p+workers on the same worker).
// The side writer, which the harness runs itself, has the lane after the
// workers'.
func laneOf(p history.Process, workers int) int {
	if p.IsSideWriter() {
		return max(workers, 0)
	}
	if workers <= 0 {
		return int(p)
	}
	return int(p) % workers
}

// NodeOf names the container of process p, as the harness names workers
// ("side writer" for the side writer, which runs in the harness).
func NodeOf(p history.Process, workers int) string {
	if p.IsSideWriter() {
		return "side writer"
	}
	return "w" + strconv.Itoa(laneOf(p, workers)+1)
}

// Secs formats ns as seconds for prose: "7.45s".
func Secs(ns int64) string {
	if ns < 0 {
		return "never"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 2, 64) + "s"
}
