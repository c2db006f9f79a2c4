package report

import (
	"strings"
	"testing"
	"time"
)

// A clock-rate course drifts at rate - 1 until its heal and jumps back to
// true; a skew steps to its offset and back; a strobe flips once a period;
// what the log showed is drawn dashed beside what was set.
func TestClockCourseShapes(t *testing.T) {
	seen := 1.9
	rate := ClockCourse{Fault: "clock-rate:client", Node: "w2", Start: 1e9, Stop: 5e9, Rate: 2, ObservedRate: &seen}
	set, obs, band := rate.course(10e9)
	if band || len(set) != 3 || set[1] != (seriesPoint{5e9, 4}) || set[2] != (seriesPoint{5e9, 0}) {
		t.Errorf("clock-rate x2 over 4s: %v, want 4s ahead at the heal, then true", set)
	}
	if len(obs) != 2 || obs[1].v < 3.59 || obs[1].v > 3.61 {
		t.Errorf("observed x1.9 over 4s: %v, want 3.6s ahead", obs)
	}
	skew := ClockCourse{Fault: "clock-skew:wall", Node: "w1", Start: 1e9, Stop: -1, Offset: -3 * time.Second}
	if set, _, _ := skew.course(8e9); len(set) != 4 || set[1].v != -3 || set[2] != (seriesPoint{8e9, -3}) {
		t.Errorf("a skew not healed before the end: %v", set)
	}
	strobe := ClockCourse{Fault: "clock-strobe:server", Node: "n2", Start: 0, Stop: 1e9, Delta: 2 * time.Second, Period: 100 * time.Millisecond}
	set, _, band = strobe.course(2e9)
	jumps := 0
	for i := 1; i < len(set); i++ {
		if set[i].t == set[i-1].t && set[i].v != set[i-1].v {
			jumps++
		}
	}
	if band || jumps != 10 { // on, then a flip every 100ms: the 9th back to true, where the heal leaves it
		t.Errorf("a 1s strobe of 100ms: %d jumps, want 10: %v", jumps, set)
	}
	long := ClockCourse{Fault: "clock-strobe:server", Node: "n2", Start: 0, Stop: 100e9, Delta: time.Second, Period: 50 * time.Millisecond}
	if _, _, band := long.course(100e9); !band {
		t.Error("2000 flips are drawn one by one")
	}

	f, legend := DrawClocks("clocks", []ClockCourse{rate, skew, long}, 100e9)
	if len(legend) != 3 {
		t.Errorf("legend %v, want a colour per node", legend)
	}
	var set2, seen2 int
	for _, p := range f.Paths {
		switch {
		case strings.Contains(p.Class, "clk set"):
			set2++
		case strings.Contains(p.Class, "clk seen"):
			seen2++
		}
	}
	if set2 != 2 || seen2 != 1 || len(f.Rects) != 1 {
		t.Errorf("%d set lines, %d observed, %d strobe bands; want 2, 1, 1", set2, seen2, len(f.Rects))
	}
}
