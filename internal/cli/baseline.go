package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fencecheck/fencecheck/internal/trends"
)

// compareBaseline compares the matrix just written in results with the
// baseline night read from dir (matrix --baseline), prints the outcome,
// records it in matrix.json and matrix-junit.xml (a failed case per
// regression) and returns the matrix's exit code: 1 on a
// regression, unless the harness failed (255 stays).
func compareBaseline(w io.Writer, results, dir string, baseline trends.Night, sum *matrixSummary) (int, error) {
	root, err := os.OpenRoot(results)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	now, err := trends.ReadNight(root, ".")
	if err != nil {
		return 0, err
	}
	cmp := trends.Compare(baseline, now)
	cmp.Baseline, _ = filepath.Abs(dir)
	sum.Baseline = &cmp
	code := sum.ExitCode
	if len(cmp.Regressions) > 0 && code != exitHarness {
		code = exitInvalid
	}
	sum.ExitCode = code
	if err := writeMatrix(results, *sum); err != nil {
		return 0, err
	}
	if err := writeMatrixJUnit(results, sum.Cells, cmp.Regressions...); err != nil {
		return 0, err
	}
	printComparison(w, cmp)
	return code, nil
}

// printComparison prints a comparison with a baseline: one line per
// regression, then the outcome.
func printComparison(w io.Writer, c trends.Comparison) {
	where := c.Baseline
	if c.BaselineNight != "." {
		where = filepath.Join(c.Baseline, c.BaselineNight)
	}
	fmt.Fprintf(w, "\nbaseline %s (started %s): %d cells compared", where, c.BaselineStarted.UTC().Format("2006-01-02 15:04:05Z"), c.Compared)
	if len(c.New) > 0 || len(c.Missing) > 0 {
		fmt.Fprintf(w, ", %d new, %d not in this matrix", len(c.New), len(c.Missing))
	}
	fmt.Fprintln(w)
	for _, r := range c.Regressions {
		fmt.Fprintf(w, "REGRESSION  %s: %s\n", r.Key, r.Message)
	}
	if len(c.Regressions) == 0 {
		fmt.Fprintf(w, "PASS  no cell regressed against the baseline\n")
		return
	}
	fmt.Fprintf(w, "FAIL  %d cells regressed against the baseline\n", len(c.Regressions))
}
