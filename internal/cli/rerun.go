package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
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
	nruns := fs.Int("runs", runs.DefaultReruns, "how many times to repeat the run")
	results := fs.String("results", "./results", "results directory of the re-runs")
	quiet := fs.Bool("quiet", false, "no progress line")
	var co runs.ClientOpts
	fs.StringVar(&co.Dir, "client-dir", "", "a client program's run: its directory, given again (required; test.json's is never used), whose files must be those the run used")
	fs.BoolVar(&co.ChangedOK, "client-changed-ok", false, "rerun a client program's run although its directory's files changed since the run")
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
	if *nruns < 1 {
		return 0, fmt.Errorf("%w: --runs must be at least 1, not %d", errUsage, *nruns)
	}
	return parts.Rerun(ctx, runs.RerunOptions{Dir: dir, Runs: *nruns, Results: *results, Given: given, Client: co}, runs.NewProgress(stderr, *quiet), stdout, stderr)
}
