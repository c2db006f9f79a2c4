package view

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	wlockappend "github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/report"
)

// model is a lock-append history decoded for the report: its operations
// as the timeline draws them, and what the stories look up in them.
type model struct {
	*report.OpModel
	// byElement maps an element to its append.
	byElement map[int64]*report.Op
	// grants are the ops with an acquired phase, by grant time.
	grants []*report.Op
	// writes are the ops whose write landed, in the order the resource
	// applied them: by revision when every landed write has one, else by
	// acknowledgement time.
	writes []*report.Op
	// final is the list of the last ok final read.
	final    []int64
	hasFinal bool
	finalAt  int64
	// skipped counts operations whose values did not decode (the report
	// shows what it can; the checkers say what is wrong).
	skipped int
}

// readList is the list the op read: from its completion, its late result or
// its read phase, as decodeAppend packed it (a new slice each call).
func readList(o *report.Op) ([]int64, bool) {
	if !o.HasReadList {
		return nil, false
	}
	return o.ReadList.List(), true
}

// buildLockAppend decodes a lock-append history as each hands it over
// (report.Input.EachEvent: the file as it streams), holding each
// operation's events only until its process invokes its next one
// (history.Pairer). It is tolerant: an operation whose values do not
// decode is skipped and counted.
func buildLockAppend(each func(func(history.Event) error) error) (*model, error) {
	b := newBuilder()
	p := history.NewPairer(b.op)
	if err := each(func(e history.Event) error {
		b.event(e)
		return p.Add(e)
	}); err != nil {
		return nil, err
	}
	p.Flush()
	return b.done(), nil
}

// buildFromOps decodes the lock-append operations ops of the history
// events (a resource's projection, in a run with several).
func buildFromOps(ops []history.Op, events []history.Event) *model {
	b := newBuilder()
	for _, e := range events {
		b.event(e)
	}
	for i, o := range ops {
		b.op(i, o)
	}
	return b.done()
}

// builder makes a model from a history's events and operations, each
// operation with its place in invocation order (Pair's), in any order.
type builder struct {
	m       *model
	nemesis []history.Event
	appends []seqOp
	// finalSeq is the place of the final read kept (the latest; of two
	// at one time, the later invoked).
	finalSeq int
}

// seqOp is a decoded append and its place in invocation order.
type seqOp struct {
	seq int
	op  *report.Op
}

func newBuilder() *builder {
	return &builder{m: &model{OpModel: &report.OpModel{}}}
}

// event notes an event: its time, and a fault's.
func (b *builder) event(e history.Event) {
	b.m.Last = max(b.m.Last, e.Time)
	if e.Process == history.Nemesis {
		b.nemesis = append(b.nemesis, e)
	}
}

// op decodes the operation at place seq of invocation order.
func (b *builder) op(seq int, o history.Op) {
	m := b.m
	switch o.F {
	case lockappend.FAppend:
		a, err := decodeAppend(&o)
		if err != nil {
			m.skipped++
			return
		}
		b.appends = append(b.appends, seqOp{seq, a})
	case lockappend.FFinalRead:
		if o.Type() != history.Ok {
			return
		}
		list, err := lockappend.ParseFinalRead(&o)
		if err != nil {
			m.skipped++
			return
		}
		at := o.Complete.Time
		if !m.hasFinal || at > m.finalAt || (at == m.finalAt && seq > b.finalSeq) {
			m.final, m.hasFinal, m.finalAt, b.finalSeq = list, true, at, seq
		}
	}
}

// done orders the model: its appends in invocation order (the first of
// an element's appends is the element's), its faults, its grants and
// writes.
func (b *builder) done() *model {
	m := b.m
	m.Faults, _ = history.Faults(b.nemesis)
	slices.SortFunc(b.appends, func(x, y seqOp) int { return cmp.Compare(x.seq, y.seq) })
	m.Ops = make([]*report.Op, 0, len(b.appends))
	m.byElement = make(map[int64]*report.Op, len(b.appends))
	for _, a := range b.appends {
		m.Ops = append(m.Ops, a.op)
		if _, dup := m.byElement[a.op.Element]; !dup {
			m.byElement[a.op.Element] = a.op
		}
	}
	b.appends = nil
	m.order()
	return m
}

// decodeAppend reads an append as the checkers do
// (lockappend.ParseAppend): an operation they reject, the report skips.
func decodeAppend(o *history.Op) (*report.Op, error) {
	p, err := lockappend.ParseAppend(o)
	if err != nil {
		return nil, err
	}
	a := &report.Op{Proc: o.Process, Invoke: o.Invoke.Time, End: o.End(), Type: o.Type(), StaleFrom: -1, WriteIdx: -1,
		Writes: true, Label: "append " + strconv.FormatInt(p.Element, 10), CriticalSection: report.CriticalSection{
			Element: p.Element, Comp: wlockappend.Outcome(p.Comp), Acquired: p.Acquired, AcquiredAt: p.AcquiredAt, Token: p.Token,
			ReadAt: p.ReadAt, HasRead: p.HasRead, CheckedAt: p.CheckedAt, Checked: report.LeaseCheck(p.Checked),
			WriteSentAt: p.WriteSentAt, ReleasingAt: p.ReleasingAt, Late: wlockappend.LateOutcome(p.Late), LateAt: p.LateAt}}
	// The list the op read, packed: one list an operation, at a byte or
	// two an element, in a history of millions; the decoded ones go.
	switch {
	case a.Comp.Read != nil:
		a.ReadList, a.HasReadList = report.PackInts(a.Comp.Read), true
	case a.Late != nil && (a.Late.Read != nil || a.Late.Type == history.Ok):
		a.ReadList, a.HasReadList = report.PackInts(a.Late.Read), true
	case p.HasRead:
		a.ReadList, a.HasReadList = report.PackInts(p.Read), true
	}
	a.Comp.Read = nil
	if a.Late != nil && a.Late.Read != nil {
		late := *a.Late
		late.Read = nil
		a.Late = &late
	}
	if !a.Acquired {
		// A completion or late result may carry the token without the
		// phase (a worker that reported none).
		if t := a.WriteComp().Token; t != 0 {
			a.Token = t
		}
	}
	return a, nil
}

// order fills grants, writes and each grant's
// staleness.
func (m *model) order() {
	allRev := true
	for _, o := range m.Ops {
		if o.Acquired {
			m.grants = append(m.grants, o)
		}
		if o.Landed() {
			m.writes = append(m.writes, o)
			if o.WriteComp().Rev <= 0 {
				allRev = false
			}
		}
	}
	slices.SortStableFunc(m.grants, func(x, y *report.Op) int { return cmp.Compare(x.AcquiredAt, y.AcquiredAt) })
	if allRev {
		slices.SortStableFunc(m.writes, func(x, y *report.Op) int { return cmp.Compare(x.WriteComp().Rev, y.WriteComp().Rev) })
	} else {
		slices.SortStableFunc(m.writes, func(x, y *report.Op) int { return cmp.Compare(x.AckAt(), y.AckAt()) })
	}
	for i, w := range m.writes {
		w.WriteIdx = i
	}
	// A holder is stale from the first later grant with a higher token
	// that comes while it still believes it holds the lock: the next
	// greater token in grant order, found with a stack from the right.
	var stack []*report.Op
	for i := len(m.grants) - 1; i >= 0; i-- {
		g := m.grants[i]
		for len(stack) > 0 && stack[len(stack)-1].Token <= g.Token {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			if n := stack[len(stack)-1]; n.AcquiredAt < g.BeliefEnd(m.Last) {
				g.StaleFrom, g.StaleBy = n.AcquiredAt, n
			}
		}
		stack = append(stack, g)
	}
	if m.tokenless() {
		m.staleByGrantOrder()
	}
}

// staleByGrantOrder sets each grant's staleness in a run whose grants
// carry no token: no token orders them, so the order the run recorded
// does. A holder is stale from the first later grant to another client
// that comes while it still believes it holds the lock: the lock had
// passed on, and the holder did not know it.
func (m *model) staleByGrantOrder() {
	for i, g := range m.grants {
		be := g.BeliefEnd(m.Last)
		for _, n := range m.grants[i+1:] {
			if n.AcquiredAt >= be {
				break
			}
			if n.Proc != g.Proc && n.AcquiredAt >= g.AcquiredAt {
				g.StaleFrom, g.StaleBy = n.AcquiredAt, n
				break
			}
		}
	}
}

// tokenless reports whether no grant of the history carried a fencing
// token (token 0 is none: a lock without tokens, as the token checker
// counts it).
func (m *model) tokenless() bool {
	for _, g := range m.grants {
		if g.Token != 0 {
			return false
		}
	}
	return true
}

// raise is one operation's raising of the resource's highest accepted
// token: a landed write, at its acknowledgement, or, where reads are
// fenced, a read, at the time the client reported it (the resource had
// raised the fence by then).
type raise struct {
	at   int64
	tok  int64
	op   *report.Op
	read bool
}

// raises are the operations that raised the resource's highest accepted
// token, in time order: each landed write with a token, and, when reads
// raise the fence too (token fencing: a fenced read raises the highest
// token to the reader's, or is refused), each reported read of a section
// with a token. A refused read raised nothing, and reports no read.
func (m *model) raises(reads bool) []raise {
	var out []raise
	for _, o := range m.Ops {
		tok, ok := o.TokenOf()
		if !ok || tok == 0 {
			continue
		}
		if reads && o.HasRead && o.ReadAt >= 0 {
			out = append(out, raise{at: o.ReadAt, tok: tok, op: o, read: true})
		}
		if o.Landed() && o.AckAt() >= 0 {
			out = append(out, raise{at: o.AckAt(), tok: tok, op: o})
		}
	}
	slices.SortStableFunc(out, func(x, y raise) int { return cmp.Compare(x.at, y.at) })
	return out
}

// highestRaised is the raise that set the highest token of rs (in time
// order) at or before t: the first to reach that token. ok is false when
// none did.
func highestRaised(rs []raise, t int64) (r raise, ok bool) {
	for _, x := range rs {
		if x.at > t {
			break
		}
		if !ok || x.tok > r.tok {
			r, ok = x, true
		}
	}
	return r, ok
}

// firstRaiseOf is the first raise of rs to token tok: the operation that
// set the highest token to tok. ok is false when none carried it.
func firstRaiseOf(rs []raise, tok int64) (raise, bool) {
	for _, x := range rs {
		if x.tok == tok {
			return x, true
		}
	}
	return raise{}, false
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
