package harness

import (
	"github.com/fencecheck/fencecheck/report"
	"github.com/fencecheck/fencecheck/store"
	"github.com/fencecheck/fencecheck/workloads"
)

// WriteResults writes results.json, report.html (the workload's view) and
// junit.xml, and rewrites the index.html of the results directory so that
// it lists the run.
func WriteResults(run *store.Run, test store.TestInfo, res *store.Results, w workloads.Workload) error {
	if err := run.WriteJSON(store.ResultsFile, res); err != nil {
		return err
	}
	if err := report.Write(run, test, res, w.View()); err != nil {
		return err
	}
	if err := report.WriteJUnit(run, test, res); err != nil {
		return err
	}
	return report.WriteIndex(run.Root)
}
