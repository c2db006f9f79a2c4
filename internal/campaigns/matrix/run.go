package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/targets"
)

// Progress is how Run tells of its cells: Stage and Update as
// harness.Config's, Done when a cell's run returns, and Log for a line
// about a cell (its verdict, a refusal, a harness failure).
type Progress struct {
	Stage  func(format string, a ...any)
	Update func(harness.Status)
	Done   func()
	Log    io.Writer
}

// Run runs the jobs one after another into results (an absolute path),
// each with its verdict recorded in its cell; after every cell it writes
// sum, with the cells so far and the exit code, as matrix.json and
// matrix-junit.xml, so that a matrix killed half-way leaves what it found.
// A cell left when ctx ends is "not run". Its errors (writing the files)
// wrap harness.ErrHarness.
//
// Each cell runs on the engine that engine returns just before the cell's
// run (harness.RunOn), and only a cell that runs calls it; an error of
// engine's is the cell's harness failure, as a run's own. The engines are
// the caller's: the caller connects once and returns the same engine to
// every call, and closes it after Run; Run closes none.
func Run(ctx context.Context, jobs []Job, results string, sum *trends.Matrix, ui Progress, engine func(context.Context) (runtime.Engine, error)) error {
	for i := range jobs {
		c := &jobs[i]
		switch {
		case ctx.Err() != nil:
			c.Verdict = "not run"
		case c.Refusal != nil:
			c.record(ctx, nil, c.Refusal, results, fmt.Sprintf("[%d/%d]", i+1, len(jobs)), ui.Log)
		default:
			ui.Stage("[%d/%d] %s %s, resource %s, nemesis %s, %s%s, seed %d", i+1, len(jobs), TargetWords(c.MatrixCell), c.WorkloadName(), c.Resource, c.Nemesis, ModeWords(c.MatrixCell), AxisWords(c.MatrixCell), c.Seed)
			c.Config.Stage = ui.Stage
			c.Config.Progress = ui.Update
			out, err := harness.RunOn(ctx, engine, c.Config)
			ui.Done()
			c.record(ctx, out, err, results, fmt.Sprintf("[%d/%d]", i+1, len(jobs)), ui.Log)
		}
		sum.Cells = Records(jobs)
		sum.ExitCode = Exit(sum.Cells, ctx.Err() != nil)
		if err := Write(results, *sum); err != nil {
			return fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		if err := WriteJUnit(results, sum.Cells); err != nil {
			return fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
	}
	return nil
}

// record records how the cell's run ended (out and err from harness.Run)
// and tells log, the line starting with at ("[2/6]").
func (c *Job) record(ctx context.Context, out *harness.Outcome, err error, results, at string, log io.Writer) {
	switch {
	case err != nil && ctx.Err() != nil:
		c.Verdict, c.Error = "not run", "interrupted during set-up: "+err.Error()
	case errors.Is(err, targets.ErrBadConfig):
		// Found before the run (Job.Refusal: client.json declares
		// no tokens) or once it began (a client program that says at
		// init its grants carry no token): the cell cannot run, and the
		// harness did not fail.
		c.Verdict, c.Error = trends.Refused, err.Error()
		fmt.Fprintf(log, "fencecheck: %s refused: %v\n", at, err)
	case err != nil:
		c.Verdict, c.Error = "error", err.Error()
		fmt.Fprintf(log, "fencecheck: %s harness failed: %v\n", at, err)
	default:
		c.fill(out)
		c.Run, _ = filepath.Rel(results, c.RunDir)
		if c.Verdict != checkers.Valid.String() {
			c.Story = Lead(c.RunDir)
		}
		fmt.Fprintf(log, "fencecheck: %s %s: %d of %d lost, %d fence rejections, %s\n",
			at, strings.ToUpper(c.Verdict), c.Lost, c.Acknowledged, c.FenceRejections, c.RunDir)
	}
}
