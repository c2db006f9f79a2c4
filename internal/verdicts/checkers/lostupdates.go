package checkers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// LostUpdates is the lost-update count of a lock-append run, as results.json
// carries it at the top level.
type LostUpdates struct {
	// Acknowledged is the number of appends that completed ok.
	Acknowledged int `json:"acknowledged"`
	// Lost is the number of acknowledged elements missing from the final
	// read.
	Lost int `json:"lost"`
	// Elements are the lost elements, by acknowledgement time. Never null in
	// JSON.
	Elements []LostElement `json:"elements"`
}

// LostElement is one acknowledged element missing from the final read.
type LostElement struct {
	Element int64           `json:"element"`
	Process history.Process `json:"process"`
	// Resource is the resource that lost it, in a run with several.
	Resource string `json:"resource,omitempty"`
	// Lock is the lock whose list lost it, in a run with several
	// (--locks): the lock-append workload's LockName, "lock-2".
	Lock string `json:"lock,omitempty"`
	// SideWriter is true when the element was the side writer's
	// (--side-writer): its batch, with no lock, landed inside a holder's
	// critical section, whose write then erased it.
	SideWriter bool `json:"side_writer,omitempty"`
	// Token is the fencing token of the append's grant (0 when unknown).
	Token int64 `json:"token"`
	// Acknowledged is when the append completed ok (ns since the start).
	Acknowledged int64 `json:"acknowledged_ns"`
	// OverwrittenBy is the write that replaced the list holding the
	// element, nil when the final read does not tell.
	OverwrittenBy *Overwrite `json:"overwritten_by,omitempty"`
}

// Overwrite is the write that destroyed a lost element: the final list
// leaves the lost write's list at some position, and the element there was
// appended by a writer that read an older list (or, when the final list is a
// proper prefix of the lost write's list, by the writer of the final list,
// whose older write landed last).
type Overwrite struct {
	Element int64 `json:"element"`
	// Known is false when no append of the history has that element; the
	// fields below are then zero.
	Known   bool            `json:"known"`
	Process history.Process `json:"process"`
	Token   int64           `json:"token"`
	// Type is the overwriting append's outcome in the history: ok, fail or
	// info; Late is the type of its late result, if it has one.
	Type history.Type `json:"type,omitempty"`
	Late string       `json:"late,omitempty"`
	// Stale is true when the overwriter's token is lower than the lost
	// append's: the write came from a holder whose lease had been
	// superseded.
	Stale bool `json:"stale"`
	// SideWriter is true when the write came from the side writer
	// (--side-writer), which takes no lock and sends no token.
	SideWriter bool `json:"side_writer,omitempty"`
}

// LostUpdatesResult is the verdict on lost updates: Invalid when an
// acknowledged element is missing from the final read, Unknown without a
// final read.
type LostUpdatesResult struct {
	Verdict
	LostUpdates
	// Percent is Lost / Acknowledged * 100 (0 when nothing was
	// acknowledged).
	Percent float64 `json:"percent"`
	// FirstLostNS is when the first acknowledged element was destroyed
	// (ns since the start), nil when none was.
	FirstLostNS *int64 `json:"first_lost_ns,omitempty"`
}

// firstLoss returns when the first acknowledged element was destroyed: for
// each lost element, the later of its own acknowledgement and the
// acknowledgement (completion or late result) of the write that erased it;
// the earliest of these; nil when nothing was lost.
func firstLoss(lost []LostElement, byElement map[int64]*AppendOp) *int64 {
	var first *int64
	for _, e := range lost {
		t := e.Acknowledged
		if w := e.OverwrittenBy; w != nil && w.Known {
			if a, ok := byElement[w.Element]; ok {
				if at, ok := a.ackedAt(); ok && at > t {
					t = at
				}
			}
		}
		if first == nil || t < *first {
			first = &t
		}
	}
	return first
}

// checkLostUpdates checks that every element whose append completed ok is
// in the final read (the ok final read that completed last). Without a
// final read the result is Unknown. Each lost element names the write that
// overwrote it; see Overwrite.
func checkLostUpdates(h *AppendHistory) LostUpdatesResult {
	res := LostUpdatesResult{LostUpdates: LostUpdates{Elements: []LostElement{}}}
	var acked []*AppendOp
	for i := range h.appends {
		if a := &h.appends[i]; a.Type() == history.Ok {
			acked = append(acked, a)
		}
	}
	res.Acknowledged = len(acked)
	final, ok := h.lastFinal()
	if !ok {
		res.Valid = Unknown
		res.Message = fmt.Sprintf("no final read: cannot tell whether %d acknowledged elements survived", res.Acknowledged)
		return res
	}
	in := make(map[int64]bool, len(final.List))
	for _, x := range final.List {
		in[x] = true
	}
	byElement := make(map[int64]*AppendOp, len(h.appends))
	for i := range h.appends {
		a := &h.appends[i]
		if _, dup := byElement[a.Element]; !dup {
			byElement[a.Element] = a
		}
	}
	for _, a := range acked {
		if in[a.Element] {
			continue
		}
		tok, _ := a.tokenOf()
		res.Elements = append(res.Elements, LostElement{
			Element:       a.Element,
			Process:       a.Op.Process,
			SideWriter:    a.Op.Process.IsSideWriter(),
			Token:         tok,
			Acknowledged:  a.Op.Complete.Time,
			OverwrittenBy: overwriter(a, final.List, byElement),
		})
	}
	slices.SortStableFunc(res.Elements, func(x, y LostElement) int {
		switch {
		case x.Acknowledged < y.Acknowledged:
			return -1
		case x.Acknowledged > y.Acknowledged:
			return 1
		}
		return 0
	})
	res.Lost = len(res.Elements)
	res.FirstLostNS = firstLoss(res.Elements, byElement)
	if res.Acknowledged > 0 {
		res.Percent = float64(res.Lost) / float64(res.Acknowledged) * 100
	}
	if res.Lost > 0 {
		res.Valid = Invalid
		res.Message = fmt.Sprintf("%d of %d acknowledged elements lost (%.1f%%)", res.Lost, res.Acknowledged, res.Percent)
	} else {
		res.Valid = Valid
		res.Message = fmt.Sprintf("all %d acknowledged elements are in the final read", res.Acknowledged)
	}
	return res
}

// overwriter finds who destroyed lost's element. Every written list ends
// with its writer's element, and the final list f was built by a chain of
// writes f[:1], f[:2], ... that landed in that order. Where f first differs
// from the lost write's list w (position k), the chain left w's line; the
// write that erased the element is the first write of the chain from
// position k on that landed after w (by the resource's revisions where both
// have one, else by acknowledgement time): the chain's write at position k
// itself may have landed before w, when w was a stale write that landed
// inside the next holder's critical section. When f is a proper prefix of
// w, f's own writer's (older) write landed after w.
func overwriter(lost *AppendOp, f []int64, byElement map[int64]*AppendOp) *Overwrite {
	w := lost.written()
	k := 0
	for k < len(w) && k < len(f) && w[k] == f[k] {
		k++
	}
	var e int64
	switch {
	case k < len(f):
		e = f[k]
		for j := k; j < len(f); j++ {
			if a, ok := byElement[f[j]]; ok && landedAfter(a, lost) {
				e = f[j]
				break
			}
		}
	case len(f) > 0:
		e = f[len(f)-1]
	default:
		return nil
	}
	o := &Overwrite{Element: e}
	a, ok := byElement[e]
	if !ok {
		return o
	}
	o.Known, o.Process, o.Type = true, a.Op.Process, a.Type()
	o.SideWriter = a.Op.Process.IsSideWriter()
	if a.Late != nil {
		o.Late = string(a.Late.Type)
	}
	tok, known := a.tokenOf()
	o.Token = tok
	lostTok, lostKnown := lost.tokenOf()
	o.Stale = known && lostKnown && tok < lostTok
	return o
}

// landedAfter reports whether a's write landed after b's: by the resource's
// revisions when both have one, else by when they were acknowledged (a
// late result counts for an info operation; an operation with neither did
// not land knowably and is not after anything).
func landedAfter(a, b *AppendOp) bool {
	if ra, rb := a.rev(), b.rev(); ra > 0 && rb > 0 {
		return ra > rb
	}
	ta, oka := a.ackedAt()
	tb, okb := b.ackedAt()
	return oka && okb && ta > tb
}

// rev is the resource's revision of the operation's acknowledged write (its
// completion's, or its late result's), 0 when unknown.
func (a *AppendOp) rev() int64 {
	if a.Comp.Rev > 0 {
		return a.Comp.Rev
	}
	if a.Late != nil {
		return a.Late.Rev
	}
	return 0
}

// ackedAt is when the operation's write was acknowledged: its ok
// completion, or its late result's.
func (a *AppendOp) ackedAt() (int64, bool) {
	switch {
	case a.Type() == history.Ok:
		return a.Op.Complete.Time, true
	case a.Late != nil && a.Late.Type == history.Ok:
		return a.LateAt, true
	}
	return 0, false
}

// Describe tells in words whose acknowledged element was lost and whose
// write erased it, each client named by its worker (history.Process.Worker
// of workers, as the report's timeline names its lanes), the stale holder
// named as such where the eraser's token was the lower (Overwrite.Stale):
// "w3's stale write (token 25) erased w2's acknowledged element 11";
// otherwise the eraser is named without a judgement ("w2's write (token
// 65) erased w3's acknowledged element 11"): the lost element's own write
// may have been the stale one, or the server may have lost its state,
// which the report's stories tell from the whole history. A token is
// shown only where the grant had one (0 is none: a client without
// tokens). Where the two are one worker's processes, told apart by the
// unknown outcomes between them, the words say which came after how many
// (history.Process.Unknowns), never a process number: "w1's stale write
// (token 1), made after an unknown outcome, erased w1's acknowledged
// element 2".
func (e LostElement) Describe(workers int) string {
	name := func(p history.Process) string { return p.Worker(workers) }
	// after says when p, a process of the same worker as the other
	// side's, came after unknown outcomes: "" otherwise.
	after := func(p, other history.Process) string {
		if w := e.OverwrittenBy; w == nil || !w.Known || w.SideWriter || e.SideWriter || p == other || name(p) != name(other) {
			return ""
		}
		return history.AfterUnknowns(p.Unknowns(workers))
	}
	own := fmt.Sprintf("%s's acknowledged element %d", name(e.Process), e.Element)
	if e.OverwrittenBy != nil {
		if a := after(e.Process, e.OverwrittenBy.Process); a != "" {
			own += " (appended " + a + ")"
		}
	}
	if e.SideWriter {
		own = fmt.Sprintf("the side writer's acknowledged element %d (no lock, no token)", e.Element)
	}
	if e.Resource != "" {
		own += " in " + e.Resource
	}
	if e.Lock != "" {
		own += " of " + e.Lock
	}
	w := e.OverwrittenBy
	if w == nil || !w.Known {
		return own + " is lost (the final read does not tell which write erased it)"
	}
	made := TokenPhrase(w.Token)
	if a := after(w.Process, e.Process); a != "" {
		made += ", made " + a + ","
	}
	switch {
	case w.SideWriter:
		return "the side writer's write (no lock, no token) erased " + own
	case w.Type != "" && w.Type != history.Ok && w.Late != string(history.Ok):
		return fmt.Sprintf("%s's write%s, whose outcome the harness never learnt (%s), erased %s", name(w.Process), strings.TrimSuffix(made, ","), w.Type, own)
	case w.Stale:
		return fmt.Sprintf("%s's stale write%s erased %s", name(w.Process), made, own)
	}
	return fmt.Sprintf("%s's write%s erased %s", name(w.Process), made, own)
}

// TokenPhrase is " (token N)", or nothing for a grant without a token (0).
func TokenPhrase(token int64) string {
	if token == 0 {
		return ""
	}
	return fmt.Sprintf(" (token %d)", token)
}
