package view

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// The tests' histories and their results, as lockappendtest makes them.
type hist = lockappendtest.Hist

var (
	check          = lockappendtest.Check
	seedHistory    = lockappendtest.SeedHistory
	testInfo       = lockappendtest.TestInfo
	laResult       = lockappendtest.Result
	synthetic      = lockappendtest.Synthetic
	writeHistory   = lockappendtest.WriteHistory
	withFaultParam = lockappendtest.WithFaultParam
	pauseOf        = lockappendtest.Pause
	resultsOf      = lockappendtest.ResultsOf
)

// storiesOf builds the stories of a history checked by the real checkers.
func storiesOf(t *testing.T, ev []history.Event, fencing string, workers int) (lost, fenced []Story, res *store.Results) {
	t.Helper()
	res = check(t, ev)
	m, err := buildFromEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	lost, fenced = stories(m, laResult(res).LostUpdates.Elements, storyConfig{Fencing: fencing, TTL: "2s", Margin: "500ms", Workers: workers})
	return lost, fenced, res
}

// humanSize is n bytes for people, as the report writes sizes.
func humanSize(n int64) string { return report.File{Size: n}.HumanSize() }
