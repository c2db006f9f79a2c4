package checkers

import (
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
)

// ErrBadHistory is wrapped by every error about a history the checkers
// cannot read: events that do not pair, values that do not decode.
var ErrBadHistory = errors.New("bad history")

// appendOp is one lock-append operation with the values the checkers need
// decoded once.
type appendOp struct {
	op      *history.Op
	element int64
	// comp is the completion's value; zero when the operation never
	// completed or its completion carries no value.
	comp lockappend.Completion
	// acquired is the acquired phase: when the client got the lock, with
	// which token.
	acquired   bool
	acquiredAt int64
	token      int64
	// releasedAt is the time of the releasing (else released) phase, -1
	// without either.
	releasedAt int64
	// late is the late-result phase of an info operation, nil without one.
	late   *lockappend.Late
	lateAt int64
	// readPhase is the read phase's list, decoded only when the completion
	// does not carry the list itself.
	readPhase    []int64
	hasReadPhase bool
}

// finalRead is an ok final read.
type finalRead struct {
	op   *history.Op
	list []int64
}

// AppendHistory is a lock-append history (one lock, one resource),
// decoded once for the checkers that read one: the lock-append workload's
// and the election workload's.
type AppendHistory struct {
	appends []appendOp
	// finals are the ok final reads in invocation order.
	finals []finalRead
	// last is the time of the last event of any operation.
	last int64
}

// Type is the operation's outcome (Info when it never completed).
func (a *appendOp) Type() history.Type { return a.op.Type() }

// tokenOf returns the fencing token of the operation's grant: the acquired
// phase's, else the one its completion or late result carries.
func (a *appendOp) tokenOf() (int64, bool) {
	switch {
	case a.acquired:
		return a.token, true
	case a.comp.Token != 0:
		return a.comp.Token, true
	case a.late != nil && a.late.Completion.Token != 0:
		return a.late.Completion.Token, true
	}
	return 0, false
}

// written returns the list an ok operation wrote: what it read with its
// element appended. A null read of an ok operation is the empty list (the
// client did read; targets may report an empty list as null).
func (a *appendOp) written() []int64 {
	w := make([]int64, 0, len(a.comp.Read)+1)
	return append(append(w, a.comp.Read...), a.element)
}

// knownRead returns the list an info operation read, from the first source
// that knows it: its completion's read, its late result's read, its read
// phase. A null read counts as unknown in a completion that may come from
// before the read (the harness's own info, a fail), and as empty in an ok
// late result and in a read phase, which exist only after a read.
func (a *appendOp) knownRead() ([]int64, bool) {
	switch {
	case a.comp.Read != nil:
		return a.comp.Read, true
	case a.late != nil && (a.late.Completion.Read != nil || a.late.Type == history.Ok):
		return orEmpty(a.late.Completion.Read), true
	case a.hasReadPhase:
		return orEmpty(a.readPhase), true
	}
	return nil, false
}

func orEmpty(l []int64) []int64 {
	if l == nil {
		return []int64{}
	}
	return l
}

// BadOp wraps err for the operation o.
func BadOp(o *history.Op, err error) error {
	return fmt.Errorf("checkers: %w: %s of process %s invoked at event %d: %w",
		ErrBadHistory, o.F, o.Process, o.Invoke.Index, err)
}

// ParseAppendHistory decodes the lock-append operations of ops (other
// functions are skipped). An append invocation without an element, an ok
// completion without a value, a final read without its list, or any value
// that does not decode is an error wrapping ErrBadHistory.
func ParseAppendHistory(ops []history.Op) (*AppendHistory, error) {
	h := &AppendHistory{}
	for i := range ops {
		o := &ops[i]
		h.last = max(h.last, o.Invoke.Time)
		if o.Complete != nil {
			h.last = max(h.last, o.Complete.Time)
		}
		for _, p := range o.Phases {
			h.last = max(h.last, p.Time)
		}
		switch o.F {
		case lockappend.FAppend:
			a, err := parseAppend(o)
			if err != nil {
				return nil, err
			}
			h.appends = append(h.appends, a)
		case lockappend.FFinalRead:
			if o.Type() != history.Ok {
				continue
			}
			list, err := lockappend.ParseFinalRead(o)
			if err != nil {
				return nil, BadOp(o, err)
			}
			h.finals = append(h.finals, finalRead{op: o, list: list})
		}
	}
	return h, nil
}

// parseAppend reads an append with lockappend.ParseAppend, the report's
// reading too.
func parseAppend(o *history.Op) (appendOp, error) {
	p, err := lockappend.ParseAppend(o)
	if err != nil {
		return appendOp{op: o, releasedAt: -1}, BadOp(o, err)
	}
	return appendOp{op: o, element: p.Element, comp: p.Comp, acquired: p.Acquired, acquiredAt: p.AcquiredAt, token: p.Token,
		releasedAt: p.ReleasingAt, late: p.Late, lateAt: p.LateAt, readPhase: p.Read, hasReadPhase: p.HasRead}, nil
}

// lastFinal returns the ok final read that completed last, if any.
func (h *AppendHistory) lastFinal() (finalRead, bool) {
	var best finalRead
	found := false
	for _, f := range h.finals {
		if !found || f.op.Complete.Time >= best.op.Complete.Time {
			best, found = f, true
		}
	}
	return best, found
}

// locate finds where each of the given elements first appears in a list
// the history observed: an ok final read (the last first), or the list any
// append read (completions, late results, read phases). It returns, for each
// element found, the part of that list before the element. The scan stops
// once every element is found.
func (h *AppendHistory) locate(elements map[int64]bool) map[int64][]int64 {
	found := map[int64][]int64{}
	if len(elements) == 0 {
		return found
	}
	scan := func(l []int64) bool {
		for i, x := range l {
			if elements[x] {
				if _, ok := found[x]; !ok {
					found[x] = l[:i:i]
				}
			}
		}
		return len(found) == len(elements)
	}
	for i := len(h.finals) - 1; i >= 0; i-- {
		if scan(h.finals[i].list) {
			return found
		}
	}
	for i := range h.appends {
		a := &h.appends[i]
		if scan(a.comp.Read) || scan(a.readPhase) {
			return found
		}
		if a.late != nil && scan(a.late.Completion.Read) {
			return found
		}
	}
	return found
}

// Linearizable checks h against the append-list model (see
// CheckLinearizable).
func (h *AppendHistory) Linearizable(opts Options) LinearizableResult {
	return checkLinearizable(h, opts)
}

// LostUpdates finds h's lost updates (see CheckLostUpdates).
func (h *AppendHistory) LostUpdates() LostUpdatesResult { return checkLostUpdates(h) }

// Tokens checks that h's tokens only grow (see CheckTokens).
func (h *AppendHistory) Tokens() TokensResult { return checkTokens(h) }

// Overlap finds the windows in which two clients of h believed they held
// the lock (see CheckOverlap).
func (h *AppendHistory) Overlap() OverlapResult { return checkOverlap(h) }

// Stats counts h's operations by outcome (see CheckStats).
func (h *AppendHistory) Stats() StatsResult { return checkStats(h) }
