package lockappend

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// ParseHistory decodes the lock-append operations of ops (other functions
// are skipped) as the append-list history the checkers read. An append
// invocation without an element, an ok completion without a value, a final
// read without its list, or any value that does not decode is an error
// wrapping checkers.ErrBadHistory. The election workload runs it on its
// entries, written as lock-append events.
func ParseHistory(ops []history.Op) (*checkers.AppendHistory, error) {
	var appends []checkers.AppendOp
	var finals []checkers.FinalRead
	for i := range ops {
		o := &ops[i]
		switch o.F {
		case la.FAppend:
			a, err := parseAppend(o)
			if err != nil {
				return nil, err
			}
			appends = append(appends, a)
		case la.FFinalRead:
			if o.Type() != history.Ok {
				continue
			}
			list, err := la.ParseFinalRead(o)
			if err != nil {
				return nil, checkers.BadOp(o, err)
			}
			finals = append(finals, checkers.FinalRead{Op: o, List: list})
		}
	}
	return checkers.NewAppendHistory(ops, appends, finals), nil
}

// parseAppend reads an append with la.ParseAppend, the report's reading
// too.
func parseAppend(o *history.Op) (checkers.AppendOp, error) {
	p, err := la.ParseAppend(o)
	if err != nil {
		return checkers.AppendOp{}, checkers.BadOp(o, err)
	}
	return checkers.AppendOp{Op: o, Element: p.Element, Comp: Outcome(p.Comp), Acquired: p.Acquired, AcquiredAt: p.AcquiredAt, Token: p.Token,
		ReleasedAt: p.ReleasingAt, Late: LateOutcome(p.Late), LateAt: p.LateAt, ReadPhase: p.Read, HasReadPhase: p.HasRead}, nil
}

// Outcome is what the checkers and the report read of a completion.
func Outcome(c la.Completion) checkers.Outcome {
	return checkers.Outcome{Token: c.Token, Read: c.Read, Rev: c.Rev, Reason: c.Reason, Error: c.Error, Fenced: c.Reason == la.ReasonFenced}
}

// LateOutcome is what the checkers and the report read of a late result
// (nil without one).
func LateOutcome(l *la.Late) *checkers.LateOutcome {
	if l == nil {
		return nil
	}
	return &checkers.LateOutcome{Type: l.Type, Outcome: Outcome(l.Completion)}
}

// checkAssumptions checks what the lock-append checkers rely on beyond
// the shared assumptions (checkers.CheckOps): every append's element is
// unique, and the final read (the ok one that completed last) began after
// every append was acknowledged, so that it can vouch for each.
func checkAssumptions(ops []history.Op) error {
	if err := checkers.CheckOps(ops); err != nil {
		return err
	}
	seen := map[int64]int{}
	var final *history.Op
	for i := range ops {
		o := &ops[i]
		switch o.F {
		case la.FAppend:
			var inv la.Invoke
			if err := o.Invoke.Decode(&inv); err != nil {
				return checkers.BadOp(o, err)
			}
			if first, dup := seen[inv.Element]; dup {
				return fmt.Errorf("%w: element %d is appended twice (events %d and %d): elements must be unique",
					checkers.ErrAssumption, inv.Element, first, o.Invoke.Index)
			}
			seen[inv.Element] = o.Invoke.Index
		case la.FFinalRead:
			if o.Type() == history.Ok && (final == nil || o.Complete.Time >= final.Complete.Time) {
				final = o
			}
		}
	}
	if final == nil {
		return nil // the lost-update checker says unknown: no final read
	}
	for i := range ops {
		o := &ops[i]
		if o.F != la.FAppend {
			continue
		}
		acked := int64(-1)
		if o.Type() == history.Ok {
			acked = o.Complete.Time
		}
		if late, ok := o.PhaseEvent(la.PhaseLate); ok {
			var l la.Late
			if late.Decode(&l) == nil && l.Type == history.Ok {
				acked = max(acked, late.Time)
			}
		}
		if acked > final.Invoke.Time {
			return fmt.Errorf("%w: the %s of process %s (event %d) was acknowledged at %s, after the final read began at %s: the final read cannot vouch for it",
				checkers.ErrAssumption, o.F, o.Process, o.Invoke.Index, time.Duration(acked), time.Duration(final.Invoke.Time))
		}
	}
	return nil
}
