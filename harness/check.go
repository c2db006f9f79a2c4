package harness

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/checkers"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/store"
	"github.com/fencecheck/fencecheck/workloads"
)

// Check runs the workload's checkers on a run's history; Porcupine's
// visualization goes to the run's linearizability.html when the history is
// not linearizable (a stale one is removed).
func Check(run *store.Run, w workloads.Workload, events []history.Event, timeout time.Duration) *store.Results {
	start := time.Now()
	viz := run.Path(store.LinFile)
	_ = os.Remove(viz)
	r := w.Check(events, checkers.Options{Timeout: timeout, VisualizationPath: viz})
	res := &store.Results{Workload: w.Name(), Result: r, Events: len(events), Faults: faults(events)}
	res.CheckTime = time.Since(start).Round(time.Microsecond).String()
	return res
}

// faults returns the run's fault windows (none if the nemesis events do not
// pair).
func faults(events []history.Event) []history.Fault {
	fs, err := history.Faults(events)
	if err != nil || fs == nil {
		return []history.Fault{}
	}
	return fs
}

// Summary is the end-of-run text: one figure a line.
func Summary(w workloads.Workload, res *store.Results) string {
	var b strings.Builder
	w.Summary(&b, res)
	fmt.Fprintf(&b, "  faults           %d", len(res.Faults))
	if h := res.FaultHits; h != nil {
		fmt.Fprintf(&b, " (%d aimed at a critical section: %d hit, %d missed)", h.Aimed, h.Hit, h.Missed)
	}
	fmt.Fprintln(&b)
	if wk := res.Workers; wk != nil && wk.Idle > 0 {
		fmt.Fprintf(&b, "  idle clients     %d of %d completed no operation after the first fault\n", wk.Idle, wk.Count)
	}
	if res.Note != "" {
		fmt.Fprintf(&b, "  note             %s\n", res.Note)
	}
	return b.String()
}
