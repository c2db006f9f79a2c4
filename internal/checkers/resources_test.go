package checkers

import (
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
)

// multi appends a critical section of a two-resource run (pg then px): the
// holder read both lists, and each write ended as given.
func (h *hist) multi(p history.Process, e, token int64, pgRead, pxRead []int64, pg, px history.Type) *hist {
	return h.multiBegin(p, e, token, pgRead, pxRead).multiEnd(p, e, token, pgRead, pxRead, pg, px)
}

// multiBegin is a two-resource section up to its reads.
func (h *hist) multiBegin(p history.Process, e, token int64, pgRead, pxRead []int64) *hist {
	h.invoke(p, e).acquired(p, token)
	h.add(p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: list(pgRead), Resource: "pg"})
	return h.add(p, history.Phase, lockappend.PhaseRead, lockappend.ReadValue{Value: list(pxRead), Resource: "px"})
}

// multiEnd is the rest: the writes and the completion.
func (h *hist) multiEnd(p history.Process, e, token int64, pgRead, pxRead []int64, pg, px history.Type) *hist {
	h.writeSent(p).released(p)
	parts := []lockappend.ResourcePart{{Resource: "pg", Read: list(pgRead), Type: pg}, {Resource: "px", Read: list(pxRead), Type: px}}
	t := history.Ok
	c := lockappend.Completion{Element: e, Token: token, Read: list(pgRead), Resources: parts}
	for i := range parts {
		if parts[i].Type == history.Fail {
			parts[i].Reason = lockappend.ReasonFenced
			c.Reason = lockappend.ReasonPartial
		}
	}
	if pg == history.Fail && px == history.Fail {
		t, c.Reason = history.Fail, lockappend.ReasonFenced
	}
	return h.add(p, t, lockappend.FAppend, c)
}

func (h *hist) finalOf(p history.Process, r string, l ...int64) *hist {
	h.add(p, history.Invoke, lockappend.FFinalRead, nil)
	return h.add(p, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: list(l), Resource: r})
}

// A stale holder's write refused by the token-fenced pg and accepted by the
// unfenced px: a partial update, and px's lost update makes the run
// invalid while pg is valid.
func TestPartialUpdate(t *testing.T) {
	h := newHist(t)
	h.multi(0, 1, 10, nil, nil, history.Ok, history.Ok)
	// A (token 11) reads [1] on both and stalls; B (token 12) appends 2 to
	// both; then A, stale, writes [1 3]: pg refuses, px accepts.
	h.multiBegin(2, 3, 11, []int64{1}, []int64{1})
	h.multi(1, 2, 12, []int64{1}, []int64{1}, history.Ok, history.Ok)
	h.multiEnd(2, 3, 11, []int64{1}, []int64{1}, history.Fail, history.Ok)
	h.finalOf(1_000_000, "pg", 1, 2).finalOf(1_000_001, "px", 1, 3)
	res := CheckLockAppend(h.events, Options{})
	if res.Valid != Invalid {
		t.Fatalf("verdict %s, want invalid", res.Valid)
	}
	if res.Resources["pg"] == nil || res.Resources["pg"].Valid != Valid || res.Resources["px"].Valid != Invalid {
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
	h := newHist(t)
	h.multi(0, 1, 10, nil, nil, history.Ok, history.Ok)
	h.multiBegin(2, 3, 11, []int64{1}, []int64{1})
	h.multi(1, 2, 12, []int64{1}, []int64{1}, history.Ok, history.Ok)
	h.multiEnd(2, 3, 11, []int64{1}, []int64{1}, history.Fail, history.Fail)
	h.finalOf(1_000_000, "pg", 1, 2).finalOf(1_000_001, "px", 1, 2)
	res := CheckLockAppend(h.events, Options{})
	if res.Valid != Valid || res.PartialUpdates.Count != 0 || res.FenceRejections != 2 {
		t.Fatalf("verdict %s, %d partial, %d rejections; want valid, 0, 2", res.Valid, res.PartialUpdates.Count, res.FenceRejections)
	}
}

// The audit log holds an entry for a write that the fence refused.
func TestAuditLogRefusedButLogged(t *testing.T) {
	h := newHist(t)
	h.section(0, 1, 10)
	h.invoke(1, 2).acquired(1, 11).read(1, 1)
	h.section(2, 3, 12, 1)
	h.writeSent(1).released(1).fail(1, 2, 11, lockappend.ReasonFenced, 1)
	h.add(1_000_001, history.Invoke, lockappend.FAuditRead, nil)
	h.add(1_000_001, history.Ok, lockappend.FAuditRead, lockappend.AuditValue{Entries: []lockappend.AuditEntry{
		{Process: 0, Token: 10, Element: 1}, {Process: 2, Token: 12, Element: 3}, {Process: 1, Token: 11, Element: 2}}})
	h.finalRead(1_000_000, 1, 3)
	res := CheckLockAppend(h.events, Options{})
	if res.Valid != Valid {
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
	h := newHist(t)
	sw := history.SideWriter
	h.invoke(sw, 100)
	h.section(0, 1, 10)
	h.section(1, 2, 11, 1)
	h.add(sw, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 100, Read: list(nil)})
	h.finalRead(1_000_000, 100)
	res := CheckLockAppend(h.events, Options{})
	if res.Valid != Invalid || res.LostUpdates.Lost != 2 {
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
