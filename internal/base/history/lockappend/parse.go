package lockappend

import (
	"fmt"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Append is one append operation's values, decoded once: the one reading
// of an append that the checkers and the report share. Times are ns since
// the start; -1 means the phase was not reported.
type Append struct {
	Element int64
	// Comp is the completion's value: zero when the operation never
	// completed, or completed other than ok without a value.
	Comp Completion
	// Acquired is the first acquired phase: when the client got the lock,
	// with which token (AcquiredAt 0 without one).
	Acquired   bool
	AcquiredAt int64
	Token      int64
	// ReadAt is the first read phase's time; Read its list, decoded only
	// when the completion does not carry the list itself (HasRead: the
	// phase was reported; a phase without a value read the empty list).
	ReadAt  int64
	Read    []int64
	HasRead bool
	// CheckedAt and Checked are the first lease check.
	CheckedAt int64
	Checked   Checked
	// WriteSentAt is the first write-sent phase.
	WriteSentAt int64
	// ReleasingAt is the first releasing or released phase: from then on
	// the client no longer believed it held the lock.
	ReleasingAt int64
	// Late is the first late result of an info operation, nil without one.
	Late   *Late
	LateAt int64
}

// ParseAppend reads an append operation. An invocation without an
// element, an ok completion without a value, or a value of the invocation,
// the completion or a phase (acquired, read, checked, late) that does not
// decode is an error; phases it does not know are left alone.
func ParseAppend(o *history.Op) (Append, error) {
	a := Append{ReadAt: -1, CheckedAt: -1, WriteSentAt: -1, ReleasingAt: -1, LateAt: -1}
	var inv Invoke
	if err := o.Invoke.Decode(&inv); err != nil {
		return a, err
	}
	a.Element = inv.Element
	if c := o.Complete; c != nil && (len(c.Value) > 0 || c.Type == history.Ok) {
		var v completionValue
		if err := c.Decode(&v); err != nil {
			return a, err
		}
		a.Comp = v.get()
	}
	for _, p := range o.Phases {
		switch p.F {
		case PhaseAcquired:
			if a.Acquired {
				continue
			}
			var v Acquired
			if err := p.Decode(&v); err != nil {
				return a, phaseErr(p, err)
			}
			a.Acquired, a.AcquiredAt, a.Token = true, p.Time, v.Token
		case PhaseRead:
			if a.HasRead {
				continue
			}
			a.ReadAt, a.HasRead = p.Time, true
			if a.Comp.Read != nil || len(p.Value) == 0 {
				continue
			}
			var v readValue
			if err := p.Decode(&v); err != nil {
				return a, phaseErr(p, err)
			}
			a.Read = v.Value
		case PhaseChecked:
			if a.CheckedAt >= 0 {
				continue
			}
			if err := p.Decode(&a.Checked); err != nil {
				return a, phaseErr(p, err)
			}
			a.CheckedAt = p.Time
		case PhaseWriteSent:
			if a.WriteSentAt < 0 {
				a.WriteSentAt = p.Time
			}
		case PhaseReleasing, PhaseReleased:
			if a.ReleasingAt < 0 {
				a.ReleasingAt = p.Time
			}
		case PhaseLate:
			if a.Late != nil {
				continue
			}
			var v Late
			if err := p.Decode(&v); err != nil {
				return a, phaseErr(p, err)
			}
			a.Late, a.LateAt = &v, p.Time
		}
	}
	return a, nil
}

// ParseFinalRead reads an ok final read's list (empty, not nil, when the
// read found none). A value that does not decode is an error.
func ParseFinalRead(o *history.Op) ([]int64, error) {
	var v readValue
	if o.Complete == nil {
		return nil, fmt.Errorf("final read without a completion")
	}
	if err := o.Complete.Decode(&v); err != nil {
		return nil, err
	}
	if v.Value == nil {
		return []int64{}, nil
	}
	return v.Value, nil
}

// phaseErr names the phase whose value did not decode.
func phaseErr(p history.Event, err error) error {
	return fmt.Errorf("phase %s: %w", p.F, err)
}
