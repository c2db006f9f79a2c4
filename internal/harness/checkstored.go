package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers/jepsen"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// CheckRequest is a check: of the stored run in Dir, or, when
// Jepsen.File is set, of a history recorded by Jepsen (jepsen.Check),
// within Timeout (0: none) and Memory (the --check-memory knob:
// checkers.MemoryBudget).
type CheckRequest struct {
	Dir string
	// Workload looks up the stored run's workload by its name (the
	// binary's table).
	Workload func(name string) (workloads.Workload, error)
	Jepsen   jepsen.Check
	Timeout  time.Duration
	Memory   *uint64 // spec.Spec.CheckMemory
}

// ModelsHelp is a line per Jepsen model: its name and what it reads.
func (CheckRequest) ModelsHelp() string {
	var b strings.Builder
	for _, m := range jepsen.Models {
		fmt.Fprintf(&b, "  %-14s %s\n", m.Name, m.Reads)
	}
	return b.String()
}

// ModelNames lists the Jepsen models' names (jepsen.ModelNames).
func (CheckRequest) ModelNames() string { return jepsen.ModelNames() }

// CheckCommand is `fencecheck check`: CheckStored of r.Dir, or r.Jepsen's Run
// when r.Jepsen.File is set, within r's bounds.
func CheckCommand(ctx context.Context, r CheckRequest, stdout io.Writer) (int, error) {
	memory := checkers.MemoryBudget(r.Memory)
	if r.Jepsen.File != "" {
		r.Jepsen.Timeout, r.Jepsen.Memory = r.Timeout, memory
		return r.Jepsen.Run(ctx, stdout)
	}
	return CheckStored(ctx, r.Dir, r.Workload, r.Timeout, memory, stdout)
}

// CheckStored re-runs the checkers on the stored run in dir (check
// RUN_DIR), its workload looked up by workload, within timeout (0: none) and memory (bytes; 0: none), keeps
// what a check cannot find again (the run's time, note and records),
// rewrites its results.json, report.html and junit.xml, and prints the
// verdict and the summary on stdout. It returns the exit code (0 valid, 1
// invalid, 2 unknown: a history the checkers cannot judge is unknown and
// leaves the stored results as they are). Bad input (not a run, a history
// or test.json that does not read, an oversized results.json) is an error
// that wraps cmdline.ErrUsage.
func CheckStored(ctx context.Context, dir string, workload func(string) (workloads.Workload, error), timeout time.Duration, memory uint64, stdout io.Writer) (int, error) {
	run, err := store.Open(dir)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	events, err := history.ReadFileContext(ctx, run.HistoryPath())
	if err != nil {
		return cmdline.ReadFailed(ctx, run.HistoryPath(), err)
	}
	var test store.TestInfo
	if err := run.ReadJSON(store.TestFile, &test); err != nil {
		return 0, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	// The stored results keep what a check cannot find again (the run's
	// time, its note, its kept data): one past its bound is bad input,
	// refused before the check; one that does not parse is replaced.
	var old store.Results
	oldErr := run.ReadJSON(store.ResultsFile, &old)
	if errors.Is(oldErr, store.ErrTooLarge) {
		return 0, fmt.Errorf("%w: %w", cmdline.ErrUsage, oldErr)
	}
	name := test.Workload
	if strings.HasPrefix(name, "lock-append") { // older demos said "lock-append (scripted demo)"
		name = "lock-append"
	}
	w, err := workload(name)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", cmdline.ErrUsage, store.TestFile, err)
	}
	res, err := CheckWithin(run, w, events, test.Concurrency, timeout, memory)
	switch {
	case IsBadInput(err):
		// Nothing can be read: bad input, and the stored results stay as
		// they are.
		return 0, cmdline.InputError{Err: fmt.Errorf("%s: cannot check, nothing written: %w", run.HistoryPath(), err)}
	case err != nil:
		// The history breaks an assumption of the checkers: unknown, with
		// the reason, and the stored results stay as they are.
		fmt.Fprintf(stdout, "unknown  %s: cannot check, nothing written: %v\n", run.Dir, err)
		return cmdline.ExitUnknown, nil
	}
	Judge(test, events, res)
	if oldErr == nil {
		res.Elapsed, res.Note = old.Elapsed, old.Note
		res.Records = res.Records.Carry(old.Records)
		if old.Interrupted {
			MarkInterrupted(res)
		}
	}
	if err := WriteResults(run, test, res, events, w); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "%s  %s (%d events, checked in %s)\n", res.Valid(), run.Dir, res.Events, res.CheckTime)
	fmt.Fprint(stdout, Summary(w, res, test.Concurrency))
	fmt.Fprintf(stdout, "  report           %s\n", run.Path(store.ReportFile))
	if store.IsResultsRoot(run.Root) {
		fmt.Fprintf(stdout, "  index            %s\n", filepath.Join(run.Root, report.IndexFile))
	} else {
		fmt.Fprintf(stdout, "  index            not updated: %s is not a results directory fencecheck made (no %q link to a run in it)\n", run.Root, store.Latest)
	}
	return res.Valid().ExitCode(), nil
}
