package checkers

import (
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// ErrBadHistory is wrapped by every error about a history the checkers
// cannot read: events that do not pair, values that do not decode.
var ErrBadHistory = errors.New("bad history")

// AppendOp is one operation of an append-list history: a client takes a
// lock (its grant carries a fencing token), reads a list, and writes it
// back with its own unique element appended. A workload decodes its events
// into these (the lock-append workload's ParseHistory, which the election
// workload runs on its entries too). Times are ns since the start; -1 means
// the phase was not reported.
type AppendOp struct {
	Op      *history.Op
	Element int64
	// Comp is what the completion says; zero when the operation never
	// completed or its completion carries no value.
	Comp Outcome
	// Acquired is the lock's grant: when the client got the lock, with
	// which token.
	Acquired   bool
	AcquiredAt int64
	Token      int64
	// ReleasedAt is when the client began to give the lock up, -1 if it
	// did not say.
	ReleasedAt int64
	// Late is the late result of an info operation, nil without one.
	Late   *LateOutcome
	LateAt int64
	// ReadPhase is the list the client said it read, decoded only when
	// the completion does not carry the list itself (HasReadPhase: it said
	// so).
	ReadPhase    []int64
	HasReadPhase bool
}

// Outcome is what an append's completion, or its late result, says.
type Outcome struct {
	// Token is the fencing token of the grant, 0 if unknown.
	Token int64
	// Read is the list the client read; nil if it read nothing.
	Read []int64
	// Rev is the resource's revision of an acknowledged write, 0 where the
	// resource has none.
	Rev int64
	// Reason says why a fail failed (Error: the underlying error text);
	// Fenced that the resource refused the write by fencing.
	Reason string
	Error  string
	Fenced bool
}

// LateOutcome is the late result of an operation the harness had recorded
// as info: the type the client finally reported, and its outcome.
type LateOutcome struct {
	Type history.Type
	Outcome
}

// FinalRead is an ok final read: the list as it was at the end.
type FinalRead struct {
	Op   *history.Op
	List []int64
}

// AppendHistory is an append-list history (one lock, one resource),
// decoded once for the checkers that read one.
type AppendHistory struct {
	appends []AppendOp
	// finals are the ok final reads in invocation order.
	finals []FinalRead
	// last is the time of the last event of any operation.
	last int64
}

// NewAppendHistory is the history of ops (every operation, of any
// function: the time of its last event counts) whose appends and ok final
// reads a workload decoded, in invocation order.
func NewAppendHistory(ops []history.Op, appends []AppendOp, finals []FinalRead) *AppendHistory {
	h := &AppendHistory{appends: appends, finals: finals}
	for i := range ops {
		o := &ops[i]
		h.last = max(h.last, o.Invoke.Time)
		if o.Complete != nil {
			h.last = max(h.last, o.Complete.Time)
		}
		for _, p := range o.Phases {
			h.last = max(h.last, p.Time)
		}
	}
	return h
}

// Type is the operation's outcome (Info when it never completed).
func (a *AppendOp) Type() history.Type { return a.Op.Type() }

// tokenOf returns the fencing token of the operation's grant: the acquired
// phase's, else the one its completion or late result carries.
func (a *AppendOp) tokenOf() (int64, bool) {
	switch {
	case a.Acquired:
		return a.Token, true
	case a.Comp.Token != 0:
		return a.Comp.Token, true
	case a.Late != nil && a.Late.Token != 0:
		return a.Late.Token, true
	}
	return 0, false
}

// written returns the list an ok operation wrote: what it read with its
// element appended. A null read of an ok operation is the empty list (the
// client did read; targets may report an empty list as null).
func (a *AppendOp) written() []int64 {
	w := make([]int64, 0, len(a.Comp.Read)+1)
	return append(append(w, a.Comp.Read...), a.Element)
}

// knownRead returns the list an info operation read, from the first source
// that knows it: its completion's read, its late result's read, its read
// phase. A null read counts as unknown in a completion that may come from
// before the read (the harness's own info, a fail), and as empty in an ok
// late result and in a read phase, which exist only after a read.
func (a *AppendOp) knownRead() ([]int64, bool) {
	switch {
	case a.Comp.Read != nil:
		return a.Comp.Read, true
	case a.Late != nil && (a.Late.Read != nil || a.Late.Type == history.Ok):
		return orEmpty(a.Late.Read), true
	case a.HasReadPhase:
		return orEmpty(a.ReadPhase), true
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

// lastFinal returns the ok final read that completed last, if any.
func (h *AppendHistory) lastFinal() (FinalRead, bool) {
	var best FinalRead
	found := false
	for _, f := range h.finals {
		if !found || f.Op.Complete.Time >= best.Op.Complete.Time {
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
		if scan(h.finals[i].List) {
			return found
		}
	}
	for i := range h.appends {
		a := &h.appends[i]
		if scan(a.Comp.Read) || scan(a.ReadPhase) {
			return found
		}
		if a.Late != nil && scan(a.Late.Read) {
			return found
		}
	}
	return found
}

// Linearizable checks h against the append-list model (see
// checkLinearizable).
func (h *AppendHistory) Linearizable(opts Options) LinearizableResult {
	return checkLinearizable(h, opts)
}

// LostUpdates finds h's lost updates (see checkLostUpdates).
func (h *AppendHistory) LostUpdates() LostUpdatesResult { return checkLostUpdates(h) }

// Tokens checks that h's tokens only grow (see checkTokens).
func (h *AppendHistory) Tokens() TokensResult { return checkTokens(h) }

// Overlap finds the windows in which two clients of h believed they held
// the lock (see checkOverlap).
func (h *AppendHistory) Overlap() OverlapResult { return checkOverlap(h) }

// Stats counts h's operations by outcome (see checkStats).
func (h *AppendHistory) Stats() StatsResult { return checkStats(h) }
