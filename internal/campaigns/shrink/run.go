package shrink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// errUsage marks bad arguments and bad input (exit 254): the worker's, as
// the CLI's is.
var errUsage = cmdline.ErrUsage

// RunOptions are a shrink of a stored run (Run): what fencecheck shrink's
// flags say.
type RunOptions struct {
	// Dir is the stored run to shrink (RUN_DIR).
	Dir string
	// Unknown shrinks an unknown run: a candidate fails when a checker
	// that was unknown is unknown again (--unknown). Without it an
	// unknown run is refused.
	Unknown bool
	// Confirm is the acceptance rule (--confirm), Budget the bound of the
	// search (--budget).
	Confirm Confirm
	Budget  Budget
	// Results is the results directory the candidates' runs go to
	// (--results): Out's default is under it.
	Results string
	// Out is the output directory, new or empty (--out; "": RESULTS/NAME-
	// shrunk/TIME, NAME the stored run's).
	Out string
	// Rerun is the configuration of a rerun of Dir (the CLI's, as
	// fencecheck rerun builds it): the stored run's, with the servers and
	// credentials given again, named NAME-rerun, stored under Results,
	// with Replay holding the stored run's directory, run ID and
	// recorded schedule. Run returns its error as it is. Required.
	Rerun func(ctx context.Context) (harness.Config, error)
	// Markdown is a value read from the stored run (already filtered by
	// safetext) as Markdown text that renders as it, on one line, with
	// no markup: what repro.md writes every such value through. Nil is
	// safetext.Markdown.
	Markdown func(string) string
	// Engine returns the engine a candidate runs on (harness.RunOn),
	// called before each candidate's run, so a search that runs none
	// asks for none; its error is that run's harness failure. The
	// engines are the caller's, which it closes after Run. Required.
	Engine func(context.Context) (runtime.Engine, error)
}

// Budget bounds a search (--budget): at most Runs runs, or a search of
// at most For (its deadline counted from Run's start).
type Budget struct {
	Runs int
	For  time.Duration
	// given is the budget as written, for the progress line.
	given string
}

// ParseBudget reads a budget: a number of runs (at least 1), or a
// duration (more than 0), as 40 or 30m.
func ParseBudget(s string) (Budget, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 {
		return Budget{Runs: n, given: s}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return Budget{For: d, given: s}, nil
	}
	return Budget{}, fmt.Errorf("%q: want a number of runs (at least 1) or a duration", s)
}

// String is the budget as ParseBudget read it.
func (b Budget) String() string {
	switch {
	case b.given != "":
		return b.given
	case b.Runs > 0:
		return strconv.Itoa(b.Runs)
	}
	return b.For.String()
}

// Run searches for the smallest run that fails as the stored run in
// o.Dir did (Search), each candidate a rerun of it (o.Rerun) with fewer
// faults of its recorded schedule, fewer clients, a shorter time limit,
// fewer nodes or shorter holds, run with harness.Run; it writes the
// smallest it confirmed into the output directory (run/, experiment.json,
// repro.md, shrink.json), says so on stdout and its progress on stderr.
//
// The exit code is 1 (matrix.ExitInvalid) when a smaller failing run was
// confirmed, 2 when none was (the output then holds the stored run), 255
// when the harness failed on every run. A stored run that did not fail so
// (nothing to shrink), one that cannot be read, and an output directory
// that holds files are errors wrapping cmdline.ErrUsage (exit 254), and so
// is o.Rerun's for bad input; a history whose reading ctx cut short is
// exit 2 with an error wrapping harness.ErrInterrupted. Nothing is
// written before the stored run, its rerun configuration and the output
// directory are checked.
func Run(ctx context.Context, o RunOptions, stdout, stderr io.Writer) (int, error) {
	opts := Options{Confirm: o.Confirm, Budget: o.Budget.Runs}
	if o.Budget.For > 0 {
		opts.Deadline = time.Now().Add(o.Budget.For)
	}
	stored, err := shrinkable(o.Dir, o.Unknown)
	if err != nil {
		return 0, err
	}
	cfg, err := o.Rerun(ctx)
	if err != nil {
		return 0, err
	}
	cfg.Name = strings.TrimSuffix(cfg.Name, "-rerun") + "-shrink"
	out := o.Out
	if out == "" {
		out = filepath.Join(o.Results, strings.TrimSuffix(cfg.Name, "-shrink")+"-shrunk", time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := emptyDir(out); err != nil {
		return 0, err
	}
	events, err := history.ReadFileContext(ctx, filepath.Join(cfg.Replay.Of, store.HistoryFile))
	if err != nil {
		return cmdline.ReadFailed(ctx, filepath.Join(cfg.Replay.Of, store.HistoryFile), err)
	}
	faults, _ := history.Faults(events) // o.Rerun read the schedule from them
	sum := stored.res.Result.Summary()
	opts.Blamed = Blamed(faults, sum.Losses)
	if sum.FirstLostNS != nil {
		opts.FirstLoss = time.Duration(*sum.FirstLostNS)
	}
	if !cfg.Attached() {
		for n := 1; n < cfg.Nodes; n++ {
			if _, err := cfg.Target.Nodes(n); err == nil {
				opts.MinNodes = n
				break
			}
		}
	}
	opts.Progress = func(format string, args ...any) { fmt.Fprintf(stderr, "fencecheck: "+format+"\n", args...) }
	start := Candidate{Steps: cfg.Replay.Steps, Clients: cfg.Concurrency, Nodes: cfg.Nodes, TimeLimit: cfg.TimeLimit}
	fmt.Fprintf(stderr, "fencecheck: shrink of %s (%s: %s), confirm %s, budget %s; from %s; blamed faults %v\n",
		cfg.Replay.Of, stored.verdict, strings.Join(stored.checkers, ", "), o.Confirm, o.Budget, start, opts.Blamed)

	r := &harnessRunner{cfg: cfg, engine: o.Engine, verdict: stored.verdict, checkers: stored.checkers, summaries: map[string]string{}}
	found := Search(ctx, r, start, opts)
	if found.Stopped == "interrupted" {
		fmt.Fprintln(stderr, "fencecheck: interrupted: keeping the best found so far")
	}
	md := o.Markdown
	if md == nil {
		md = safetext.Markdown
	}
	if err := writeShrunk(out, o.Confirm, stored, start, found, r, md); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "shrunk   %s\n  from     %s\n  to       %s\n", cfg.Replay.Of, start, found.Best)
	if found.BestRuns == nil {
		fmt.Fprintf(stdout, "  found    no smaller run that fails %s of its runs (%d runs, %s)\n", o.Confirm, found.Runs, found.Stopped)
	} else {
		fmt.Fprintf(stdout, "  confirms %d of %d runs failed (need %s); %d runs in all, %s\n", failures(found.BestRuns), len(found.BestRuns), o.Confirm, found.Runs, found.Stopped)
	}
	fmt.Fprintf(stdout, "  output   %s\n  repro    %s\n", out, filepath.Join(out, shrunkRepro))
	if found.BestRuns == nil {
		if r.errors == found.Runs && found.Runs > 0 {
			return matrix.ExitHarness, nil
		}
		return matrix.ExitUnknown, nil
	}
	return matrix.ExitInvalid, nil
}

// storedRun is the stored run shrink starts from: its results, the
// verdict it is shrunk for, and the checkers that gave it.
type storedRun struct {
	dir      string
	res      store.Results
	verdict  checkers.Validity
	checkers []string
}

// shrinkable reads the stored run in dir and says what it failed: an
// invalid run's invalid checkers, or with unknown its unknown ones. A
// valid run (a fenced one that held), an unknown one without unknown, and
// a run no checker of which failed so, are bad input (exit 254): nothing
// to shrink.
func shrinkable(dir string, unknown bool) (storedRun, error) {
	run, err := store.Open(dir)
	if err != nil {
		return storedRun{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	s := storedRun{dir: run.Dir}
	if err := run.ReadJSON(store.ResultsFile, &s.res); err != nil {
		return storedRun{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	var test store.TestInfo
	if err := run.ReadJSON(store.TestFile, &test); err != nil {
		return storedRun{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	v := s.res.Valid()
	switch {
	case v == checkers.Valid:
		return storedRun{}, fmt.Errorf("%w: %s is valid (fencing %s, nemesis %s): nothing to shrink: shrink looks for the smallest run that still fails", errUsage, dir, test.Fencing, test.Nemesis)
	case v == checkers.Unknown && !unknown:
		return storedRun{}, fmt.Errorf("%w: %s is unknown, not invalid: give --unknown to shrink it as unknown", errUsage, dir)
	}
	s.verdict = v
	s.checkers = checkersWith(s.res.Result, v)
	if len(s.checkers) == 0 {
		return storedRun{}, fmt.Errorf("%w: %s is %s, but no checker of its results.json is: nothing to shrink", errUsage, dir, v)
	}
	return s, nil
}

// checkersWith are the names of r's checkers whose verdict is v, sorted:
// results.json's "checkers" object, each with its "valid".
func checkersWith(r store.WorkloadResult, v checkers.Validity) []string {
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	var res struct {
		Checkers map[string]json.RawMessage `json:"checkers"`
	}
	if json.Unmarshal(b, &res) != nil {
		return nil
	}
	var names []string
	for name, raw := range res.Checkers {
		var c struct {
			Valid *checkers.Validity `json:"valid"`
		}
		if json.Unmarshal(raw, &c) == nil && c.Valid != nil && *c.Valid == v {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// emptyDir makes dir, or checks that it is an empty directory: shrink
// never writes over a directory's files.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: --out %s is not empty", errUsage, dir)
	}
	return nil
}

// harnessRunner runs a candidate as a rerun of the stored run with the
// candidate's knobs and schedule; a run fails when one of checkers has
// the stored run's verdict in it.
type harnessRunner struct {
	cfg      harness.Config
	engine   func(context.Context) (runtime.Engine, error)
	verdict  checkers.Validity
	checkers []string
	// summaries are each run's end-of-run text, by its directory.
	summaries map[string]string
	errors    int
}

func (h *harnessRunner) Run(ctx context.Context, c Candidate) (Outcome, error) {
	cfg := h.cfg
	cfg.Concurrency, cfg.Nodes, cfg.TimeLimit = c.Clients, c.Nodes, c.TimeLimit
	cfg.Replay = &harness.Replay{Of: h.cfg.Replay.Of, RunID: h.cfg.Replay.RunID, Steps: c.Steps}
	out, err := harness.RunOn(ctx, h.engine, cfg)
	if err != nil {
		h.errors++
		return Outcome{}, err
	}
	r := out.Results
	o := Outcome{Dir: out.Run.Dir, Verdict: r.Valid().String()}
	if out.Interrupted {
		return o, context.Canceled
	}
	if got := checkersWith(r.Result, h.verdict); r.Valid() == h.verdict {
		for _, name := range got {
			if slices.Contains(h.checkers, name) {
				o.Failed = true
			}
		}
		o.Verdict += " (" + strings.Join(got, ", ") + ")"
	}
	if r.Result != nil {
		if f := r.Result.Summary().FirstLostNS; f != nil {
			o.FirstLoss = time.Duration(*f)
		}
	}
	h.summaries[out.Run.Dir] = harness.Summary(cfg.Workload, r, cfg.Concurrency)
	return o, nil
}

// failures counts the failed runs.
func failures(runs []Outcome) int {
	n := 0
	for _, o := range runs {
		if o.Failed {
			n++
		}
	}
	return n
}
