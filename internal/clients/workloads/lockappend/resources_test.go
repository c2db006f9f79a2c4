package lockappend

import (
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/testkit/histtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// A stale holder's write refused by the token-fenced pg and accepted by the
// unfenced px: a partial update, and px's lost update makes the run
// invalid while pg is valid.
func TestPartialUpdate(t *testing.T) {
	h := histtest.New(t)
	h.Multi(0, 1, 10, nil, nil, history.Ok, history.Ok)
	// A (token 11) reads [1] on both and stalls; B (token 12) appends 2 to
	// both; then A, stale, writes [1 3]: pg refuses, px accepts.
	h.MultiBegin(2, 3, 11, []int64{1}, []int64{1})
	h.Multi(1, 2, 12, []int64{1}, []int64{1}, history.Ok, history.Ok)
	h.MultiEnd(2, 3, 11, []int64{1}, []int64{1}, history.Fail, history.Ok)
	h.FinalOf(1_000_000, "pg", 1, 2).FinalOf(1_000_001, "px", 1, 3)
	res := Check(h.Events, checkers.Options{})
	if res.Valid != checkers.Invalid {
		t.Fatalf("verdict %s, want invalid", res.Valid)
	}
	if res.Resources["pg"] == nil || res.Resources["pg"].Valid != checkers.Valid || res.Resources["px"].Valid != checkers.Invalid {
		t.Fatalf("per resource: %+v", res.Resources)
	}
	if res.PartialUpdates == nil || res.PartialUpdates.Count != 1 {
		t.Fatalf("partial updates %+v, want 1", res.PartialUpdates)
	}
	pu := res.PartialUpdates.Elements[0]
	if pu.Element != 3 || !slices.Equal(pu.AcceptedBy, []string{"px"}) || !slices.Equal(pu.RefusedBy, []string{"pg"}) {
		t.Errorf("partial update %+v", pu)
	}
	if res.LostUpdates.Lost != 1 || res.LostUpdates.Elements[0].Resource != "px" || res.LostUpdates.Elements[0].Element != 2 {
		t.Errorf("lost %+v, want element 2 of px", res.LostUpdates)
	}
	if res.LostUpdates.Acknowledged != 5 {
		t.Errorf("acknowledged %d, want 5 (2 on pg, 3 on px)", res.LostUpdates.Acknowledged)
	}
	if res.FenceRejections != 1 {
		t.Errorf("fence rejections %d, want 1 (pg's)", res.FenceRejections)
	}
}

// Both resources fenced: nothing lost, no partial update.
func TestTwoResourcesFenced(t *testing.T) {
	h := histtest.New(t)
	h.Multi(0, 1, 10, nil, nil, history.Ok, history.Ok)
	h.MultiBegin(2, 3, 11, []int64{1}, []int64{1})
	h.Multi(1, 2, 12, []int64{1}, []int64{1}, history.Ok, history.Ok)
	h.MultiEnd(2, 3, 11, []int64{1}, []int64{1}, history.Fail, history.Fail)
	h.FinalOf(1_000_000, "pg", 1, 2).FinalOf(1_000_001, "px", 1, 2)
	res := Check(h.Events, checkers.Options{})
	if res.Valid != checkers.Valid || res.PartialUpdates.Count != 0 || res.FenceRejections != 2 {
		t.Fatalf("verdict %s, %d partial, %d rejections; want valid, 0, 2", res.Valid, res.PartialUpdates.Count, res.FenceRejections)
	}
}

// The audit log holds an entry for a write that the fence refused.
func TestAuditLogRefusedButLogged(t *testing.T) {
	h := histtest.New(t)
	h.Section(0, 1, 10)
	h.Invoke(1, 2).Acquired(1, 11).Read(1, 1)
	h.Section(2, 3, 12, 1)
	h.WriteSent(1).Released(1).Fail(1, 2, 11, la.ReasonFenced, 1)
	h.Add(1_000_001, history.Invoke, la.FAuditRead, nil)
	h.Add(1_000_001, history.Ok, la.FAuditRead, la.AuditValue{Entries: []la.AuditEntry{
		{Process: 0, Token: 10, Element: 1}, {Process: 2, Token: 12, Element: 3}, {Process: 1, Token: 11, Element: 2}}})
	h.FinalRead(1_000_000, 1, 3)
	res := Check(h.Events, checkers.Options{})
	if res.Valid != checkers.Valid {
		t.Fatalf("verdict %s, want valid: the log is a finding, not a verdict", res.Valid)
	}
	a := res.AuditLog
	if a == nil || a.Entries != 3 || a.RefusedButLogged != 1 || a.Elements[0].Element != 2 || a.Elements[0].Token != 11 {
		t.Fatalf("audit log %+v, want 3 entries, element 2 refused but logged", a)
	}
}

// A side writer's write that erased acknowledged elements is named as the
// side writer's, and its batches are not counted as clients' operations.
func TestSideWriterNamed(t *testing.T) {
	h := histtest.New(t)
	sw := history.SideWriter
	h.Invoke(sw, 100)
	h.Section(0, 1, 10)
	h.Section(1, 2, 11, 1)
	h.Add(sw, history.Ok, la.FAppend, la.Completion{Element: 100, Read: histtest.List(nil)})
	h.FinalRead(1_000_000, 100)
	res := Check(h.Events, checkers.Options{})
	if res.Valid != checkers.Invalid || res.LostUpdates.Lost != 2 {
		t.Fatalf("verdict %s, %d lost; want invalid, 2", res.Valid, res.LostUpdates.Lost)
	}
	for _, e := range res.LostUpdates.Elements {
		if w := e.OverwrittenBy; w == nil || !w.SideWriter || w.Process != sw {
			t.Errorf("element %d overwritten by %+v, want the side writer", e.Element, w)
		}
	}
	if st := res.Checkers.Stats; st.Ok != 2 || st.SideWrites != 1 {
		t.Errorf("stats %d ok, %d side writes; want 2, 1", st.Ok, st.SideWrites)
	}
}
