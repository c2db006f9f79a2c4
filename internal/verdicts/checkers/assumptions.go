package checkers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
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
}

// spans are the operations checkSpans checks: n of them, the i-th being
// at(i), named what(i) in messages ("append of element 12 (event 40)").
// They are read through functions so that a long history is not copied.
type spans struct {
	n    int
	at   func(i int) span
	what func(i int) string
}

// checkSpans checks the assumptions every checker shares: each operation
// completes after its invocation, and a process has one operation
// outstanding at a time (the next is invoked after the previous returned;
// after one that never returned, none). Its memory is two int32s an
// operation, and one map entry a process (and key).
func checkSpans(ss spans) error {
	for i := range ss.n {
		if s := ss.at(i); s.returned && s.ret < s.call {
			return fmt.Errorf("%w: %s completes at %s, before its invocation at %s", ErrAssumption, ss.what(i), at(s.ret), at(s.call))
		}
	}
	// Group the operations by lane (process and key), keeping their order
	// (a counting sort), then order each lane by invocation.
	type lane struct {
		process int
		key     string
	}
	ids := map[lane]int32{}
	of := make([]int32, ss.n)
	var count []int32
	for i := range ss.n {
		s := ss.at(i)
		l := lane{s.process, s.key}
		id, ok := ids[l]
		if !ok {
			id = int32(len(count))
			ids[l] = id
			count = append(count, 0)
		}
		of[i] = id
		count[id]++
	}
	first := make([]int32, len(count)+1) // lane id's operations are order[first[id]:first[id+1]]
	for id, c := range count {
		first[id+1] = first[id] + c
	}
	next := slices.Clone(first[:len(count)])
	order := make([]int32, ss.n)
	for i, id := range of {
		order[next[id]] = int32(i)
		next[id]++
	}
	callOf := func(i int32) int64 { return ss.at(int(i)).call }
	for id := range count {
		ops := order[first[id]:first[id+1]]
		if !slices.IsSortedFunc(ops, func(a, b int32) int { return cmp.Compare(callOf(a), callOf(b)) }) {
			slices.SortStableFunc(ops, func(a, b int32) int { return cmp.Compare(callOf(a), callOf(b)) })
		}
		for k := 1; k < len(ops); k++ {
			prev, next := ss.at(int(ops[k-1])), ss.at(int(ops[k]))
			if !prev.returned {
				continue
			}
			if next.call < prev.ret {
				return fmt.Errorf("%w: process %d has two operations outstanding at once: %s (until %s) and %s (from %s)",
					ErrAssumption, prev.process, ss.what(int(ops[k-1])), at(prev.ret), ss.what(int(ops[k])), at(next.call))
			}
		}
	}
	return nil
}

func at(ns int64) string { return time.Duration(ns).String() }

// opSpans are a recorded history's operations as spans. An operation that
// never completed never returned, and its process must invoke nothing
// after it (history.Pair refuses that already).
func opSpans(ops []history.Op) spans {
	return spans{
		n: len(ops),
		at: func(i int) span {
			o := &ops[i]
			s := span{process: int(o.Process), call: o.Invoke.Time}
			if o.Complete != nil {
				s.ret, s.returned = o.Complete.Time, true
			}
			return s
		},
		what: func(i int) string {
			o := &ops[i]
			return fmt.Sprintf("%s of process %s (event %d)", o.F, o.Process, o.Invoke.Index)
		},
	}
}

// CheckOps checks the assumptions every checker shares on a recorded
// history's operations (see checkSpans); an error wraps ErrAssumption.
func CheckOps(ops []history.Op) error { return checkSpans(opSpans(ops)) }

// assumptionBroken is the Unknown verdict of a history that breaks an
// assumption.
func assumptionBroken(err error) Verdict {
	return Verdict{Valid: Unknown, Message: "cannot check: " + ErrAssumption.Error(), Error: err.Error()}
}
