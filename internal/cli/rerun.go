package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/clientproto"
	"github.com/fencecheck/fencecheck/internal/experiment"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/rerun"
	"github.com/fencecheck/fencecheck/internal/safetext"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/targets"
)

// cmdRerun repeats a stored run N times with its configuration, its seed and
// its recorded fault schedule, and prints how often it came out invalid.
func cmdRerun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("rerun", stderr, "Repeats a stored run with its configuration (test.json), its seed and its recorded fault\n"+
		"schedule (history.jsonl's nemesis events: the same faults, in order, after the same quiet times,\n"+
		"held as long; a holder fault on the next lock holder, a :leader fault on the leader of the moment),\n"+
		"and prints each re-run's verdict and directory, then how many were invalid.\n"+
		"Exit 1 if a re-run is invalid (it reproduced), else 255 if the harness failed on one, else 2 if\n"+
		"one is unknown or Ctrl-C cut the series short, else 0; 254 for a directory that is not a run\n"+
		"this binary can repeat.\n\n"+
		"A run on existing servers (run --endpoints) is repeated only with their endpoints and the\n"+
		"credentials given again here (--endpoints, --auth-file or --auth, --tls-*): test.json's are\n"+
		"never used, as a results directory may come from someone else.\n\n"+
		"A run of a client program is repeated only with its directory given again (--client-dir DIR;\n"+
		"test.json records the one the run used, and what its files were, but a rerun never runs a\n"+
		"program, or its build step, from a directory a stored test.json names): exit 254 if DIR's files\n"+
		"differ from the run's (after the build step), naming the first that changed, unless\n"+
		"--client-changed-ok. The program's --client-cmd and --client-image are the run's (test.json's\n"+
		"client_cmd, client_image: they run in the run's containers only).\n\n")
	runs := fs.Int("runs", rerun.Runs, "how many times to repeat the run")
	results := fs.String("results", "./results", "results directory of the re-runs")
	quiet := fs.Bool("quiet", false, "no progress line")
	var co clientOpts
	fs.StringVar(&co.dir, "client-dir", "", "a client program's run: its directory, given again (required; test.json's is never used), whose files must be those the run used")
	fs.BoolVar(&co.changedOK, "client-changed-ok", false, "rerun a client program's run although its directory's files changed since the run")
	// An attached run's servers and credentials: from here, never from
	// test.json (rerun.Attach).
	var given spec.Spec
	given.Flags(fs, func(k spec.Knob) bool { return k.Attach }, nil)
	// RUN_DIR may come before the flags, as the printed command has it.
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() != 1 {
		return 0, fmt.Errorf("%w: rerun takes one RUN_DIR", errUsage)
	}
	dir := fs.Arg(0)
	if *runs < 1 {
		return 0, fmt.Errorf("%w: --runs must be at least 1, not %d", errUsage, *runs)
	}
	cfg, err := rerunConfig(ctx, dir, *results, given, co, stderr)
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
	var eng engineConn
	defer eng.close()
	for i := 0; i < *runs && ctx.Err() == nil; i++ {
		ui.stage("[%d/%d] %s %s, %s, nemesis %s (replayed), seed %d", i+1, *runs, cfg.Target.Name(), cfg.Workload.Name(), how(cfg), cfg.Nemesis, cfg.Seed)
		out, err := eng.run(ctx, cfg)
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
// repeated), with the servers and credentials of given, the rerun's own
// flags, in place of the stored ones (rerun.Attach), built as run builds
// its flags', stored under results as NAME-rerun, with its recorded
// schedule to replay. A dir that is not a run, or names a target,
// resource, workload or fault this binary lacks, or an attached run
// without its servers and credentials given again, is bad input (exit
// 254).
func rerunConfig(ctx context.Context, dir, results string, given spec.Spec, co clientOpts, stderr io.Writer) (harness.Config, error) {
	run, err := store.Open(dir)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	if real, err := filepath.EvalSymlinks(run.Dir); err == nil {
		run.Dir = real // results/latest: the run it points at now
	}
	// test.json read as run -f reads it (experiment.File.Spec: rerun.Spec
	// and rerun.Attach), the rerun's flags for the command line's.
	f, err := experiment.Read(run.Path(store.TestFile), experiment.Stored)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	test := f.Test
	sp, err := f.Spec(given, func(string) bool { return false })
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	events, err := history.ReadFileContext(ctx, run.Path(store.HistoryFile))
	if err != nil {
		_, err = readFailed(ctx, run.Path(store.HistoryFile), err)
		return harness.Config{}, err
	}
	steps, err := nemesis.Recorded(events)
	if err != nil {
		return harness.Config{}, inputError{Err: fmt.Errorf("%s: %w", run.Path(store.HistoryFile), err)}
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
	switch {
	case test.ClientPath != "" && co.dir == "":
		return harness.Config{}, fmt.Errorf("%w: %s ran the client program in %s: give its directory again (--client-dir DIR): a rerun never runs a program, or its build step, from a directory test.json names", errUsage, run.Dir, test.ClientPath)
	case test.ClientPath == "" && co.dir != "":
		return harness.Config{}, fmt.Errorf("%w: --client-dir: %s ran no client program", errUsage, run.Dir)
	}
	sp.ClientDir = co.dir
	if sp.ClientCmd != "" || sp.ClientImage != "" {
		// Recorded with the run: they run only inside its containers,
		// and go with the directory given again.
		fmt.Fprintf(stderr, "fencecheck: the client program starts as the run's did:%s\n", clientRecorded(sp))
	}
	cfg, err := configOf(sp, stderr)
	if err != nil {
		from := "test.json"
		if len(given.AttachFlags()) > 0 {
			from = "test.json with " + strings.Join(given.AttachFlags(), ", ")
		}
		return harness.Config{}, fmt.Errorf("%s: %s: %w", run.Dir, from, err)
	}
	if err := checkClientFiles(&cfg, test.ClientFiles, co); err != nil {
		return harness.Config{}, err
	}
	cfg.Replay = &harness.Replay{Of: run.Dir, RunID: test.RunID, Steps: steps}
	return cfg, nil
}

// clientRecorded is the client program's command and image test.json
// recorded (--client-cmd, --client-image), as flags quoted for a shell,
// filtered for the terminal (test.json is anybody's file).
func clientRecorded(sp spec.Spec) string {
	var s string
	if sp.ClientCmd != "" {
		s += " --client-cmd " + rerun.Quote(sp.ClientCmd)
	}
	if sp.ClientImage != "" {
		s += " --client-image " + rerun.Quote(sp.ClientImage)
	}
	return safetext.Message(s)
}

// clientOpts are rerun's client program flags: the directory given again,
// and whether files changed since the run may run.
type clientOpts struct {
	dir       string
	changedOK bool
}

// checkClientFiles compares the client directory's files (after its
// build step) with those the run recorded: a change is refused (exit
// 254, naming the first changed file) unless co.changedOK, which says so
// on stderr. The digest is kept for the rerun's test.json.
func checkClientFiles(cfg *harness.Config, was *store.ClientDigest, co clientOpts) error {
	if cfg.ClientProgram == nil {
		return nil
	}
	now, err := cfg.ClientProgram.Digest()
	if err != nil {
		return err
	}
	cfg.ClientDigest = &now
	if was == nil || was.Hash == now.Hash {
		return nil
	}
	changed := clientproto.FirstChange(*was, now)
	if co.changedOK {
		cfg.Log.Warn("the client directory's files changed since the run (--client-changed-ok)", "dir", co.dir, "first", changed)
		return nil
	}
	return fmt.Errorf("%w: --client-dir %s: its files changed since the run (first: %s); give --client-changed-ok to rerun it as it is now", errUsage, co.dir, changed)
}
