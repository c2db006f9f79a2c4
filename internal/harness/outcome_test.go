package harness

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A run whose results cannot be written (its directory gone, as on a full
// disk) keeps the verdict it computed: writeOutcome returns the outcome
// with NotWritten and an error wrapping ErrNotWritten (issue: the run
// exited 255 and threw the verdict away).
func TestVerdictSurvivesAFailedWrite(t *testing.T) {
	run, err := store.NewRun(t.TempDir(), "full-disk", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewMemoryRecorder()
	// One acknowledged append that the final read does not have: lost.
	rec.Record(0, history.Invoke, la.FAppend, la.Invoke{Element: 1})
	rec.Record(0, history.Ok, la.FAppend, la.Completion{Element: 1, Token: 1, Read: []int64{}})
	rec.Record(FinalReadProcess, history.Invoke, la.FFinalRead, nil)
	rec.Record(FinalReadProcess, history.Ok, la.FFinalRead, la.ReadValue{Value: []int64{}})
	w := lockappend.Workload{}
	res, err := Check(run, w, rec.Events(), 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(run.Dir); err != nil {
		t.Fatal(err)
	}
	out, err := writeOutcome(&Outcome{Run: run, Results: res}, rec.Events(), w)
	if !errors.Is(err, ErrNotWritten) || !errors.Is(err, ErrHarness) {
		t.Fatalf("error %v: want ErrNotWritten", err)
	}
	if out == nil || out.NotWritten == nil || out.Results.Valid() != checkers.Invalid {
		t.Fatalf("outcome %+v: want the invalid verdict kept, with why it was not written", out)
	}
}
