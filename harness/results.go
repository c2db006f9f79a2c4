package harness

import "github.com/fencecheck/fencecheck/store"

// WriteResults writes results.json and report.html.
func WriteResults(run *store.Run, test store.TestInfo, res *store.Results) error {
	if err := run.WriteJSON(store.ResultsFile, res); err != nil {
		return err
	}
	return store.WriteReport(run, test, res)
}
