package checkers

import (
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/register"
)

// RegisterStats counts a register run's operations by function and outcome.
type RegisterStats struct {
	Verdict
	// Counts maps "read ok", "cas fail", ... to their number.
	Counts map[string]int `json:"counts"`
	Ok     int            `json:"ok"`
	Fail   int            `json:"fail"`
	Info   int            `json:"info"`
}

// RegisterWorkloadCheckers holds each checker's result under its
// results.json name.
type RegisterWorkloadCheckers struct {
	Linearizable KeyedResult   `json:"linearizable"`
	Stats        RegisterStats `json:"stats"`
}

// RegisterWorkloadResult is the verdict on a register workload's history;
// json.Marshal of it is results.json's checker part:
// {"valid": ..., "checkers": {"linearizable": {...}, "stats": {...}}}.
type RegisterWorkloadResult struct {
	Valid    Validity                 `json:"valid"`
	Error    string                   `json:"error,omitempty"`
	Checkers RegisterWorkloadCheckers `json:"checkers"`

	err error
}

// Err is why the checkers could not judge the history, as the lock-append
// workload's result's.
func (r *RegisterWorkloadResult) Err() error { return r.err }

// CheckRegisterWorkload checks a register workload's history: Porcupine on
// the compare-and-set register model partitioned by key (CheckRegister),
// and the statistics (Unknown when no operation succeeded). Operation times
// are the history's.
func CheckRegisterWorkload(events []history.Event, opts Options) RegisterWorkloadResult {
	ops, err := history.Pair(events)
	if err != nil {
		return registerFailed(fmt.Errorf("checkers: %w: %w", ErrBadHistory, err))
	}
	if err := checkSpans(opSpans(ops)); err != nil {
		return registerFailed(err)
	}
	rops, stats, err := registerOps(ops)
	if err != nil {
		return registerFailed(err)
	}
	c := RegisterWorkloadCheckers{Linearizable: CheckRegister(rops, opts), Stats: stats}
	return RegisterWorkloadResult{Valid: Compose(c.Linearizable.Valid, c.Stats.Valid), Checkers: c}
}

func registerFailed(err error) RegisterWorkloadResult {
	v := unknown(err)
	if errors.Is(err, ErrAssumption) {
		v = assumptionBroken(err)
	}
	return RegisterWorkloadResult{Valid: Unknown, Error: err.Error(), err: err, Checkers: RegisterWorkloadCheckers{
		Linearizable: KeyedResult{Verdict: v, Model: ModelCASRegister},
		Stats:        RegisterStats{Verdict: v, Counts: map[string]int{}},
	}}
}

// registerOps converts a register workload's operations for CheckRegister
// and counts them.
func registerOps(ops []history.Op) ([]RegisterOp, RegisterStats, error) {
	stats := RegisterStats{Counts: map[string]int{}}
	var out []RegisterOp
	for _, o := range ops {
		var f RegisterFunc
		switch o.F {
		case register.FRead:
			f = RegisterRead
		case register.FWrite:
			f = RegisterWrite
		case register.FCAS:
			f = RegisterCAS
		default:
			return nil, stats, fmt.Errorf("checkers: %w: event %d: f %q is not a register function", ErrBadHistory, o.Invoke.Index, o.F)
		}
		var inv register.Value
		if err := o.Invoke.Decode(&inv); err != nil {
			return nil, stats, fmt.Errorf("checkers: %w: %w", ErrBadHistory, err)
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
		op := RegisterOp{Process: int(o.Process), Key: inv.Key, F: f, Type: typ, Call: o.Invoke.Time}
		if typ == history.Ok {
			op.Return = o.Complete.Time
		}
		switch f {
		case RegisterRead:
			if typ == history.Ok {
				var done register.Value
				if err := o.Complete.Decode(&done); err != nil {
					return nil, stats, fmt.Errorf("checkers: %w: %w", ErrBadHistory, err)
				}
				if !done.Absent {
					if done.Value == nil {
						return nil, stats, fmt.Errorf("checkers: %w: event %d: an ok read with no value", ErrBadHistory, o.Complete.Index)
					}
					op.Value = RegisterInt(*done.Value)
				}
			}
		case RegisterWrite:
			if inv.Value == nil {
				return nil, stats, fmt.Errorf("checkers: %w: event %d: a write with no value", ErrBadHistory, o.Invoke.Index)
			}
			op.Value = RegisterInt(*inv.Value)
		case RegisterCAS:
			if inv.Old == nil || inv.New == nil {
				return nil, stats, fmt.Errorf("checkers: %w: event %d: a cas without old and new", ErrBadHistory, o.Invoke.Index)
			}
			op.Old, op.Value = RegisterInt(*inv.Old), RegisterInt(*inv.New)
		}
		out = append(out, op)
	}
	if stats.Ok == 0 {
		stats.Verdict = Verdict{Valid: Unknown, Message: "no operation succeeded: the run cannot tell"}
	} else {
		stats.Verdict = Verdict{Valid: Valid, Message: fmt.Sprintf("%d ok, %d fail, %d info", stats.Ok, stats.Fail, stats.Info)}
	}
	return out, stats, nil
}

// Verdict is r.Valid (store.WorkloadResult).
func (r *RegisterWorkloadResult) Verdict() Validity { return r.Valid }

// SetVerdict sets r.Valid (store.WorkloadResult).
func (r *RegisterWorkloadResult) SetVerdict(v Validity) { r.Valid = v }
