package harness

import (
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/views"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// ReportInput is what a run's report is drawn from, but its files and its
// history: the test, the results, the workload's view, and what only the
// faults' own types can say (the report is a lower layer than nemesis):
// each fault's record in words (nemesis.Tell) and the clock faults'
// courses. Every writer of a run's report or of its story starts from it
// (the harness, zoo --publish, the matrix's story excerpts), so none of
// them draws a run with less than the others.
func ReportInput(test store.TestInfo, res *store.Results, dir string) report.Input {
	return report.Input{Test: test, Results: res, View: views.Of(res.Workload), Dir: dir,
		Clocks: clockCourses(res.Faults), Tell: nemesis.Tell}
}

// clockCourses is what the run's clock faults did to each process's clock,
// for the report's clock chart: each clock-rate, clock-skew and
// clock-strobe window, its fault parsed by name (nemesis.Parse) and its
// record read through the fault's own type. A fault whose record does not
// decode is left out (the faults table shows it as recorded).
func clockCourses(faults []history.Fault) []report.ClockCourse {
	var out []report.ClockCourse
	for _, f := range faults {
		parsed, err := nemesis.Parse(f.Fault)
		if err != nil || len(parsed) != 1 || len(f.Nodes) == 0 {
			continue
		}
		c := report.ClockCourse{Fault: f.Fault, Node: f.Nodes[0], Start: f.Start, Stop: f.Stop}
		switch fault := parsed[0].(type) {
		case nemesis.ClockRate:
			var rec nemesis.ClockRateRecord
			if f.DecodeFigures(&rec) != nil || rec.Rate == 0 {
				continue
			}
			c.Rate, c.ObservedRate = rec.Rate, rec.ObservedRate
		case nemesis.ClockSkew:
			var rec nemesis.ClockSkewRecord
			if f.DecodeFigures(&rec) != nil || rec.Offset == 0 {
				continue
			}
			c.Offset, c.LeaseOnly = rec.Offset.D(), fault.Scope == nemesis.ClockClient
			if rec.ObservedOffset != nil {
				o := rec.ObservedOffset.D()
				c.ObservedOffset = &o
			}
		case nemesis.ClockStrobe:
			var rec nemesis.ClockStrobeRecord
			if f.DecodeFigures(&rec) != nil || rec.Period <= 0 {
				continue
			}
			c.Delta, c.Period = rec.Delta.D(), rec.Period.D()
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}
