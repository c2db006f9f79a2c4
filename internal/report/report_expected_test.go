package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/register"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A run's report and the run index say an invalid run's verdict in the same
// words: "invalid (expected)", not the red of a failure, for an unfenced
// lock-append run (its lost updates are the finding), and "invalid" for a
// fenced run or an unfenced register run, which are judged.
func TestReportVerdictAgreesWithIndex(t *testing.T) {
	cases := []struct {
		fencing, workload string
		result            store.WorkloadResult
		expected          bool
	}{
		{"none", "lock-append", &lockappend.Result{Valid: checkers.Invalid}, true},
		{"token", "lock-append", &lockappend.Result{Valid: checkers.Invalid}, false},
		{"none", "register", &register.Result{Valid: checkers.Invalid}, false},
	}
	badge := regexp.MustCompile(`<span class="verdict ([^"]*)"[^>]*id="verdict">([^<]*)</span>`)
	for _, c := range cases {
		name := c.fencing + "-" + c.workload
		// The index, from the run's files.
		root := t.TempDir()
		dir := filepath.Join(root, "etcd-"+name, "20261201T000000.000Z")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "test.json"), []byte(`{"target": "etcd", "fencing": "`+c.fencing+`", "workload": "`+c.workload+`"}`), 0o644)
		os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"valid": false, "workload": "`+c.workload+`"}`), 0o644)
		runs, err := ScanRuns(root)
		if err != nil || len(runs) != 1 {
			t.Fatalf("%s: %d runs, %v", name, len(runs), err)
		}
		if runs[0].ExpectedInvalid() != c.expected {
			t.Errorf("%s: the index says expected-invalid %v, want %v", name, runs[0].ExpectedInvalid(), c.expected)
		}
		// The report, from the same configuration and verdict.
		test := lockappendtest.TestInfo(c.fencing, 1)
		test.Workload = c.workload
		page := render(t, Input{Test: test, Results: &store.Results{Workload: c.workload, Result: c.result}})
		m := badge.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: no verdict badge", name)
		}
		wantClass, wantText := "invalid", "invalid"
		if c.expected {
			wantClass, wantText = "invalid expected", "invalid (expected)"
		}
		if m[1] != wantClass || m[2] != wantText {
			t.Errorf("%s: the report's badge is class %q %q, want %q %q (as the index)", name, m[1], m[2], wantClass, wantText)
		}
		title := regexp.MustCompile(`<title>fencecheck ([^<]*)</title>`).FindStringSubmatch(page)
		if title == nil || !strings.HasPrefix(title[1], strings.ToUpper(wantText)+" ·") {
			t.Errorf("%s: the report's title %q does not begin with %q", name, title, strings.ToUpper(wantText))
		}
	}
}
