package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/register"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// TestBoundResultsCutsEveryWorkload: the page bounds each workload's free
// text through its CutText, and leaves the stored result as it was.
func TestBoundResultsCutsEveryWorkload(t *testing.T) {
	huge := strings.Repeat("x", 10*MaxText)
	la := &lockappend.Result{Valid: checkers.Unknown, Error: huge}
	la.Checkers.Overlap.Message = huge
	reg := &register.Result{Valid: checkers.Unknown, Error: huge}
	reg.Checkers.Linearizable.FailingKey = huge
	for _, r := range []store.WorkloadResult{la, reg} {
		out := boundResults(&store.Results{Result: r})
		got, err := json.Marshal(out.Result)
		if err != nil || len(got) > 4*MaxText {
			t.Errorf("%T: %d bytes of JSON after bounding", r, len(got))
		}
		if out.Result.Verdict() != checkers.Unknown {
			t.Errorf("%T: verdict %s", r, out.Result.Verdict())
		}
	}
	if la.Error != huge || reg.Checkers.Linearizable.FailingKey != huge {
		t.Error("the stored result was changed")
	}
}
