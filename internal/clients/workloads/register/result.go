package register

import (
	"fmt"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Stats counts a register run's operations by function and outcome.
type Stats struct {
	checkers.Verdict
	// Counts maps "read ok", "cas fail", ... to their number.
	Counts map[string]int `json:"counts"`
	Ok     int            `json:"ok"`
	Fail   int            `json:"fail"`
	Info   int            `json:"info"`
}

// Checkers holds each checker's result under its results.json name.
type Checkers struct {
	Linearizable checkers.KeyedResult `json:"linearizable"`
	Stats        Stats                `json:"stats"`
}

// Result is the verdict on a register workload's history; json.Marshal
// of it is results.json's checker part:
// {"valid": ..., "checkers": {"linearizable": {...}, "stats": {...}}}.
type Result struct {
	Valid    checkers.Validity `json:"valid"`
	Error    string            `json:"error,omitempty"`
	Checkers Checkers          `json:"checkers"`

	err error
}

// Err is why the checkers could not judge the history, as the lock-append
// workload's result's.
func (r *Result) Err() error { return r.err }

// Check checks a register workload's history: Porcupine on the
// compare-and-set register model partitioned by key
// (checkers.CheckRegister), and the statistics (Unknown when no operation
// succeeded). Operation times are the history's.
func Check(events []history.Event, opts checkers.Options) Result {
	ops, err := history.Pair(events)
	if err != nil {
		return failed(fmt.Errorf("checkers: %w: %w", checkers.ErrBadHistory, err))
	}
	if err := checkers.CheckOps(ops); err != nil {
		return failed(err)
	}
	rops, stats, err := registerOps(ops)
	if err != nil {
		return failed(err)
	}
	c := Checkers{Linearizable: checkers.CheckRegister(rops, opts), Stats: stats}
	return Result{Valid: checkers.Compose(c.Linearizable.Valid, c.Stats.Valid), Checkers: c}
}

func failed(err error) Result {
	v := checkers.CannotCheck(err)
	return Result{Valid: checkers.Unknown, Error: err.Error(), err: err, Checkers: Checkers{
		Linearizable: checkers.KeyedResult{Verdict: v, Model: checkers.ModelCASRegister},
		Stats:        Stats{Verdict: v, Counts: map[string]int{}},
	}}
}

// registerOps converts a register workload's operations for
// checkers.CheckRegister and counts them.
func registerOps(ops []history.Op) ([]checkers.RegisterOp, Stats, error) {
	stats := Stats{Counts: map[string]int{}}
	var out []checkers.RegisterOp
	for _, o := range ops {
		var f checkers.RegisterFunc
		switch o.F {
		case FRead:
			f = checkers.RegisterRead
		case FWrite:
			f = checkers.RegisterWrite
		case FCAS:
			f = checkers.RegisterCAS
		default:
			return nil, stats, fmt.Errorf("checkers: %w: event %d: f %q is not a register function", checkers.ErrBadHistory, o.Invoke.Index, o.F)
		}
		var inv Value
		if err := o.Invoke.Decode(&inv); err != nil {
			return nil, stats, fmt.Errorf("checkers: %w: %w", checkers.ErrBadHistory, err)
		}
		typ := o.Type()
		stats.Counts[o.F+" "+string(typ)]++
		switch typ {
		case history.Ok:
			stats.Ok++
		case history.Fail:
			stats.Fail++
		default:
			stats.Info++
		}
		op := checkers.RegisterOp{Process: int(o.Process), Key: inv.Key, F: f, Type: typ, Call: o.Invoke.Time}
		if typ == history.Ok {
			op.Return = o.Complete.Time
		}
		switch f {
		case checkers.RegisterRead:
			if typ == history.Ok {
				var done Value
				if err := o.Complete.Decode(&done); err != nil {
					return nil, stats, fmt.Errorf("checkers: %w: %w", checkers.ErrBadHistory, err)
				}
				if !done.Absent {
					if done.Value == nil {
						return nil, stats, fmt.Errorf("checkers: %w: event %d: an ok read with no value", checkers.ErrBadHistory, o.Complete.Index)
					}
					op.Value = checkers.RegisterInt(*done.Value)
				}
			}
		case checkers.RegisterWrite:
			if inv.Value == nil {
				return nil, stats, fmt.Errorf("checkers: %w: event %d: a write with no value", checkers.ErrBadHistory, o.Invoke.Index)
			}
			op.Value = checkers.RegisterInt(*inv.Value)
		case checkers.RegisterCAS:
			if inv.Old == nil || inv.New == nil {
				return nil, stats, fmt.Errorf("checkers: %w: event %d: a cas without old and new", checkers.ErrBadHistory, o.Invoke.Index)
			}
			op.Old, op.Value = checkers.RegisterInt(*inv.Old), checkers.RegisterInt(*inv.New)
		}
		out = append(out, op)
	}
	if stats.Ok == 0 {
		stats.Verdict = checkers.Verdict{Valid: checkers.Unknown, Message: "no operation succeeded: the run cannot tell"}
	} else {
		stats.Verdict = checkers.Verdict{Valid: checkers.Valid, Message: fmt.Sprintf("%d ok, %d fail, %d info", stats.Ok, stats.Fail, stats.Info)}
	}
	return out, stats, nil
}

// Verdict is r.Valid (store.WorkloadResult).
func (r *Result) Verdict() checkers.Validity { return r.Valid }

// SetVerdict sets r.Valid (store.WorkloadResult).
func (r *Result) SetVerdict(v checkers.Validity) { r.Valid = v }

// Summary is the register result's figures (store.WorkloadResult): the
// verdict and the operations; registers lose no updates and fence nothing.
func (r *Result) Summary() checkers.Summary {
	st := r.Checkers.Stats
	return checkers.Summary{Verdict: r.Valid, Ops: &checkers.OpCounts{OK: st.Ok, Fail: st.Fail, Info: st.Info}}
}

// CutText returns a copy of r whose free text (its error, each checker's
// message and error, the failing key) is cut by cut. The copy is a
// *Result.
func (r *Result) CutText(cut func(string) string) any {
	c := *r
	c.Error = cut(c.Error)
	k := &c.Checkers
	k.Linearizable.Verdict.CutText(cut)
	k.Linearizable.FailingKey = cut(k.Linearizable.FailingKey)
	k.Stats.Verdict.CutText(cut)
	return &c
}
