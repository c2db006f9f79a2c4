package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
)

// laOp is one lock-append critical section with what the report needs
// decoded once. Times are ns since the start; -1 means "not reported".
type laOp struct {
	proc  history.Process
	label string // what the op does, for tooltips: "append 12"
	// writes is true for lock-append critical sections (the generic view
	// draws other workloads' operations as spans only).
	writes  bool
	element int64
	invoke  int64
	end     int64 // completion time, -1 when it never completed
	typ     history.Type
	comp    lockappend.Completion

	acquired   bool
	acquiredAt int64
	token      int64

	readAt  int64
	read    []int64
	hasRead bool

	checkedAt int64
	checked   lockappend.Checked

	writeSentAt int64
	releasingAt int64 // first of releasing and released
	late        *lockappend.Late
	lateAt      int64

	// staleFrom is when the lock was granted with a higher token while this
	// holder still believed it held it (-1: never). staleBy is that grant.
	staleFrom int64
	staleBy   *laOp
	// writeIdx is the position in laModel.writes of this op's landed write,
	// -1 without one.
	writeIdx int
}

// landed reports whether the op's write reached the resource for certain:
// an ok completion, or an ok late result of an info op.
func (o *laOp) landed() bool {
	return o.typ == history.Ok || (o.late != nil && o.late.Type == history.Ok)
}

// writeComp is the completion that tells about the write: the late result's
// when there is one, else the completion's.
func (o *laOp) writeComp() lockappend.Completion {
	if o.late != nil {
		return o.late.Completion
	}
	return o.comp
}

// ackAt is when the client was told its write succeeded (or failed): the
// late result's time when there is one, else the completion's.
func (o *laOp) ackAt() int64 {
	if o.late != nil {
		return o.lateAt
	}
	return o.end
}

// writeAt is the best-known time the write left: the write-sent phase, else
// the acknowledgement.
func (o *laOp) writeAt() int64 {
	if o.writeSentAt >= 0 {
		return o.writeSentAt
	}
	return o.ackAt()
}

// readList is the list the op read: from its completion, its late result or
// its read phase.
func (o *laOp) readList() ([]int64, bool) {
	switch {
	case o.comp.Read != nil:
		return o.comp.Read, true
	case o.late != nil && (o.late.Completion.Read != nil || o.late.Type == history.Ok):
		return o.late.Completion.Read, true
	case o.hasRead:
		return o.read, true
	}
	return nil, false
}

// rejected reports whether the write was refused by fencing: a fail with
// reason fenced, or a late result that says so. It returns the error text.
func (o *laOp) rejected() (bool, string) {
	if o.typ == history.Fail && o.comp.Reason == lockappend.ReasonFenced {
		return true, o.comp.Error
	}
	if o.late != nil && o.late.Type == history.Fail && o.late.Completion.Reason == lockappend.ReasonFenced {
		return true, o.late.Completion.Error
	}
	return false, ""
}

// rejectedAt is when the client learnt of the rejection.
func (o *laOp) rejectedAt() int64 {
	if o.late != nil && o.late.Type == history.Fail {
		return o.lateAt
	}
	return o.end
}

// beliefEnd is when the client stopped believing it held the lock, as the
// overlap checker defines it: releasing/released, else the late result,
// else the completion, else the end of the history.
func (o *laOp) beliefEnd(last int64) int64 {
	e := last
	switch {
	case o.releasingAt >= 0:
		e = o.releasingAt
	case o.late != nil:
		e = o.lateAt
	case o.end >= 0:
		e = o.end
	}
	return max(e, o.acquiredAt)
}

// wroteHas reports whether the list the op wrote holds x: the list it read
// with its own element appended. It searches from the end, where recent
// elements are.
func (o *laOp) wroteHas(x int64) bool {
	if o.element == x {
		return true
	}
	l, _ := o.readList()
	for i := len(l) - 1; i >= 0; i-- {
		if l[i] == x {
			return true
		}
	}
	return false
}

// laModel is a lock-append history decoded for the report.
type laModel struct {
	ops []*laOp // in invocation order
	// byElement maps an element to its append.
	byElement map[int64]*laOp
	// grants are the ops with an acquired phase, by grant time.
	grants []*laOp
	// writes are the ops whose write landed, in the order the resource
	// applied them: by revision when every landed write has one, else by
	// acknowledgement time.
	writes []*laOp
	// maxTok[i] is the highest token among writes[:i] (0 for none), and
	// maxBy[i] the write that carried it.
	maxTok []int64
	maxBy  []*laOp
	// byAck are the writes by acknowledgement time, with the running
	// highest token likewise (ackMaxTok[i] over byAck[:i]).
	byAck     []*laOp
	ackMaxTok []int64
	ackMaxBy  []*laOp
	// final is the list of the last ok final read.
	final    []int64
	hasFinal bool
	finalAt  int64
	// last is the time of the history's last event; faults its fault
	// windows.
	last   int64
	faults []history.Fault
	// skipped counts operations whose values did not decode (the report
	// shows what it can; the checkers say what is wrong).
	skipped int
}

// buildLockAppend decodes a lock-append history. It is tolerant: an
// operation whose values do not decode is skipped and counted.
func buildLockAppend(events []history.Event) (*laModel, error) {
	ops, err := history.Pair(events)
	if err != nil {
		return nil, err
	}
	return buildFromOps(ops, events), nil
}

// buildFromOps decodes the lock-append operations ops of the history
// events (a resource's projection, in a run with several).
func buildFromOps(ops []history.Op, events []history.Event) *laModel {
	m := &laModel{byElement: make(map[int64]*laOp, len(ops))}
	m.faults, _ = history.Faults(events)
	for _, e := range events {
		m.last = max(m.last, e.Time)
	}
	for i := range ops {
		o := &ops[i]
		switch o.F {
		case lockappend.FAppend:
			a, err := decodeAppend(o)
			if err != nil {
				m.skipped++
				continue
			}
			m.ops = append(m.ops, a)
			if _, dup := m.byElement[a.element]; !dup {
				m.byElement[a.element] = a
			}
		case lockappend.FFinalRead:
			if o.Type() != history.Ok {
				continue
			}
			list, err := lockappend.ParseFinalRead(o)
			if err != nil {
				m.skipped++
				continue
			}
			if !m.hasFinal || o.Complete.Time >= m.finalAt {
				m.final, m.hasFinal, m.finalAt = list, true, o.Complete.Time
			}
		}
	}
	m.order()
	return m
}

// decodeAppend reads an append as the checkers do
// (lockappend.ParseAppend): an operation they reject, the report skips.
func decodeAppend(o *history.Op) (*laOp, error) {
	p, err := lockappend.ParseAppend(o)
	if err != nil {
		return nil, err
	}
	a := &laOp{proc: o.Process, invoke: o.Invoke.Time, end: o.End(), typ: o.Type(), staleFrom: -1, writeIdx: -1,
		writes: true, element: p.Element, label: "append " + strconv.FormatInt(p.Element, 10), comp: p.Comp,
		acquired: p.Acquired, acquiredAt: p.AcquiredAt, token: p.Token, readAt: p.ReadAt, read: p.Read, hasRead: p.HasRead,
		checkedAt: p.CheckedAt, checked: p.Checked, writeSentAt: p.WriteSentAt, releasingAt: p.ReleasingAt, late: p.Late, lateAt: p.LateAt}
	if !a.acquired {
		// A completion or late result may carry the token without the
		// phase (a worker that reported none).
		if t := a.writeComp().Token; t != 0 {
			a.token = t
		}
	}
	return a, nil
}

// tokenOf returns the op's token and whether it is known.
func (o *laOp) tokenOf() (int64, bool) {
	if o.acquired {
		return o.token, true
	}
	return o.token, o.token != 0
}

// order fills grants, writes, the running highest token, and each grant's
// staleness.
func (m *laModel) order() {
	allRev := true
	for _, o := range m.ops {
		if o.acquired {
			m.grants = append(m.grants, o)
		}
		if o.landed() {
			m.writes = append(m.writes, o)
			if o.writeComp().Rev <= 0 {
				allRev = false
			}
		}
	}
	slices.SortStableFunc(m.grants, func(x, y *laOp) int { return cmp.Compare(x.acquiredAt, y.acquiredAt) })
	if allRev {
		slices.SortStableFunc(m.writes, func(x, y *laOp) int { return cmp.Compare(x.writeComp().Rev, y.writeComp().Rev) })
	} else {
		slices.SortStableFunc(m.writes, func(x, y *laOp) int { return cmp.Compare(x.ackAt(), y.ackAt()) })
	}
	m.maxTok = make([]int64, len(m.writes)+1)
	m.maxBy = make([]*laOp, len(m.writes)+1)
	for i, w := range m.writes {
		w.writeIdx = i
		m.maxTok[i+1], m.maxBy[i+1] = m.maxTok[i], m.maxBy[i]
		if t, ok := w.tokenOf(); ok && t > m.maxTok[i] {
			m.maxTok[i+1], m.maxBy[i+1] = t, w
		}
	}
	m.byAck = slices.Clone(m.writes)
	slices.SortStableFunc(m.byAck, func(x, y *laOp) int { return cmp.Compare(x.ackAt(), y.ackAt()) })
	m.ackMaxTok = make([]int64, len(m.byAck)+1)
	m.ackMaxBy = make([]*laOp, len(m.byAck)+1)
	for i, w := range m.byAck {
		m.ackMaxTok[i+1], m.ackMaxBy[i+1] = m.ackMaxTok[i], m.ackMaxBy[i]
		if t, ok := w.tokenOf(); ok && t > m.ackMaxTok[i] {
			m.ackMaxTok[i+1], m.ackMaxBy[i+1] = t, w
		}
	}
	// A holder is stale from the first later grant with a higher token
	// that comes while it still believes it holds the lock: the next
	// greater token in grant order, found with a stack from the right.
	var stack []*laOp
	for i := len(m.grants) - 1; i >= 0; i-- {
		g := m.grants[i]
		for len(stack) > 0 && stack[len(stack)-1].token <= g.token {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			if n := stack[len(stack)-1]; n.acquiredAt < g.beliefEnd(m.last) {
				g.staleFrom, g.staleBy = n.acquiredAt, n
			}
		}
		stack = append(stack, g)
	}
}

// highestBefore returns the highest token among the writes the resource
// applied before the write at position i, and the write that carried it.
func (m *laModel) highestBefore(i int) (int64, *laOp) {
	if i < 0 || i >= len(m.maxTok) {
		return 0, nil
	}
	return m.maxTok[i], m.maxBy[i]
}

// highestBeforeTime is highestBefore for a write that did not land: the
// highest token among the writes acknowledged before t.
func (m *laModel) highestBeforeTime(t int64) (int64, *laOp) {
	i, _ := slices.BinarySearchFunc(m.byAck, t, func(w *laOp, t int64) int { return cmp.Compare(w.ackAt(), t) })
	return m.ackMaxTok[i], m.ackMaxBy[i]
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

// nodeOf names the container of process p, as the harness names workers
// ("side writer" for the side writer, which runs in the harness).
func nodeOf(p history.Process, workers int) string {
	if p.IsSideWriter() {
		return "side writer"
	}
	return "w" + strconv.Itoa(laneOf(p, workers)+1)
}

// describeList writes a list short: whole when it is short, else its first
// and last elements and its length.
func describeList(l []int64) string {
	if len(l) <= 6 {
		return "[" + describeElements(l, 6) + "]"
	}
	return fmt.Sprintf("[%d, %d, … %d, %d] (%d elements)", l[0], l[1], l[len(l)-2], l[len(l)-1], len(l))
}

// describeElements lists elements, at most max of them.
func describeElements(xs []int64, maxShown int) string {
	s := ""
	for i, x := range xs {
		if i == maxShown {
			return s + fmt.Sprintf(" and %d more", len(xs)-maxShown)
		}
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatInt(x, 10)
	}
	return s
}

// secs formats ns as seconds for prose: "7.45s".
func secs(ns int64) string {
	if ns < 0 {
		return "never"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 2, 64) + "s"
}
