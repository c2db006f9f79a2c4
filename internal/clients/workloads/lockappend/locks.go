package lockappend

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// lockOf is the lock an operation of a lock-append history belongs to (a
// run of several locks, --locks): an append's invocation names it, a final
// read's value too; -1 for an operation of no lock (the audit log's read,
// the nemesis). A value that does not decode is an error.
func lockOf(o *history.Op) (int, error) {
	switch o.F {
	case la.FAppend:
		if !bytes.Contains(o.Invoke.Value, lockKey) {
			return 0, nil // lock 0 is left out: a run of one lock decodes nothing here
		}
		var inv la.Invoke
		if err := o.Invoke.Decode(&inv); err != nil {
			return 0, checkers.BadOp(o, err)
		}
		return inv.Lock, nil
	case la.FFinalRead:
		if o.Complete == nil || len(o.Complete.Value) == 0 {
			return -1, nil // a failed read: every lock's
		}
		if !bytes.Contains(o.Complete.Value, lockKey) {
			return 0, nil
		}
		var v la.ReadValue
		if err := o.Complete.Decode(&v); err != nil {
			return 0, checkers.BadOp(o, err)
		}
		return v.Lock, nil
	}
	return -1, nil
}

// lockKey is the JSON key a value names its lock by (left out for lock 0).
var lockKey = []byte(`"lock"`)

// opLocks are the locks of a history's operations (lockOf, -1 for an
// operation of no lock), and the locks that occur, in order: [0] for a run
// of one lock.
func opLocks(ops []history.Op) (of, ids []int, err error) {
	of = make([]int, len(ops))
	seen := map[int]bool{0: true}
	for i := range ops {
		l, err := lockOf(&ops[i])
		if err != nil {
			return nil, nil, err
		}
		if l < -1 {
			return nil, nil, checkers.BadOp(&ops[i], fmt.Errorf("lock %d", l))
		}
		of[i] = l
		if l >= 0 {
			seen[l] = true
		}
	}
	for l := range seen {
		ids = append(ids, l)
	}
	slices.Sort(ids)
	return of, ids, nil
}

// LockName is how a result names lock l of a run of several ("lock-2").
func LockName(l int) string { return fmt.Sprintf("lock-%d", l) }

// checkLocks checks a history of several locks lock by lock: each lock's
// appends and final reads are a lock-append history of their own (the
// other operations, of no lock, go with every lock), checked as
// checkPaired checks a whole one. The result composes them as
// checkResources composes resources: every checker's verdict over the
// locks, the lost elements of all (each naming its lock), the sums; Locks
// holds each lock's own result. Porcupine's visualization, if asked for,
// is the first lock's.
func checkLocks(ops []history.Op, of, locks []int, opts checkers.Options) (Result, error) {
	names := make([]string, len(locks))
	all := make([]Result, len(locks))
	per := make(map[string]*Result, len(locks))
	for i, l := range locks {
		var mine []history.Op
		for j := range ops {
			if of[j] == l || of[j] == -1 {
				mine = append(mine, ops[j])
			}
		}
		o := opts
		if i > 0 {
			o.VisualizationPath = ""
		}
		r := checkPaired(mine, o)
		if err := r.Err(); err != nil {
			return Result{}, fmt.Errorf("%s: %w", LockName(l), err)
		}
		for j := range r.LostUpdates.Elements {
			r.LostUpdates.Elements[j].Lock = LockName(l)
		}
		names[i], all[i] = LockName(l), r
		per[names[i]] = &all[i]
	}
	out := composeResults(names, all)
	// Locks have operations of their own: their counts add up.
	out.Overlaps, out.AuditLog, out.PartialUpdates = 0, nil, nil
	st := &out.Checkers.Stats
	st.Ok, st.Fail, st.Info, st.FenceRejections, st.SideWrites, st.Rejected = 0, 0, 0, 0, 0, nil
	var rejected []checkers.FenceRejection
	for _, r := range all {
		rs := r.Checkers.Stats
		st.Ok, st.Fail, st.Info = st.Ok+rs.Ok, st.Fail+rs.Fail, st.Info+rs.Info
		st.FenceRejections, st.SideWrites = st.FenceRejections+rs.FenceRejections, st.SideWrites+rs.SideWrites
		rejected = append(rejected, rs.Rejected...)
		out.Overlaps += r.Overlaps
		if r.PartialUpdates != nil {
			if out.PartialUpdates == nil {
				out.PartialUpdates = &PartialUpdates{Elements: []PartialUpdate{}}
			}
			out.PartialUpdates.Count += r.PartialUpdates.Count
			out.PartialUpdates.Elements = append(out.PartialUpdates.Elements, r.PartialUpdates.Elements...)
		}
	}
	// The first refusals of every lock, by time.
	slices.SortStableFunc(rejected, func(x, y checkers.FenceRejection) int { return cmp.Compare(x.At, y.At) })
	for _, r := range rejected {
		st.Rejected = checkers.ListRejection(st.Rejected, r)
	}
	out.Resources = nil
	out.Locks = per
	return out, nil
}
