package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

// merge --baseline compares the merged matrix with the last night as
// matrix --baseline does: a fenced cell valid then and invalid now is a
// regression (exit 1, in matrix.json), and the job summary's first row.
func TestMergeBaseline(t *testing.T) {
	nights := t.TempDir()
	writeNight(t, nights, "night-1", time.Now().Add(-24*time.Hour), nightCell("redis", "none", "invalid", 2), nightCell("redis", "token", "valid", 0))
	shard := t.TempDir()
	cells := []trends.MatrixCell{nightCell("redis", "none", "invalid", 3), nightCell("redis", "token", "invalid", 5)}
	for i := range cells {
		cells[i].Cell = i
		cells[i].Run = "redis-" + cells[i].Fencing + "/20261202T021700.00" + string(rune('0'+i)) + "Z"
		os.MkdirAll(filepath.Join(shard, cells[i].Run), 0o755)
		os.WriteFile(filepath.Join(shard, cells[i].Run, "test.json"), []byte(`{"target":"redis"}`), 0o644)
	}
	cells[1].Story = "Process 5 (token 1) wrote its stale list at 21.04s: element 8 of process 3 (token 4) lost."
	if err := matrix.Write(shard, trends.Matrix{Started: time.Now(), Cells: cells, TotalCells: 2, ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "nightly")
	summary := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv(matrix.StepSummaryEnv, summary)
	code, stdout, stderr := runInProcess("merge", "--results", out, "--baseline", nights, shard)
	if code != exitInvalid || !strings.Contains(stdout, "REGRESSION  redis lock-store pause-holder,kill token #1") {
		t.Fatalf("merge --baseline: exit %d\n%s%s", code, stdout, stderr)
	}
	sum := readMatrix(t, out)
	if sum.Baseline == nil || len(sum.Baseline.Regressions) != 1 {
		t.Errorf("matrix.json's baseline: %+v", sum.Baseline)
	}
	md, _ := os.ReadFile(summary)
	var rows []string
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "| **") || strings.HasPrefix(l, "| expected") || strings.HasPrefix(l, "| pass") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "| **REGRESSION** | redis lock-append lock-store pause-holder,kill fencing token seed 1 (cell 1) | invalid | 5 of 40 | must be valid: was valid, now invalid (lost 5 of 40): Process 5 (token 1)") ||
		!strings.HasPrefix(rows[1], "| expected |") {
		t.Errorf("summary rows:\n%s", strings.Join(rows, "\n"))
	}
	// A baseline that is not a matrix is bad input, before anything is
	// merged.
	if code, _, _ := runInProcess("merge", "--results", filepath.Join(t.TempDir(), "x"), "--baseline", t.TempDir(), shard); code != exitBadArgs {
		t.Errorf("merge --baseline of no night: exit %d, want 254", code)
	}
}
