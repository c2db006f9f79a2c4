package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/checkers/jepsen"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
)

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	details := "Re-runs the checkers on a stored run and rewrites its results.json, report.html and junit.xml\n" +
		"(all or nothing: a history the checkers cannot judge exits 254 and leaves them as they are),\n" +
		"or checks a history recorded by Jepsen on a model:\n"
	for _, m := range jepsen.Models {
		details += fmt.Sprintf("  %-14s %s\n", m.Name, m.Reads)
	}
	fs := verbFlags("check", stderr, details)
	timeout := fs.Duration("check-timeout", 60*time.Second, "time limit of the linearizability check (past it: unknown)")
	var sp spec.Spec // --check-memory, as run takes it
	sp.Flags(fs, func(k spec.Knob) bool { return k.Flag == "check-memory" }, nil)
	var jc jepsen.Check
	fs.StringVar(&jc.File, "jepsen-history", "", "check this history recorded by Jepsen instead of a run (with --model)")
	fs.StringVar(&jc.Model, "model", "", "the model of --jepsen-history: "+jepsen.ModelNames())
	fs.StringVar(&jc.Viz, "viz", "", "with --jepsen-history: where to write Porcupine's visualization of the failing keys, if any (a new file: never the history, nor an existing file without --force)")
	fs.BoolVar(&jc.Force, "force", false, "with --viz: replace the file if it exists")
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	switch {
	case jc.File != "" && fs.NArg() > 0:
		return 0, fmt.Errorf("%w: check takes RUN_DIR or --jepsen-history, not both", errUsage)
	case jc.File != "":
		jc.Timeout, jc.Memory = *timeout, checkers.MemoryBudget(sp.CheckMemory)
		return jc.Run(ctx, stdout)
	case jc.Model != "" || jc.Viz != "" || jc.Force:
		return 0, fmt.Errorf("%w: --model, --viz and --force go with --jepsen-history", errUsage)
	case fs.NArg() != 1:
		return 0, fmt.Errorf("%w: check takes one RUN_DIR, or --jepsen-history FILE --model MODEL", errUsage)
	}
	run, err := store.Open(fs.Arg(0))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errUsage, err)
	}
	events, err := history.ReadFileContext(ctx, run.Path(store.HistoryFile))
	if err != nil {
		return readFailed(ctx, run.Path(store.HistoryFile), err)
	}
	var test store.TestInfo
	if err := run.ReadJSON(store.TestFile, &test); err != nil {
		return 0, fmt.Errorf("%w: %w", errUsage, err)
	}
	// The stored results keep what a check cannot find again (the run's
	// time, its note, its kept data): one past its bound is bad input,
	// refused before the check; one that does not parse is replaced.
	var old store.Results
	oldErr := run.ReadJSON(store.ResultsFile, &old)
	if errors.Is(oldErr, store.ErrTooLarge) {
		return 0, fmt.Errorf("%w: %w", errUsage, oldErr)
	}
	name := test.Workload
	if strings.HasPrefix(name, "lock-append") { // older demos said "lock-append (scripted demo)"
		name = "lock-append"
	}
	w, err := lookupWorkload(name)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", errUsage, store.TestFile, err)
	}
	res, err := harness.CheckWithin(run, w, events, *timeout, checkers.MemoryBudget(sp.CheckMemory))
	switch {
	case harness.IsBadInput(err):
		// Nothing can be read: bad input, and the stored results stay as
		// they are.
		return 0, inputError{Err: fmt.Errorf("%s: cannot check, nothing written: %w", run.Path(store.HistoryFile), err)}
	case err != nil:
		// The history breaks an assumption of the checkers: unknown, with
		// the reason, and the stored results stay as they are.
		fmt.Fprintf(stdout, "unknown  %s: cannot check, nothing written: %v\n", run.Dir, err)
		return exitUnknown, nil
	}
	harness.Judge(test, events, res)
	if oldErr == nil {
		res.Elapsed, res.Note = old.Elapsed, old.Note
		res.Records = res.Records.Carry(old.Records)
		if old.Interrupted {
			harness.MarkInterrupted(res)
		}
	}
	if err := harness.WriteResults(run, test, res, events, w); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "%s  %s (%d events, checked in %s)\n", res.Valid(), run.Dir, res.Events, res.CheckTime)
	fmt.Fprint(stdout, harness.Summary(w, res, test.Concurrency))
	fmt.Fprintf(stdout, "  report           %s\n", run.Path(store.ReportFile))
	if store.IsResultsRoot(run.Root) {
		fmt.Fprintf(stdout, "  index            %s\n", filepath.Join(run.Root, report.IndexFile))
	} else {
		fmt.Fprintf(stdout, "  index            not updated: %s is not a results directory fencecheck made (no %q link to a run in it)\n", run.Root, store.Latest)
	}
	return exitCode(res.Valid()), nil
}
