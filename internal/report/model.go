package report

import (
	"strconv"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Op is an operation as a timeline draws it: its span (invocation to
// completion) and, for an operation that takes a lock and writes (a
// critical section), the phases it reported, decoded once by its
// workload's view. Times are ns since the start; -1 means "not reported".
type Op struct {
	Proc  history.Process
	Label string // what the op does, for tooltips: "append 12"
	// Writes is true for an operation whose write the timeline draws (a
	// critical section); the generic view draws operations as spans only.
	Writes bool
	Invoke int64
	End    int64 // completion time, -1 when it never completed
	Type   history.Type
	// CriticalSection is what the operation's phases say of a critical
	// section; an operation of another kind has its times at -1
	// (NoCriticalSection).
	CriticalSection

	// StaleFrom is when the lock was granted with a higher token while this
	// holder still believed it held it (-1: never); in a run whose grants
	// carry no token, when it was next granted to another client. StaleBy
	// is that grant.
	StaleFrom int64
	StaleBy   *Op
	// WriteIdx is the position of the op's landed write among the writes
	// in the order the resource applied them, -1 without one (set by the
	// view that orders them).
	WriteIdx int
}

// CriticalSection is what a critical section reported, as a workload's view
// decodes it from its own events: the lock's grant, the read, the lease
// check, the write and the release. Times are ns since the start; -1
// means the phase was not reported.
type CriticalSection struct {
	// Element is what the section wrote, named in the timeline's titles.
	Element int64
	// Comp is what the completion says of the write: zero when the
	// operation never completed, or completed other than ok without a
	// value.
	Comp checkers.Outcome
	// Acquired is the first grant: when the client got the lock, with
	// which token (AcquiredAt 0 without one).
	Acquired   bool
	AcquiredAt int64
	Token      int64
	// ReadAt is the first read's time (HasRead: the read was reported).
	ReadAt  int64
	HasRead bool
	// ReadList is the list the operation read, as its view takes it (a
	// lock-append operation's: from its completion, its late result or
	// its read phase), packed: a million operations' lists, unpacked, are
	// most of a report's memory (HasReadList: it read one).
	ReadList    Ints
	HasReadList bool
	// CheckedAt and Checked are the first lease check.
	CheckedAt int64
	Checked   LeaseCheck
	// WriteSentAt is when the write left.
	WriteSentAt int64
	// ReleasingAt is when the client began to give the lock up: from
	// then on it no longer believed it held it.
	ReleasingAt int64
	// Late is the late result of an info operation, nil without one.
	Late   *checkers.LateOutcome
	LateAt int64
}

// LeaseCheck is a client's check of its lease before its write: the time
// it believed it had left, and whether that was above its safety margin.
type LeaseCheck struct {
	RemainingMS int64
	OK          bool
}

// NoCriticalSection is the CriticalSection of an operation that is no critical section:
// every phase time -1.
var NoCriticalSection = CriticalSection{ReadAt: -1, CheckedAt: -1, WriteSentAt: -1, ReleasingAt: -1, LateAt: -1}

// Landed reports whether the op's write reached the resource for certain:
// an ok completion, or an ok late result of an info op.
func (o *Op) Landed() bool {
	return o.Type == history.Ok || (o.Late != nil && o.Late.Type == history.Ok)
}

// WriteComp is the outcome that tells about the write: the late result's
// when there is one, else the completion's.
func (o *Op) WriteComp() checkers.Outcome {
	if o.Late != nil {
		return o.Late.Outcome
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
	if o.Type == history.Fail && o.Comp.Fenced {
		return true, o.Comp.Error
	}
	if o.Late != nil && o.Late.Type == history.Fail && o.Late.Fenced {
		return true, o.Late.Error
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
func NodeOf(p history.Process, workers int) string { return p.Worker(workers) }

// Secs formats ns as seconds for prose: "7.45s".
func Secs(ns int64) string {
	if ns < 0 {
		return "never"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 2, 64) + "s"
}
