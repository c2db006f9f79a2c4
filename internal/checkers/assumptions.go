package checkers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
)

// The checkers rely on properties of a history that the harness is meant to
// guarantee. Before any verdict, they check them, as etcd's robustness
// validation does, and a history that breaks one gets Unknown with the
// reason, never a confident verdict: a valid from a history the checkers
// misread proves nothing, and an invalid one may blame the system for the
// harness's fault.

// ErrAssumption is wrapped by every error about a broken assumption.
var ErrAssumption = errors.New("the history breaks an assumption of the checkers")

// span is an operation as the shared assumptions see it: its process, when
// it was invoked and when it returned (returned is false when it never
// did, or when the record does not say).
type span struct {
	process int
	// key, when set, scopes the process: keyed checks (registers, KV) need
	// one operation at a time per process and key, as Porcupine's
	// partitions do.
	key      string
	call     int64
	ret      int64
	returned bool
	what     string // for messages: "append of element 12 (event 40)"
}

// checkSpans checks the assumptions every checker shares: each operation
// completes after its invocation, and a process has one operation
// outstanding at a time (the next is invoked after the previous returned;
// after one that never returned, none).
func checkSpans(spans []span) error {
	for _, s := range spans {
		if s.returned && s.ret < s.call {
			return fmt.Errorf("%w: %s completes at %s, before its invocation at %s", ErrAssumption, s.what, at(s.ret), at(s.call))
		}
	}
	type lane struct {
		process int
		key     string
	}
	byProcess := map[lane][]span{}
	for _, s := range spans {
		l := lane{s.process, s.key}
		byProcess[l] = append(byProcess[l], s)
	}
	for l, ss := range byProcess {
		p := l.process
		slices.SortStableFunc(ss, func(a, b span) int { return cmp.Compare(a.call, b.call) })
		for i := 1; i < len(ss); i++ {
			prev, next := ss[i-1], ss[i]
			if !prev.returned {
				continue
			}
			if next.call < prev.ret {
				return fmt.Errorf("%w: process %d has two operations outstanding at once: %s (until %s) and %s (from %s)",
					ErrAssumption, p, prev.what, at(prev.ret), next.what, at(next.call))
			}
		}
	}
	return nil
}

func at(ns int64) string { return time.Duration(ns).String() }

// opSpans are a recorded history's operations as spans. An operation that
// never completed never returned, and its process must invoke nothing
// after it (history.Pair refuses that already).
func opSpans(ops []history.Op) []span {
	out := make([]span, 0, len(ops))
	for i := range ops {
		o := &ops[i]
		s := span{process: int(o.Process), call: o.Invoke.Time, what: fmt.Sprintf("%s of process %s (event %d)", o.F, o.Process, o.Invoke.Index)}
		if o.Complete != nil {
			s.ret, s.returned = o.Complete.Time, true
		}
		out = append(out, s)
	}
	return out
}

// checkLockAppendAssumptions checks what the lock-append checkers rely on
// beyond the shared assumptions: every append's element is unique, and the
// final read (the ok one that completed last) began after every append was
// acknowledged, so that it can vouch for each.
func checkLockAppendAssumptions(ops []history.Op) error {
	if err := checkSpans(opSpans(ops)); err != nil {
		return err
	}
	seen := map[int64]int{}
	var final *history.Op
	for i := range ops {
		o := &ops[i]
		switch o.F {
		case lockappend.FAppend:
			var inv lockappend.Invoke
			if err := o.Invoke.Decode(&inv); err != nil {
				return badOp(o, err)
			}
			if first, dup := seen[inv.Element]; dup {
				return fmt.Errorf("%w: element %d is appended twice (events %d and %d): elements must be unique",
					ErrAssumption, inv.Element, first, o.Invoke.Index)
			}
			seen[inv.Element] = o.Invoke.Index
		case lockappend.FFinalRead:
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
		if o.F != lockappend.FAppend {
			continue
		}
		acked := int64(-1)
		if o.Type() == history.Ok {
			acked = o.Complete.Time
		}
		if late, ok := o.PhaseEvent(lockappend.PhaseLate); ok {
			var l lockappend.Late
			if late.Decode(&l) == nil && l.Type == history.Ok {
				acked = max(acked, late.Time)
			}
		}
		if acked > final.Invoke.Time {
			return fmt.Errorf("%w: the %s of process %s (event %d) was acknowledged at %s, after the final read began at %s: the final read cannot vouch for it",
				ErrAssumption, o.F, o.Process, o.Invoke.Index, at(acked), at(final.Invoke.Time))
		}
	}
	return nil
}

// assumptionBroken is the Unknown verdict of a history that breaks an
// assumption.
func assumptionBroken(err error) Verdict {
	return Verdict{Valid: Unknown, Message: "cannot check: " + ErrAssumption.Error(), Error: err.Error()}
}
