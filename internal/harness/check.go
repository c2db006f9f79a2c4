package harness

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Check is CheckWithin with the default memory budget
// (checkers.DefaultMemoryBudget).
func Check(run *store.Run, w workloads.Workload, events []history.Event, workers int, timeout time.Duration) (*store.Results, error) {
	return CheckWithin(run, w, events, workers, timeout, checkers.DefaultMemoryBudget())
}

// CheckWithin runs the workload's checkers on a run's history of workers
// clients (test.json's concurrency), which its visualization and messages
// name by their workers (checkers.Options.Workers). timeout
// bounds the linearizability check's time (0: no bound) and memory, in
// bytes, the process's memory while it searches (0: no bound): past either
// its verdict is unknown, saying which, never valid (see
// checkers.Options). Porcupine's visualization goes to stagedViz when the
// history is not linearizable; WriteResults puts it in place as
// linearizability.html. When the checkers could not judge the history at
// all, the error says why: it wraps checkers.ErrBadHistory (the history
// could not be read) or checkers.ErrAssumption (it breaks an assumption of
// the checkers), and comes with the result (unknown, with the reason).
func CheckWithin(run *store.Run, w workloads.Workload, events []history.Event, workers int, timeout time.Duration, memory uint64) (*store.Results, error) {
	start := time.Now()
	viz := stagedViz(run)
	_ = os.Remove(viz)
	r := w.Check(events, checkers.Options{Timeout: timeout, MemoryBudget: memory, VisualizationPath: viz, VisualizationName: store.LinFile, Workers: workers})
	res := &store.Results{Workload: w.Name(), Result: r, Events: len(events), Faults: faults(events)}
	res.CheckTime = time.Since(start).Round(time.Microsecond).String()
	if e, ok := r.(interface{ Err() error }); ok && e.Err() != nil {
		os.Remove(viz)
		return res, e.Err()
	}
	return res, nil
}

// checkMemory is the memory budget of the run's check in bytes (0: no
// bound): c.CheckMemory, or checkers.DefaultMemoryBudget when it is nil.
func (c *Config) checkMemory() uint64 { return checkers.MemoryBudget(c.CheckMemory) }

// IsBadInput reports whether err is Check's error for a history that could
// not be read at all (rather than one that breaks an assumption).
func IsBadInput(err error) bool {
	return errors.Is(err, checkers.ErrBadHistory) && !errors.Is(err, checkers.ErrAssumption)
}

// stagedViz is where the checkers write Porcupine's visualization: a hidden
// temporary file beside linearizability.html, which WriteResults puts in
// place with the other outputs (so that a check that fails half-way
// leaves the old one).
func stagedViz(run *store.Run) string { return run.Path("." + store.LinFile + ".tmp") }

// faults returns the run's fault windows (none if the nemesis events do not
// pair).
func faults(events []history.Event) []history.Fault {
	fs, err := history.Faults(events)
	if err != nil || fs == nil {
		return []history.Fault{}
	}
	return fs
}

// Summary is the end-of-run text: one figure a line, each client named
// by its worker of workers (history.Process.Worker).
func Summary(w workloads.Workload, res *store.Results, workers int) string {
	var b strings.Builder
	w.Summary(&b, res, workers)
	fmt.Fprintf(&b, "  faults           %d", len(res.Faults))
	if h := res.FaultHits; h != nil {
		fmt.Fprintf(&b, " (%d aimed at a critical section: %d hit, %d missed)", h.Aimed, h.Hit, h.Missed)
	}
	fmt.Fprintln(&b)
	if l := res.Liveness; l != nil && (l.Message != "" || l.Error != "") {
		fmt.Fprintf(&b, "  liveness         %s\n", strings.TrimSpace(l.Message+" "+l.Error))
	}
	if wk := res.Workers; wk != nil && wk.Idle > 0 {
		fmt.Fprintf(&b, "  idle clients     %d of %d completed no operation after the first fault\n", wk.Idle, wk.Count)
	}
	if res.Note != "" {
		fmt.Fprintf(&b, "  note             %s\n", res.Note)
	}
	for _, r := range res.Records {
		if s, ok := r.(record.Summarizer); ok {
			for _, l := range s.Summary() {
				fmt.Fprintf(&b, "  %-16s %s\n", l.Label, l.Text)
			}
		}
	}
	return b.String()
}
