package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/rerun"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/targets"
)

// cmdRerun repeats a stored run N times with its configuration, its seed and
// its recorded fault schedule, and prints how often it came out invalid.
func cmdRerun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("rerun", stderr)
	runs := fs.Int("runs", rerun.Runs, "how many times to repeat the run")
	results := fs.String("results", "./results", "results directory of the re-runs")
	quiet := fs.Bool("quiet", false, "no progress line")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fencecheck rerun RUN_DIR [--runs N] [--results DIR]\n\n"+
			"Repeats a stored run with its configuration (test.json), its seed and its recorded fault\n"+
			"schedule (history.jsonl's nemesis events: the same faults, in order, after the same quiet times,\n"+
			"held as long; a holder fault on the next lock holder, a :leader fault on the leader of the moment),\n"+
			"and prints each re-run's verdict and directory, then how many were invalid.\n"+
			"Exit 1 if a re-run is invalid (it reproduced), else 255 if the harness failed on one, else 2 if\n"+
			"one is unknown or Ctrl-C cut the series short, else 0; 254 for a directory that is not a run\n"+
			"this binary can repeat.\n\n")
		fs.PrintDefaults()
	}
	// RUN_DIR may come before the flags, as the printed command has it.
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	switch {
	case dir == "" && fs.NArg() == 1:
		dir = fs.Arg(0)
	case dir == "" || fs.NArg() > 0:
		return 0, fmt.Errorf("%w: rerun takes one RUN_DIR", errUsage)
	}
	if *runs < 1 {
		return 0, fmt.Errorf("%w: --runs must be at least 1, not %d", errUsage, *runs)
	}
	cfg, err := rerunConfig(ctx, dir, *results, stderr)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stderr, "fencecheck: rerun of %s: %d runs, seed %d, %d recorded faults replayed\n", cfg.Replay.Of, *runs, cfg.Seed, len(cfg.Replay.Steps))
	for i, s := range cfg.Replay.Steps {
		fmt.Fprintf(stderr, "fencecheck:   %d. %s\n", i+1, s)
	}

	ui := newProgress(stderr, *quiet)
	cfg.Stage, cfg.Progress = ui.stage, ui.update
	var invalid, unknown, failed, done int
	for i := 0; i < *runs && ctx.Err() == nil; i++ {
		ui.stage("[%d/%d] %s %s, %s, nemesis %s (replayed), seed %d", i+1, *runs, cfg.Target.Name(), cfg.Workload.Name(), how(cfg), cfg.Nemesis, cfg.Seed)
		out, err := harness.Run(ctx, cfg)
		ui.done()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, targets.ErrBadConfig) {
				return 0, err
			}
			failed++
			fmt.Fprintf(stdout, "run %d  error    harness failed: %v\n", i+1, err)
			continue
		}
		done++
		r := out.Results
		switch r.Valid() {
		case checkers.Invalid:
			invalid++
		case checkers.Unknown:
			unknown++
		}
		lost := "-"
		if r.Result != nil {
			if sum := r.Result.Summary(); sum.Updates {
				lost = fmt.Sprintf("%d of %d", sum.Lost, sum.Acknowledged)
			}
		}
		fmt.Fprintf(stdout, "run %d  %-7s  lost %-9s  %s\n", i+1, r.Valid(), lost, out.Run.Dir)
	}
	fmt.Fprintf(stdout, "reproduced %d of %d (invalid)", invalid, *runs)
	if n := *runs - done - failed; n > 0 {
		fmt.Fprintf(stdout, "; %d not run (interrupted)", n)
	}
	fmt.Fprintln(stdout)
	return rerunExit(invalid, unknown, failed, ctx.Err() != nil), nil
}

// rerunExit is rerun's exit code: 1 if a re-run was invalid (it
// reproduced: what it found stands, whatever else happened), else 255 if
// the harness failed on one, else 2 if one was unknown or the series was
// interrupted, else 0 (every re-run valid).
func rerunExit(invalid, unknown, failed int, interrupted bool) int {
	switch {
	case invalid > 0:
		return exitInvalid
	case failed > 0:
		return exitHarness
	case unknown > 0 || interrupted:
		return exitUnknown
	}
	return exitValid
}

// rerunConfig is the configuration of a rerun of the run in dir: the Spec
// its test.json records (checked by rerun.RunArgs: a run that can be
// repeated), built as run builds its flags', stored under results as
// NAME-rerun, with its recorded schedule to replay. A dir that is not a run, or names a target, resource, workload or
// fault this binary lacks, is bad input (exit 254).
func rerunConfig(ctx context.Context, dir, results string, stderr io.Writer) (harness.Config, error) {
	run, err := store.Open(dir)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	if real, err := filepath.EvalSymlinks(run.Dir); err == nil {
		run.Dir = real // results/latest: the run it points at now
	}
	var test store.TestInfo
	if err := run.ReadJSON(store.TestFile, &test); err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	sp, err := rerun.Spec(test)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %s: %w", errUsage, run.Dir, err)
	}
	events, err := history.ReadFileContext(ctx, run.Path(store.HistoryFile))
	if err != nil {
		_, err = readFailed(ctx, run.Path(store.HistoryFile), err)
		return harness.Config{}, err
	}
	steps, err := nemesis.Recorded(events)
	if err != nil {
		return harness.Config{}, inputError{fmt.Errorf("%s: %w", run.Path(store.HistoryFile), err)}
	}
	for _, s := range steps {
		if _, err := nemesis.Parse(s.Fault); err != nil {
			return harness.Config{}, fmt.Errorf("%w: %s: the recorded fault %q: %w", errUsage, run.Path(store.HistoryFile), s.Fault, err)
		}
	}
	name := test.Name
	if !strings.HasSuffix(name, "-rerun") {
		name += "-rerun"
	}
	sp.Results, sp.Name = results, name
	cfg, err := configOf(sp, stderr)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%s: test.json: %w", run.Dir, err)
	}
	cfg.Replay = &harness.Replay{Of: run.Dir, RunID: test.RunID, Steps: steps}
	return cfg, nil
}
