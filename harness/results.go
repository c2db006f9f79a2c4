package harness

import (
	"github.com/fencecheck/fencecheck/report"
	"github.com/fencecheck/fencecheck/store"
)

// WriteResults writes results.json, report.html and junit.xml, and rewrites
// the index.html of the results directory so that it lists the run.
func WriteResults(run *store.Run, test store.TestInfo, res *store.Results) error {
	if err := run.WriteJSON(store.ResultsFile, res); err != nil {
		return err
	}
	if err := report.Write(run, test, res); err != nil {
		return err
	}
	if err := report.WriteJUnit(run, test, res); err != nil {
		return err
	}
	return report.WriteIndex(run.Root)
}
