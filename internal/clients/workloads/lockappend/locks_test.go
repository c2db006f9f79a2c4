package lockappend

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/testkit/histtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// A run of two locks is checked lock by lock: each lock's list holds its
// own elements only, which checked as one history would be lost updates.
func TestCheckLocks(t *testing.T) {
	legal := histtest.New(t).SectionOn(0, 0, 1, 1).SectionOn(1, 1, 2, 2).SectionOn(0, 2, 3, 3, 1).SectionOn(1, 3, 4, 4, 2).
		FinalReadOn(0, 1_000_000, 1, 3).FinalReadOn(1, 1_000_001, 2, 4)
	r := Check(legal.Events, checkers.Options{})
	if r.Valid != checkers.Valid || r.LostUpdates.Acknowledged != 4 || r.LostUpdates.Lost != 0 || len(r.Locks) != 2 {
		t.Fatalf("two legal locks: %s, %+v, %d locks; want valid, 4 acknowledged, 2 locks (%v)", r.Valid, r.LostUpdates, len(r.Locks), r.Error)
	}
	if r.Checkers.Stats.Ok != 4 || r.Locks["lock-1"].Checkers.Stats.Ok != 2 {
		t.Errorf("stats: %d ok in all, %d in lock-1; want 4 and 2", r.Checkers.Stats.Ok, r.Locks["lock-1"].Checkers.Stats.Ok)
	}
	// The same operations without their locks: one lock's final list
	// misses the other's elements.
	one := histtest.New(t).Section(0, 1, 1).Section(1, 2, 2).Section(2, 3, 3, 1).Section(3, 4, 4, 2).FinalRead(1_000_000, 1, 3)
	if r := Check(one.Events, checkers.Options{}); r.Valid != checkers.Invalid {
		t.Fatalf("the same history as one lock: %s, want invalid", r.Valid)
	}
	// Lock 1 loses element 2: process 3 wrote [4] over [2], stale.
	lost := histtest.New(t).SectionOn(0, 0, 1, 1).SectionOn(1, 1, 2, 2).SectionOn(0, 2, 3, 3, 1).SectionOn(1, 3, 4, 1).
		FinalReadOn(0, 1_000_000, 1, 3).FinalReadOn(1, 1_000_001, 4)
	r = Check(lost.Events, checkers.Options{})
	if r.Valid != checkers.Invalid || r.LostUpdates.Lost != 1 || r.LostUpdates.Elements[0].Element != 2 || r.LostUpdates.Elements[0].Lock != "lock-1" {
		t.Fatalf("a loss on lock 1: %s, %+v; want invalid, element 2 of lock-1 lost", r.Valid, r.LostUpdates)
	}
	if r.Locks["lock-0"].Valid != checkers.Valid || r.Locks["lock-1"].Valid != checkers.Invalid {
		t.Errorf("per lock: %s, %s; want valid, invalid", r.Locks["lock-0"].Valid, r.Locks["lock-1"].Valid)
	}
}
