// Package views pairs each workload with its report page. The pairing
// lives here, not in the workloads, so that a workload's package links no
// report: the worker binary (cmd/fencecheck-worker) runs the workloads'
// operations and never renders a page.
package views

import (
	"github.com/fencecheck/fencecheck/internal/clients/workloads/election"
	electionview "github.com/fencecheck/fencecheck/internal/clients/workloads/election/view"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	lockappendview "github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend/view"
	"github.com/fencecheck/fencecheck/internal/report"
)

// byWorkload is each workload's page, by its name; a workload not listed
// gets the generic page.
var byWorkload = map[string]report.View{
	lockappend.Workload{}.Name(): lockappendview.View,
	election.Workload{}.Name():   electionview.View,
}

// Of returns the report page of the workload named name: nil (the generic
// page) for a workload without its own.
func Of(name string) report.View { return byWorkload[name] }

// leads is each workload's first story in one line, as its page's header
// gives it; a workload not listed tells no story.
var leads = map[string]func(*report.Input) string{
	lockappend.Workload{}.Name(): lockappendview.Lead,
}

// Lead is the first story the report of a run of the workload named name
// tells, in one line ("" when its page tells none): what a matrix's JUnit
// file and job summary say happened in a cell.
func Lead(name string, in *report.Input) string {
	if f := leads[name]; f != nil && in.Results != nil {
		return f(in)
	}
	return ""
}
