package matrix

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
)

// Command is a matrix command's cells and choices (matrix): Cells the
// matrix's cells (matrix.Cells, with each cell's configuration), Shard the cells
// this run takes (I of N, or chosen cells: a chosen cell the matrix does
// not have is a usage error), List to print them instead of running them (Images:
// the kinds of images they use, CellImages), Strict and
// Args as matrix.json keeps them, Results the results directory as given,
// BaselineDir a baseline to compare with ("" for none).
type Command struct {
	// Cells makes the matrix's cells and says what it left out; it is
	// called once the baseline is read.
	Cells       func() (all []Job, skipped []string, err error)
	Shard       Shard
	List        bool
	Images      bool
	Strict      bool
	Args        []string
	Results     string
	BaselineDir string
}

// Run runs the command's shard of cells (Run) on the engine the getter
// returns, with progress on ui, prints the table, compares with the
// baseline and appends the job summary (GITHUB_STEP_SUMMARY) and, unless
// sharded, GitHub's error annotations (GITHUB_ACTIONS); it returns
// the matrix's exit code. A matrix with no cell to judge, or a bad
// baseline, is an error that wraps cmdline.ErrUsage.
func (c Command) Run(ctx context.Context, ui Progress, engine func(context.Context) (runtime.Engine, error), stdout io.Writer) (int, error) {
	var baseline *trends.Night
	if c.BaselineDir != "" {
		b, err := trends.Baseline(c.BaselineDir)
		if err != nil {
			return 0, fmt.Errorf("%w: --baseline: %w", cmdline.ErrUsage, err)
		}
		baseline = &b
	}
	all, skipped, err := c.Cells()
	if err != nil {
		return 0, err
	}
	for _, s := range skipped {
		fmt.Fprintf(ui.Log, "fencecheck: skipped: %s\n", s)
	}
	judged := false
	var cells []Job
	for i, cell := range all {
		judged = judged || cell.MustBeValid
		cell.Cell = i
		if c.Shard.Has(i) {
			cells = append(cells, cell)
		}
	}
	if n := len(c.Shard.Cells); n > 0 && c.Shard.Cells[n-1] >= len(all) {
		return 0, fmt.Errorf("%w: --cell %d: the matrix has %d cells, 0 to %d (matrix --list prints them)", cmdline.ErrUsage, c.Shard.Cells[n-1], len(all), len(all)-1)
	}
	if !judged {
		return 0, fmt.Errorf("%w: no cell would be judged (unfenced cells, and register cells in a read mode the target does not promise linearizable, are reported, not judged): add a fenced mode (--fencing none,token) or --strict", cmdline.ErrUsage)
	}
	if c.List {
		printCells(stdout, cells)
		return ExitValid, nil
	}
	if c.Images {
		kinds, err := CellImages(cells)
		if err != nil {
			return 0, err
		}
		for _, k := range kinds {
			fmt.Fprintln(stdout, k)
		}
		return ExitValid, nil
	}
	results, err := filepath.Abs(c.Results)
	if err != nil {
		return 0, fmt.Errorf("%w: --results: %w", cmdline.ErrUsage, err)
	}
	sum := trends.Matrix{Started: time.Now().UTC(), Args: c.Args, Strict: c.Strict, Cells: Records(cells), TotalCells: len(all)}
	if sh := c.Shard; sh.Partial() {
		sum.Shard = sh.String()
		what := "shard " + sh.String()
		if sh.Cells != nil {
			what = sh.String()
		}
		fmt.Fprintf(ui.Log, "fencecheck: %s: %d of the matrix's %d cells\n", what, len(cells), len(all))
		if len(cells) == 0 {
			if err := Write(results, sum); err != nil {
				return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
			}
			fmt.Fprintf(stdout, "shard %s has no cell (the matrix has %d)\n", sh, len(all))
			return ExitValid, nil
		}
	}
	if err := Run(ctx, cells, results, &sum, ui, engine); err != nil {
		return 0, err
	}
	Print(stdout, sum.Cells, sum.ExitCode)
	if baseline != nil {
		code, err := CompareBaseline(stdout, results, c.BaselineDir, *baseline, &sum)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		sum.ExitCode = code
	}
	if err := AppendStepSummary("matrix --results "+c.Results, results, sum); err != nil {
		fmt.Fprintf(ui.Log, "fencecheck: job summary not written: %v\n", err)
	}
	if !c.Shard.Partial() { // a shard's failing cells are annotated by their merge
		if err := AppendAnnotations(stdout, results, sum); err != nil {
			fmt.Fprintf(ui.Log, "fencecheck: annotations not written: %v\n", err)
		}
	}
	fmt.Fprintf(stdout, "  summary  %s\n  junit    %s\n  index    %s\n", filepath.Join(results, File), filepath.Join(results, JUnitFile), filepath.Join(results, report.IndexFile))
	return sum.ExitCode, nil
}

// CellImages are the kinds of fencecheck's images the cells use
// (harness.Config.ImageKinds; a refused cell runs nothing), each once, in
// kinds.Kinds' order (a kind's other versions after it): matrix --images,
// for a CI cache of exactly the images a matrix's shard loads. A cell
// whose servers cannot be laid out is an error (it would fail to run).
func CellImages(cells []Job) ([]string, error) {
	var out []string
	for _, c := range cells {
		if c.Refusal != nil {
			continue
		}
		ks, err := c.Config.ImageKinds()
		if err != nil {
			return nil, fmt.Errorf("cell %d (%s): %w", c.Cell, CaseName(c.MatrixCell), err)
		}
		for _, k := range ks {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	rank := func(k string) (int, string) {
		kind, version := kinds.SplitKind(k)
		return slices.Index(kinds.Kinds, kind), version
	}
	slices.SortFunc(out, func(a, b string) int {
		ra, va := rank(a)
		rb, vb := rank(b)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(va, vb))
	})
	return out, nil
}

// printCells prints matrix --list: a line per cell.
func printCells(w io.Writer, cells []Job) {
	for _, c := range cells {
		judge := "reported"
		if c.MustBeValid {
			judge = "must be valid"
		}
		axes := "" // a last column when the cell has axes
		if c.Axes != nil {
			axes = "\t" + c.AxesText()
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s%s\n", c.Cell, TargetWords(c.MatrixCell), c.WorkloadName(), c.Resource, c.Nemesis, c.Mode(), c.Seed, judge, axes)
	}
}
