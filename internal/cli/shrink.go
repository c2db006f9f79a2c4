package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/experiment"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/images"
	"github.com/fencecheck/fencecheck/internal/matrix"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/rerun"
	"github.com/fencecheck/fencecheck/internal/safetext"
	"github.com/fencecheck/fencecheck/internal/shrink"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
)

// Files of shrink's output directory, beside the smallest run's copy.
const (
	shrunkRun        = "run"
	shrunkExperiment = "experiment.json"
	shrunkRepro      = "repro.md"
	shrunkLog        = "shrink.json"
)

// cmdShrink searches for the smallest run that fails as a stored run did
// (package shrink), each candidate a rerun of the stored run with fewer
// faults of its recorded schedule, fewer clients, a shorter time limit,
// fewer nodes or shorter holds, and writes the smallest it confirmed.
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
	var co clientOpts
	fs.StringVar(&co.dir, "client-dir", "", "a client program's run: its directory, given again (test.json's is never used)")
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
	opts := shrink.Options{Confirm: rule}
	if n, err := strconv.Atoi(*budget); err == nil && n >= 1 {
		opts.Budget = n
	} else if d, err := time.ParseDuration(*budget); err == nil && d > 0 {
		opts.Deadline = time.Now().Add(d)
	} else {
		return 0, fmt.Errorf("%w: --budget %q: want a number of runs (at least 1) or a duration", errUsage, *budget)
	}
	dir := fs.Arg(0)
	stored, err := shrinkable(dir, *unknown)
	if err != nil {
		return 0, err
	}
	cfg, err := rerunConfig(ctx, dir, *results, given, co, stderr)
	if err != nil {
		return 0, err
	}
	cfg.Name = strings.TrimSuffix(cfg.Name, "-rerun") + "-shrink"
	if *out == "" {
		*out = filepath.Join(*results, strings.TrimSuffix(cfg.Name, "-shrink")+"-shrunk", time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := emptyDir(*out); err != nil {
		return 0, err
	}
	events, err := history.ReadFileContext(ctx, filepath.Join(cfg.Replay.Of, store.HistoryFile))
	if err != nil {
		return readFailed(ctx, filepath.Join(cfg.Replay.Of, store.HistoryFile), err)
	}
	faults, _ := history.Faults(events) // rerunConfig read the schedule from them
	sum := stored.res.Result.Summary()
	opts.Blamed = shrink.Blamed(faults, sum.Losses)
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
	start := shrink.Candidate{Steps: cfg.Replay.Steps, Clients: cfg.Concurrency, Nodes: cfg.Nodes, TimeLimit: cfg.TimeLimit}
	fmt.Fprintf(stderr, "fencecheck: shrink of %s (%s: %s), confirm %s, budget %s; from %s; blamed faults %v\n",
		cfg.Replay.Of, stored.verdict, strings.Join(stored.checkers, ", "), rule, *budget, start, opts.Blamed)

	var eng engineConn
	defer eng.close()
	if cfg.Engine, err = eng.get(ctx); err != nil {
		return 0, err
	}
	r := &harnessRunner{cfg: cfg, verdict: stored.verdict, checkers: stored.checkers, summaries: map[string]string{}}
	found := shrink.Search(ctx, r, start, opts)
	if found.Stopped == "interrupted" {
		fmt.Fprintln(stderr, "fencecheck: interrupted: keeping the best found so far")
	}
	if err := writeShrunk(*out, rule, stored, start, found, r); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "shrunk   %s\n  from     %s\n  to       %s\n", cfg.Replay.Of, start, found.Best)
	if found.BestRuns == nil {
		fmt.Fprintf(stdout, "  found    no smaller run that fails %s of its runs (%d runs, %s)\n", rule, found.Runs, found.Stopped)
	} else {
		fmt.Fprintf(stdout, "  confirms %d of %d runs failed (need %s); %d runs in all, %s\n", failures(found.BestRuns), len(found.BestRuns), rule, found.Runs, found.Stopped)
	}
	fmt.Fprintf(stdout, "  output   %s\n  repro    %s\n", *out, filepath.Join(*out, shrunkRepro))
	if found.BestRuns == nil {
		if r.errors == found.Runs && found.Runs > 0 {
			return exitHarness, nil
		}
		return exitUnknown, nil
	}
	return exitInvalid, nil
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
	verdict  checkers.Validity
	checkers []string
	// summaries are each run's end-of-run text, by its directory.
	summaries map[string]string
	errors    int
}

func (h *harnessRunner) Run(ctx context.Context, c shrink.Candidate) (shrink.Outcome, error) {
	cfg := h.cfg
	cfg.Concurrency, cfg.Nodes, cfg.TimeLimit = c.Clients, c.Nodes, c.TimeLimit
	cfg.Replay = &harness.Replay{Of: h.cfg.Replay.Of, RunID: h.cfg.Replay.RunID, Steps: c.Steps}
	out, err := harness.Run(ctx, cfg)
	if err != nil {
		h.errors++
		return shrink.Outcome{}, err
	}
	r := out.Results
	o := shrink.Outcome{Dir: out.Run.Dir, Verdict: r.Valid().String()}
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
func failures(runs []shrink.Outcome) int {
	n := 0
	for _, o := range runs {
		if o.Failed {
			n++
		}
	}
	return n
}

// writeShrunk writes shrink's output into out: a copy of the smallest
// failing run (the stored run when no candidate was kept), its
// configuration as an experiment file, repro.md and shrink.json.
func writeShrunk(out string, rule shrink.Confirm, stored storedRun, start shrink.Candidate, found shrink.Result, r *harnessRunner) error {
	src := stored.dir
	for _, o := range found.BestRuns {
		if o.Failed {
			src = o.Dir
			break
		}
	}
	dst := filepath.Join(out, shrunkRun)
	// The stored run is anybody's directory: its links are not copied
	// (a link to / would be one in shrink's output), holes stay holes.
	var refused []string
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	err := matrix.CopyRun(src, dst, func(p string, m fs.FileMode) {
		refused = append(refused, p+" ("+images.FileKind(m)+")")
	})
	if err != nil {
		return fmt.Errorf("shrink: copying %s: %w", src, err)
	}
	f, err := experiment.Read(filepath.Join(dst, store.TestFile), experiment.Stored)
	if err != nil {
		return fmt.Errorf("shrink: %w", err)
	}
	test := f.Test
	exp := test.Spec
	exp.Results = ""
	exp.TakeAttach(spec.Spec{}) // never a file's: the command line's
	b, err := withSchedule(exp, found.Best.Steps)
	if err != nil {
		return err
	}
	if _, err := experiment.Parse(b, shrunkExperiment, experiment.Run); err != nil {
		return fmt.Errorf("shrink: the experiment file does not read back: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, shrunkExperiment), b, 0o644); err != nil {
		return err
	}
	log := struct {
		Of       string         `json:"of"`
		Verdict  string         `json:"verdict"`
		Checkers []string       `json:"checkers"`
		From     string         `json:"from"`
		To       string         `json:"to"`
		Run      string         `json:"run"`
		Runs     int            `json:"runs"`
		Stopped  string         `json:"stopped"`
		Trials   []shrink.Trial `json:"trials"`
		Refused  []string       `json:"refused,omitempty"`
	}{stored.dir, stored.verdict.String(), stored.checkers, start.String(), found.Best.String(), src, found.Runs, found.Stopped, found.Trials, refused}
	if b, err = json.MarshalIndent(log, "", "  "); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, shrunkLog), append(b, '\n'), 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		abs = dst
	}
	md := repro(abs, out, test, rule, stored, start, found, r.summaries[src], refused)
	return os.WriteFile(filepath.Join(out, shrunkRepro), []byte(md), 0o644)
}

// repro is repro.md: a bug report draft of the smallest failing run in
// dir, with the versions, the one command, what happened, expected
// against actual, and the fencing that prevents it.
func repro(dir, out string, test store.TestInfo, rule shrink.Confirm, stored storedRun, start shrink.Candidate, found shrink.Result, summary string, refused []string) string {
	var b strings.Builder
	// test.json and results.json are anybody's files: every value of
	// theirs is filtered (safetext) and Markdown-escaped, a command is
	// one line of an indented code block, and the summary each line of
	// one, so that no value makes a section, a tag or an escape sequence.
	md := func(s string) string { return mdText(safetext.Name(s)) }
	version := md(test.TargetVersion)
	if test.TargetVersion == "" {
		version = "(version not recorded)"
	}
	fmt.Fprintf(&b, "# %s %s: %s under %s (fencing %s)\n\n", md(test.Target), version, stored.verdict, md(test.Nemesis), md(test.Fencing))
	if found.BestRuns == nil {
		fmt.Fprintf(&b, "No smaller run failed %s of its runs (%d runs, %s): this is the stored run.\n\n", rule, found.Runs, found.Stopped)
	} else {
		fmt.Fprintf(&b, "The smallest of %d runs that `fencecheck shrink` tried (stopped: %s): it failed %d of %d confirming runs (rule %s).\n\n",
			found.Runs, found.Stopped, failures(found.BestRuns), len(found.BestRuns), rule)
	}
	b.WriteString("## Versions\n\n")
	fmt.Fprintf(&b, "- %s %s\n", md(test.Target), version)
	fmt.Fprintf(&b, "- fencecheck %s (revision %s)\n", md(test.Fencecheck), md(test.FencecheckRevision))
	for i, k := range slices.Sorted(maps.Keys(test.Images)) {
		if i == report.MaxItems {
			fmt.Fprintf(&b, "- and %d more images\n", len(test.Images)-i)
			break
		}
		fmt.Fprintf(&b, "- image %s: %s\n", md(k), md(test.Images[k]))
	}
	b.WriteString("\n## Reproduce\n\n")
	fmt.Fprintf(&b, "    %s\n\n", safetext.Text(rerun.Command(dir, test), 8<<10))
	b.WriteString("replays this run's configuration, seed and fault schedule:\n\n")
	for i, s := range found.Best.Steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, md(s.String()))
	}
	fmt.Fprintf(&b, "\nThe same as an experiment file, its configuration with this schedule (`schedule`), to keep or share without the run: `fencecheck run -f %s`.\n\n",
		rerun.Quote(filepath.Join(out, shrunkExperiment)))
	fmt.Fprintf(&b, "Shrunk from %s (%s) to %s.\n\n", md(stored.dir), md(start.String()), md(found.Best.String()))
	if len(refused) > 0 {
		names := make([]string, 0, min(len(refused), report.MaxItems))
		for _, r := range refused[:min(len(refused), report.MaxItems)] {
			names = append(names, md(r))
		}
		fmt.Fprintf(&b, "Refused, not copied (only directories and regular files are): %s", strings.Join(names, ", "))
		if len(refused) > len(names) {
			fmt.Fprintf(&b, " and %d more", len(refused)-len(names))
		}
		b.WriteString(".\n\n")
	}
	b.WriteString("## What happened\n\n")
	fmt.Fprintf(&b, "%s, %d lock clients, %d server nodes, for %s; the report tells the story of each lost update: %s\n\n",
		md(test.Workload), test.Concurrency, test.Nodes, md(test.TimeLimit.String()), md(filepath.Join(dir, store.ReportFile)))
	if summary != "" {
		for _, l := range strings.Split(strings.TrimSuffix(summary, "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", safetext.Message(l))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Expected\n\nEvery update the resource acknowledged is in the final read: a client writes only while it holds the lock, so no holder's write erases another's.\n\n")
	b.WriteString("## Actual\n\n")
	fmt.Fprintf(&b, "The run is %s: %s (the stored run's failing checkers: %s).\n\n", stored.verdict, md(strings.Join(checkersWith(readResultOf(dir), stored.verdict), ", ")), md(strings.Join(stored.checkers, ", ")))
	b.WriteString("## The fencing that prevents it\n\n")
	b.WriteString("A lock is a lease: a paused or cut-off holder can go on writing after its lease passed to another client. ")
	b.WriteString("A fencing token (a number that grows with every grant, sent with every write; the resource keeps the highest it accepted and refuses lower ones) stops the stale write at the resource. ")
	fmt.Fprintf(&b, "The same run with `--fencing token` (`fencecheck run -f %s --fencing token`) should be valid, with the stale writes counted as fence rejections.\n",
		rerun.Quote(filepath.Join(out, shrunkExperiment)))
	return b.String()
}

// withSchedule is the experiment file of the run exp with its schedule
// steps: the Spec's fields, then "schedule" (experiment.ScheduleKey), so
// that run -f replays the steps as rerun does. Indented, newline-ended.
func withSchedule(exp spec.Spec, steps []nemesis.Step) ([]byte, error) {
	b, err := json.Marshal(exp)
	if err != nil {
		return nil, err
	}
	if steps == nil {
		steps = []nemesis.Step{} // no fault left: replay none, not draw
	}
	sb, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}"))
	if len(bytes.TrimSpace(b)) > 1 {
		b = append(b, ',')
	}
	b = append(append(append(b, `"`+experiment.ScheduleKey+`":`...), sb...), '}')
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// readResultOf is the workload result of the run in dir (nil when it
// cannot be read).
func readResultOf(dir string) store.WorkloadResult {
	var res store.Results
	if b, err := store.ReadRegular(filepath.Join(dir, store.ResultsFile), store.MaxJSONSize); err != nil || json.Unmarshal(b, &res) != nil {
		return nil
	}
	return res.Result
}
