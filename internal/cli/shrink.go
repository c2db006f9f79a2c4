package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/campaigns/shrink"
	"github.com/fencecheck/fencecheck/internal/harness"
)

// cmdShrink searches for the smallest run that fails as a stored run did
// and writes the smallest it confirmed (shrink.Run): its flags are
// shrink.RunOptions, each candidate a rerun of the stored run built as
// rerun builds it (parts.RerunConfig), and shrink.Run's exit code and error are
// its own.
func cmdShrink(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("shrink", stderr, "Each candidate is a rerun of the stored run (its configuration, seed and recorded fault\n"+
		"schedule, as rerun replays it) with one reduction more, in this order: faults dropped from the\n"+
		"schedule (those the run's lost updates blame tried alone first), fewer clients (down to 2), a\n"+
		"shorter time limit (a little past the first loss), fewer nodes (when the target allows and no\n"+
		"fault names a node), then each fault's hold shortened. A candidate is kept only when it fails\n"+
		"a checker the stored run failed, with the same verdict, in K of N runs (--confirm). The\n"+
		"budget bounds the runs; Ctrl-C ends the search and keeps the best found so far.\n\n"+
		"Output (--out): run/ (a copy of the smallest failing run: fencecheck rerun OUT/run replays\n"+
		"its schedule), experiment.json (its configuration and schedule as a run file: run -f replays\n"+
		"the schedule too), repro.md (a bug report draft) and shrink.json (every candidate and its runs).\n\n"+
		"Exit 1 when a smaller failing run was confirmed, 2 when none was (the output then holds the\n"+
		"stored run), 254 for a run that did not fail (a valid one: nothing to shrink), or that cannot be\n"+
		"re-run, 255 when the harness failed.\n\n"+
		"A run on existing servers (run --endpoints) takes their endpoints and credentials from here,\n"+
		"as rerun does, never from test.json.\n\n")
	confirm := fs.String("confirm", "2/3", "K/N: a candidate is kept when at least K of N runs fail")
	budget := fs.String("budget", "40", "the most runs (a count), or the longest search (a duration, as 30m)")
	results := fs.String("results", "./results", "results directory of the candidates' runs")
	out := fs.String("out", "", "output directory, new or empty (default RESULTS/NAME-shrunk/TIME)")
	unknown := fs.Bool("unknown", false, "shrink an unknown run: a candidate fails when a checker that was unknown is unknown again")
	var co runs.ClientOpts
	fs.StringVar(&co.Dir, "client-dir", "", "a client program's run: its directory, given again (test.json's is never used)")
	var given spec.Spec
	given.Flags(fs, func(k spec.Knob) bool { return k.Attach }, nil)
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() != 1 {
		return 0, fmt.Errorf("%w: shrink takes one RUN_DIR", errUsage)
	}
	rule, err := shrink.ParseConfirm(*confirm)
	if err != nil {
		return 0, fmt.Errorf("%w: --confirm %w", errUsage, err)
	}
	b, err := shrink.ParseBudget(*budget)
	if err != nil {
		return 0, fmt.Errorf("%w: --budget %w", errUsage, err)
	}
	dir := fs.Arg(0)
	var eng runs.Engine
	defer eng.Close()
	return shrink.Run(ctx, shrink.RunOptions{
		Dir: dir, Unknown: *unknown, Confirm: rule, Budget: b, Results: *results, Out: *out,
		Rerun: func(ctx context.Context) (harness.Config, error) {
			return parts.RerunConfig(ctx, dir, *results, given, co, stderr)
		},
		Engine: eng.Get,
	}, stdout, stderr)
}
