package view

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// TestOneAppendReading: the report reads an append as the checkers do. An
// append whose lease-check phase does not decode makes the checkers'
// verdict unknown (a bad history), and the report skips it and says so.
func TestOneAppendReading(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	ev := []history.Event{
		{Index: 0, Time: 1, Process: 0, Type: history.Invoke, F: la.FAppend, Value: raw(`{"element":1}`)},
		{Index: 1, Time: 2, Process: 0, Type: history.Phase, F: la.PhaseAcquired, Value: raw(`{"token":1}`)},
		{Index: 2, Time: 3, Process: 0, Type: history.Phase, F: la.PhaseChecked, Value: raw(`"not a check"`)},
		{Index: 3, Time: 4, Process: 0, Type: history.Ok, F: la.FAppend, Value: raw(`{"element":1,"read":[]}`)},
		{Index: 4, Time: 5, Process: 0, Type: history.Invoke, F: la.FFinalRead},
		{Index: 5, Time: 6, Process: 0, Type: history.Ok, F: la.FFinalRead, Value: raw(`{"value":[1]}`)},
	}
	r := lockappend.Check(ev, checkers.Options{})
	if r.Valid != checkers.Unknown || !errors.Is(r.Err(), checkers.ErrBadHistory) {
		t.Errorf("checkers: %s (%v), want unknown for a bad history", r.Valid, r.Err())
	}
	m, err := buildFromEvents(ev)
	if err != nil || m.skipped != 1 || len(m.Ops) != 0 {
		t.Errorf("report: %v, %d skipped, %d ops; want the append skipped", err, m.skipped, len(m.Ops))
	}
}
