package matrix

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// attemptShard writes a whole matrix's results directory (2 cells) as one
// attempt of a CI run leaves it: its cells' runs started at base plus
// their cell number in seconds, each run holding a file naming the attempt.
func attemptShard(t *testing.T, attempt string, base time.Time, verdicts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fencecheck-shard-1-of-1-"+attempt)
	var cells []trends.MatrixCell
	for i, v := range verdicts {
		c := cell(i, []string{"none", "token"}[i], v)
		c.Run = ""
		if v != "not run" {
			c.Run = "etcd-" + c.Fencing + "/" + base.Add(time.Duration(i)*time.Second).Format(store.StampLayout)
			if err := os.MkdirAll(filepath.Join(dir, c.Run), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, c.Run, "attempt"), []byte(attempt), 0o644)
		}
		cells = append(cells, c)
	}
	if err := Write(dir, trends.Matrix{Started: base, Args: []string{"--target", "etcd"}, Cells: cells, TotalCells: len(cells)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A re-run's results downloaded beside the first attempt's: merge keeps
// each cell's newest run, whichever directory is given first, says so on
// stdout, in matrix.json and in the job summary; a newer copy that did not
// run does not replace one that ran.
func TestMergeKeepsTheNewestAttempt(t *testing.T) {
	night := time.Date(2026, 12, 6, 2, 17, 0, 0, time.UTC)
	first := attemptShard(t, "attempt-1", night, "invalid", "invalid")
	rerun := attemptShard(t, "attempt-2", night.Add(40*time.Minute), "invalid", "valid")
	for _, order := range [][]string{{first, rerun}, {rerun, first}} {
		out := filepath.Join(t.TempDir(), "nightly")
		summary := filepath.Join(t.TempDir(), "summary.md")
		t.Setenv(StepSummaryEnv, summary)
		var stdout, stderr bytes.Buffer
		code, err := MergeShards(out, order, "", &stdout, &stderr)
		if err != nil || code != ExitValid {
			t.Fatalf("merge %s: exit %d, %v\n%s%s", order, code, err, stdout.String(), stderr.String())
		}
		m := readMerged(t, out)
		for i, c := range m.Cells {
			b, err := os.ReadFile(filepath.Join(out, c.Run, "attempt"))
			if err != nil || string(b) != "attempt-2" {
				t.Errorf("merge %s: cell %d kept %s's run (%v), want the re-run's", order, i, b, err)
			}
		}
		if m.Cells[1].Verdict != "valid" {
			t.Errorf("merge %s: cell 1 is %s, the re-run's is valid", order, m.Cells[1].Verdict)
		}
		if len(m.Duplicates) != 2 || m.Duplicates[1].Kept.Shard != rerun || len(m.Duplicates[1].Dropped) != 1 || m.Duplicates[1].Dropped[0].Shard != first {
			t.Errorf("merge %s: matrix.json's duplicates %+v", order, m.Duplicates)
		}
		if n := strings.Count(stdout.String(), "  re-run   cell "); n != 2 || !strings.Contains(stdout.String(), "2 of them in more than one shard directory") ||
			!strings.Contains(stdout.String(), "kept the newest, "+rerun+"/etcd-token/") {
			t.Errorf("merge %s: stdout says %d re-run lines:\n%s", order, n, stdout.String())
		}
		md, _ := os.ReadFile(summary)
		if !strings.Contains(string(md), "2 cells were in more than one shard directory") || strings.Count(string(md), "kept the newest") != 2 {
			t.Errorf("merge %s: the summary does not say which copies were kept:\n%s", order, md)
		}
	}

	// A re-run interrupted before cell 1 (not run) keeps the first
	// attempt's run of it, and its own of cell 0.
	cut := attemptShard(t, "attempt-3", night.Add(time.Hour), "invalid", "not run")
	out := filepath.Join(t.TempDir(), "nightly")
	m, err := Merge(out, []string{first, cut}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"attempt-3", "attempt-1"} {
		if b, _ := os.ReadFile(filepath.Join(out, m.Cells[i].Run, "attempt")); string(b) != want {
			t.Errorf("cell %d kept %q, want %s", i, b, want)
		}
	}
	if len(m.Duplicates) != 2 || m.Duplicates[1].Kept.Shard != first {
		t.Errorf("duplicates %+v", m.Duplicates)
	}
}

func readMerged(t *testing.T, dir string) trends.Matrix {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	m, err := trends.DecodeMatrix(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
