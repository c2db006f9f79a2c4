package matrix

import (
	"encoding/json"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/views"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// maxStory bounds a story's line in matrix.json, the JUnit file and the
// job summary (a lead names at most a few elements; this is a ceiling).
const maxStory = 400

// Lead is the first story the report of the run in dir tells, in one line
// (views.Lead: the lost update's, or the fence rejection's), read from the
// run's test.json, results.json and history; "" when its report tells
// none or its files do not read.
func Lead(dir string) string {
	run, err := store.Open(dir)
	if err != nil {
		return ""
	}
	var test store.TestInfo
	var raw json.RawMessage
	var res store.Results
	if run.ReadJSON(store.TestFile, &test) != nil || run.ReadJSON(store.ResultsFile, &raw) != nil || json.Unmarshal(raw, &res) != nil {
		return ""
	}
	w, err := tables.Lookup(tables.Workloads, "workload", res.Workload)
	if err != nil {
		return ""
	}
	if res.Result, err = w.Decode(raw); err != nil {
		return ""
	}
	events, err := history.ReadFile(run.Path(store.HistoryFile))
	if err != nil {
		return ""
	}
	in := harness.ReportInput(test, &res, run.Dir)
	in.Events = events
	return report.Clip(views.Lead(w.Name(), &in), maxStory)
}
