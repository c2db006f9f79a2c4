package report

import (
	"strings"
	"testing"
	"time"
)

// A clock-rate course drifts at rate - 1 until its heal and jumps back to
// true; a skew steps to its offset and back; a strobe flips once a period;
// what the log showed is drawn dotted beside what was set.
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

// What a process's log stamps showed is in the legend, and drawn in a
// style of its own (dark dots), which shows over the line of what was set
// where the two agree (it was the same colour, dashed, and vanished).
func TestClockChartObservedInLegend(t *testing.T) {
	seen := 0.2
	in := &Input{Clocks: []ClockCourse{{Fault: "clock-rate:client", Node: "w2", Start: 1e9, Stop: 5e9, Rate: 0.2, ObservedRate: &seen}}}
	sec, ok := clockSection(in)
	if !ok {
		t.Fatal("no clock section")
	}
	var b strings.Builder
	if err := tmpl.ExecuteTemplate(&b, "clock-chart", sec.data); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `<line class="clk seen" x1="2" y1="7" x2="26" y2="7"/></svg>what its log stamps showed`) {
		t.Errorf("the legend does not show the observed line:\n%s", page)
	}
	if !strings.Contains(page, `<path class="clk seen c0"`) {
		t.Error("the observed course is not drawn")
	}
	// Its colour is its own, set after the nodes' (the later rule wins).
	if i, j := strings.Index(clockCSS, ".clk.c5{"), strings.Index(clockCSS, ".clk.seen{stroke:#111"); i < 0 || j < i {
		t.Error("the observed line takes its node's colour")
	}
}
