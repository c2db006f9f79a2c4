// Package register is the register workload: clients read, write and
// compare-and-set integer registers on a few keys of the target's key-value
// store, so that a backend's key-value consistency can be checked under the
// same faults as its locks. The history is checked by a CAS-register model
// partitioned by key (checkers).
package register

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/targets"
)

// Functions (the f of history events).
const (
	FRead  = "read"
	FWrite = "write"
	FCAS   = "cas"
)

// PhaseSending is the one phase of a register operation: its request is
// about to leave. Faults that wait for a client in the middle of its work
// (pause-holder, partition-client) take it as their trigger. Value: none.
const PhaseSending = "sending"

// Config is the workload's configuration.
type Config struct {
	// Keys is the number of registers (k0 ... k(Keys-1)).
	Keys int `json:"keys"`
	// ReadMode is the target's read mode for reads (targets.ReadModer).
	ReadMode string `json:"read_mode"`
}

// Value is the value of every register event. Invocation: Key, and Value
// (write) or Old and New (cas). Completion: the same, and for an ok read the
// Value read (null when the key is absent). Error says why a fail or info
// failed.
type Value struct {
	Key   string `json:"key"`
	Value *int64 `json:"value,omitempty"`
	Old   *int64 `json:"old,omitempty"`
	New   *int64 `json:"new,omitempty"`
	// Absent is true for an ok read of a key that does not exist.
	Absent bool   `json:"absent,omitempty"`
	Error  string `json:"error,omitempty"`
}

// valueRange is the range of written values: small, so that compare-and-set
// succeeds often enough to matter (as in Jepsen's register tests).
const valueRange = 5

// Next returns a random operation: a read, a write or a cas on a random key,
// in equal parts.
func Next(r *rand.Rand, cfg Config) (string, Value) {
	key := fmt.Sprintf("k%d", r.IntN(max(cfg.Keys, 1)))
	n := func() *int64 { v := int64(r.IntN(valueRange)); return &v }
	switch r.IntN(3) {
	case 0:
		return FRead, Value{Key: key}
	case 1:
		return FWrite, Value{Key: key, Value: n()}
	default:
		return FCAS, Value{Key: key, Old: n(), New: n()}
	}
}

// Execute runs one operation against kv. It never retries. Reads that fail
// are fail (a read has no effect either way); a write or cas whose request
// failed is info (it may have been applied); a cas whose comparison failed is
// fail. report, if not nil, is told of the sending phase.
func Execute(ctx context.Context, kv targets.KV, cfg Config, f string, v Value, report func(phase string, v any)) (history.Type, Value) {
	if report != nil {
		report(PhaseSending, nil)
	}
	switch f {
	case FRead:
		got, found, err := kv.Get(ctx, v.Key, cfg.ReadMode)
		if err != nil {
			v.Error = err.Error()
			return history.Fail, v
		}
		if found {
			v.Value = &got
		} else {
			v.Absent = true
		}
		return history.Ok, v
	case FWrite:
		if v.Value == nil {
			v.Error = "write without a value"
			return history.Fail, v
		}
		if err := kv.Put(ctx, v.Key, *v.Value); err != nil {
			v.Error = err.Error()
			return history.Info, v
		}
		return history.Ok, v
	case FCAS:
		if v.Old == nil || v.New == nil {
			v.Error = "cas without old and new"
			return history.Fail, v
		}
		ok, err := kv.CAS(ctx, v.Key, *v.Old, *v.New)
		switch {
		case err != nil:
			v.Error = err.Error()
			return history.Info, v
		case !ok:
			return history.Fail, v
		}
		return history.Ok, v
	}
	v.Error = fmt.Sprintf("unknown function %q", f)
	return history.Fail, v
}
