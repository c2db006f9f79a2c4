// Package checkers reads a recorded history and returns typed verdicts:
// Porcupine linearizability on an append-list model, lost updates against
// the final read, fencing-token monotonicity, lock-holder overlap and
// operation statistics, and the register and key-value models; the checkers
// that the workloads share. A workload composes them into its own result
// for results.json (the lock-append workload's is lockappend.Result, in
// internal/clients/workloads/lockappend; the register workload's is register.Result,
// in internal/clients/workloads/register).
//
// Semantics follow Jepsen: an ok operation happened, a fail certainly did
// not, and an info (or an operation with no completion) may have happened at
// any time after its invocation. Every checker returns a Verdict whose Valid
// is Valid, Invalid or Unknown; a checker that times out or panics gives
// Unknown, never Valid.
package checkers

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
)

// Validity is a checker's verdict. The zero value is Unknown, so a result
// that was never filled in never passes.
type Validity int

// Verdicts. In JSON they are true, false and "unknown".
const (
	Unknown Validity = iota
	Valid
	Invalid
)

// String returns "valid", "invalid" or "unknown".
func (v Validity) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	default:
		return "unknown"
	}
}

// ExitCode is the verdict's exit code: 0 valid, 1 invalid, 2 unknown
// (cmdline's).
func (v Validity) ExitCode() int {
	switch v {
	case Valid:
		return cmdline.ExitValid
	case Invalid:
		return cmdline.ExitInvalid
	}
	return cmdline.ExitUnknown
}

// MarshalJSON writes Valid as true, Invalid as false and anything else as
// "unknown".
func (v Validity) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	default:
		return []byte(`"unknown"`), nil
	}
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Validity) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*v = Valid
	case "false":
		*v = Invalid
	case `"unknown"`:
		*v = Unknown
	default:
		return fmt.Errorf("checkers: validity %s: want true, false or \"unknown\"", b)
	}
	return nil
}

// Compose combines verdicts: Invalid beats Unknown beats Valid. With no
// verdicts at all nothing was shown, so the result is Unknown.
func Compose(vs ...Validity) Validity {
	if len(vs) == 0 {
		return Unknown
	}
	out := Valid
	for _, v := range vs {
		switch {
		case v == Invalid:
			return Invalid
		case v != Valid:
			out = Unknown
		}
	}
	return out
}

// Verdict is the part every checker's result starts with. Message says in a
// sentence what the checker found (or why it cannot tell); Error holds what
// stopped it (bad input, a panic).
type Verdict struct {
	Valid   Validity `json:"valid"`
	Message string   `json:"message,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Base returns v itself; results that embed a Verdict get it promoted, which
// is what Protect needs.
func (v *Verdict) Base() *Verdict { return v }

// unknown returns an Unknown verdict for err.
func unknown(err error) Verdict {
	return Verdict{Valid: Unknown, Message: "cannot check: bad input", Error: err.Error()}
}

// Protect calls check and returns its result. If check panics, Protect
// returns the zero R with Valid Unknown and the panic in Error: a checker
// that panics gives unknown, never valid. name names the checker in the
// error.
func Protect[R any, P interface {
	*R
	Base() *Verdict
}](name string, check func() R) (res R) {
	defer func() {
		if r := recover(); r != nil {
			var zero R
			res = zero
			v := P(&res).Base()
			v.Valid = Unknown
			v.Message = "the checker panicked"
			v.Error = fmt.Sprintf("checker %s panicked: %v", name, r)
		}
	}()
	return check()
}

var (
	_ json.Marshaler   = Validity(0)
	_ json.Unmarshaler = (*Validity)(nil)
)

// CannotCheck is the verdict of a checker that could not judge a history:
// unknown, saying whether the history could not be read or breaks an
// assumption of the checkers (err wraps ErrAssumption).
func CannotCheck(err error) Verdict {
	if errors.Is(err, ErrAssumption) {
		return assumptionBroken(err)
	}
	return unknown(err)
}
