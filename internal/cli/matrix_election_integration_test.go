package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A matrix of two workloads on two targets: lock-append and election on
// etcd and ZooKeeper, fencing none, token and term, one seed. Each workload
// runs the modes it takes (token lock-append's, term election's) and the
// rest are skipped with the reason; every cell's figures are its run's own
// (results.json read back), the term cells are judged, and merge, trends
// and the JUnit file carry the election cells under their fencing.
func TestMatrixElectionAxis(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	root := t.TempDir()
	res := filepath.Join(root, "night-1")
	r := runCLI(t, nil, "matrix", "--workload", "lock-append,election", "--target", "etcd,zookeeper",
		"--fencing", "none,token,term", "--nemesis", "pause-holder", "--time-limit", "10s", "--seed", "1",
		"--results", res, "--quiet")
	if r.code != exitValid && r.code != exitInvalid {
		t.Fatalf("exit %d", r.code)
	}
	for _, s := range []string{"fencing term: the lock-append workload fences with none, token or cas",
		"fencing token: the election workload fences with none or term"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr does not say %q", s)
		}
	}
	sum := readMatrix(t, res)
	want := map[string]bool{ // workload fencing -> must be valid
		"lock-append none": false, "lock-append token": true, "election none": false, "election term": true,
	}
	seen := map[string]int{}
	for _, c := range sum.Cells {
		k := c.WorkloadName() + " " + c.Fencing
		seen[k]++
		if mbv, ok := want[k]; !ok || mbv != c.MustBeValid {
			t.Errorf("cell %s %s: must be valid %v", c.Target, k, c.MustBeValid)
		}
		if c.RunDir == "" {
			t.Errorf("cell %s %s: no run (%s %s)", c.Target, k, c.Verdict, c.Error)
			continue
		}
		var back store.Results
		b, err := os.ReadFile(filepath.Join(c.RunDir, store.ResultsFile))
		if err != nil || json.Unmarshal(b, &back) != nil {
			t.Fatalf("cell %s %s: results.json: %v", c.Target, k, err)
		}
		s := back.Result.Summary()
		if back.Workload != c.WorkloadName() || s.Verdict.String() != c.Verdict || s.Lost != c.Lost || s.Acknowledged != c.Acknowledged ||
			s.FenceRejections != c.FenceRejections || s.Ops == nil || c.OpsOK == nil || *c.OpsOK != s.Ops.OK {
			t.Errorf("cell %s %s: matrix.json %s %d/%d lost, %d rejections; results.json %s %s %+v", c.Target, k, c.Verdict,
				c.Lost, c.Acknowledged, c.FenceRejections, back.Workload, s.Verdict, s)
		}
		if c.WorkloadName() == "election" && s.Acknowledged == 0 {
			t.Errorf("cell %s %s: no entry acknowledged", c.Target, k)
		}
	}
	if len(sum.Cells) != 8 || len(seen) != 4 {
		t.Errorf("%d cells %v, want 8: each of %v on each target", len(sum.Cells), seen, want)
	}
	junit, err := os.ReadFile(filepath.Join(res, matrix.JUnitFile))
	if err != nil || strings.Count(string(junit), "<testcase") != 8 || !strings.Contains(string(junit), "election lock-store pause-holder fencing term") {
		t.Errorf("JUnit (%v):\n%s", err, junit)
	}

	// trends keys the election cells by their fencing, and names their
	// workload in its table.
	tr := runCLI(t, nil, "trends", root)
	if !strings.Contains(tr.stdout, "zookeeper election") {
		t.Errorf("trends' table does not name the election cells:\n%s", tr.stdout)
	}
	var ts trends.Summary
	if b, err := os.ReadFile(filepath.Join(root, trends.JSONFile)); err != nil || json.Unmarshal(b, &ts) != nil {
		t.Fatalf("trends (exit %d): %v\n%s", tr.code, err, tr.stderr)
	}
	keys := map[string]bool{}
	for _, c := range ts.Cells {
		keys[c.Key.String()] = true
	}
	for _, k := range []string{"etcd election lock-store pause-holder term #1", "zookeeper lock-store pause-holder token #1"} {
		if !keys[k] {
			t.Errorf("trends has no cell %q: %v", k, keys)
		}
	}

	// merge of the one directory gives the same cells.
	merged := t.TempDir()
	m := runCLI(t, nil, "merge", "--results", merged, res)
	got := readMatrix(t, merged)
	if m.code != sum.ExitCode || len(got.Cells) != len(sum.Cells) {
		t.Fatalf("merge: exit %d, %d cells; matrix exit %d\n%s", m.code, len(got.Cells), sum.ExitCode, m.stderr)
	}
	for i, c := range sum.Cells {
		if g := got.Cells[i]; matrix.CellKey(g) != matrix.CellKey(c) || g.Verdict != c.Verdict {
			t.Errorf("merged cell %d: %s %s, want %s %s", i, matrix.CellKey(g), g.Verdict, matrix.CellKey(c), c.Verdict)
		}
	}
	assertRunsGone(t, res)
}
