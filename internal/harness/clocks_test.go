package harness

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
)

// The clock chart's courses are read from each clock fault's typed record:
// clock-rate's rate and observed rate, clock-skew's offsets (a client's
// lease clock marked), clock-strobe's delta and period; other faults give
// none.
func TestClockCourses(t *testing.T) {
	seen := 2.013
	obs := history.Duration(9 * time.Second)
	fault := func(name, node string, rec any) history.Fault {
		return history.Fault{FaultValue: history.FaultValue{Fault: name, Nodes: []string{node}, Figures: history.FiguresOf(rec)}, Start: 1e9, Stop: 5e9}
	}
	got := clockCourses([]history.Fault{
		fault("clock-rate:client", "w2", nemesis.ClockRateRecord{Rate: 2, ObservedRate: &seen, ObservedLines: 40}),
		fault("clock-skew:server", "n1", nemesis.ClockSkewRecord{Offset: history.Duration(8 * time.Second), ObservedOffset: &obs}),
		fault("clock-skew:client", "w1", nemesis.ClockSkewRecord{Offset: history.Duration(-6 * time.Second)}),
		fault("clock-strobe:wall", "w3", nemesis.ClockStrobeRecord{Delta: history.Duration(4 * time.Second), Period: history.Duration(100 * time.Millisecond)}),
		fault("pause-holder", "w1", nemesis.PauseHolderRecord{TTLMultiple: 1.5}),
	})
	if len(got) != 4 {
		t.Fatalf("%d courses, want 4 (the clock faults): %+v", len(got), got)
	}
	if c := got[0]; c.Node != "w2" || c.Rate != 2 || c.ObservedRate == nil || *c.ObservedRate != seen || c.Start != 1e9 || c.Stop != 5e9 {
		t.Errorf("clock-rate: %+v", c)
	}
	if c := got[1]; c.Offset != 8*time.Second || c.ObservedOffset == nil || *c.ObservedOffset != 9*time.Second || c.LeaseOnly {
		t.Errorf("clock-skew:server: %+v", c)
	}
	if c := got[2]; c.Offset != -6*time.Second || !c.LeaseOnly {
		t.Errorf("clock-skew:client: %+v", c)
	}
	if c := got[3]; c.Delta != 4*time.Second || c.Period != 100*time.Millisecond {
		t.Errorf("clock-strobe: %+v", c)
	}
}
