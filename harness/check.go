package harness

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/checkers"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/store"
	"github.com/fencecheck/fencecheck/workloads/lockappend"
)

// Check runs the workload's checkers on a stored run's history. A history
// the checkers cannot judge at all (events that do not pair, values that do
// not decode: the result's Error) is an error wrapping
// checkers.ErrBadHistory, with the result; nothing is written then, and
// WriteResults is not to be called.
func Check(run *store.Run, workload string, events []history.Event, timeout time.Duration) (*store.Results, error) {
	w, err := lookupWorkload(workload)
	if err != nil {
		return nil, err
	}
	res := w.Check(run, events, timeout)
	if msg := checkError(res); msg != "" {
		os.Remove(stagedViz(run))
		return res, badHistory(msg)
	}
	return res, nil
}

// checkError is why the checkers could not judge the history at all, if
// they could not.
func checkError(res *store.Results) string {
	switch {
	case res.LockAppend != nil:
		return res.LockAppend.Error
	case res.Register != nil:
		return res.Register.Error
	}
	return ""
}

// badHistory is the checkers' own message about a history they cannot
// judge; it is checkers.ErrBadHistory.
type badHistory string

func (e badHistory) Error() string        { return string(e) }
func (e badHistory) Is(target error) bool { return target == checkers.ErrBadHistory }

// stagedViz is where the checkers write Porcupine's visualization: a hidden
// temporary file beside linearizability.html, which WriteResults puts in
// place with the other outputs (so that a check that fails half-way
// leaves the old one).
func stagedViz(run *store.Run) string { return run.Path("." + store.LinFile + ".tmp") }

// checkLockAppend runs the lock-append checkers; Porcupine's visualization
// goes to stagedViz when the history is not linearizable, and becomes the
// run's linearizability.html in WriteResults.
func checkLockAppend(run *store.Run, events []history.Event, timeout time.Duration) *store.Results {
	start := time.Now()
	viz := stagedViz(run)
	_ = os.Remove(viz)
	la := checkers.CheckLockAppend(events, checkers.Options{Timeout: timeout, VisualizationPath: viz})
	if la.Checkers.Linearizable.Visualization != "" {
		la.Checkers.Linearizable.Visualization = store.LinFile
	}
	res := &store.Results{Workload: "lock-append", LockAppend: &la, Events: len(events)}
	res.Faults = faults(events)
	res.FirstLostUpdateNS = firstLoss(events, la.LostUpdates)
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

// firstLoss returns when the first acknowledged element was destroyed: the
// earliest acknowledgement (completion or late result) of an overwriting
// write, or nil when nothing was lost.
func firstLoss(events []history.Event, lost checkers.LostUpdates) *int64 {
	if lost.Lost == 0 {
		return nil
	}
	ops, err := history.Pair(events)
	if err != nil {
		return nil
	}
	// When each append's write was acknowledged, by element.
	acked := map[int64]int64{}
	for _, op := range ops {
		if op.F != lockappend.FAppend {
			continue
		}
		var inv lockappend.Invoke
		if op.Invoke.Decode(&inv) != nil {
			continue
		}
		if op.Type() == history.Ok {
			acked[inv.Element] = op.Complete.Time
		} else if late, ok := op.PhaseEvent(lockappend.PhaseLate); ok {
			acked[inv.Element] = late.Time
		}
	}
	var first *int64
	for _, e := range lost.Elements {
		t := e.Acknowledged
		if w := e.OverwrittenBy; w != nil && w.Known {
			if at, ok := acked[w.Element]; ok && at > t {
				t = at
			}
		}
		if first == nil || t < *first {
			first = &t
		}
	}
	return first
}

// Summary is the end-of-run text: one figure a line.
func Summary(res *store.Results) string {
	var b strings.Builder
	switch {
	case res.LockAppend != nil:
		summarizeLockAppend(&b, res, res.LockAppend)
	case res.Register != nil:
		summarizeRegister(&b, res.Register)
	}
	fmt.Fprintf(&b, "  faults           %d\n", len(res.Faults))
	if res.Note != "" {
		fmt.Fprintf(&b, "  note             %s\n", res.Note)
	}
	return b.String()
}

func summarizeLockAppend(b *strings.Builder, res *store.Results, r *checkers.LockAppendResult) {
	st := r.Checkers.Stats
	fmt.Fprintf(b, "  operations       %d ok, %d fail, %d info\n", st.Ok, st.Fail, st.Info)
	lu := r.LostUpdates
	pct := 0.0
	if lu.Acknowledged > 0 {
		pct = 100 * float64(lu.Lost) / float64(lu.Acknowledged)
	}
	fmt.Fprintf(b, "  lost updates     %d of %d acknowledged (%.1f%%)", lu.Lost, lu.Acknowledged, pct)
	if r.Checkers.LostUpdates.Valid == checkers.Unknown {
		fmt.Fprintf(b, " (unknown: %s)", r.Checkers.LostUpdates.Message)
	}
	b.WriteString("\n")
	for i, e := range lu.Elements {
		if i == 3 {
			fmt.Fprintf(b, "                   ... %d more in the report\n", len(lu.Elements)-3)
			break
		}
		fmt.Fprintf(b, "                   element %d of process %d (token %d)", e.Element, e.Process, e.Token)
		if w := e.OverwrittenBy; w != nil && w.Known {
			stale := ""
			if w.Stale {
				stale = ", a stale holder"
			}
			fmt.Fprintf(b, " overwritten by process %d (token %d%s)", w.Process, w.Token, stale)
		}
		b.WriteString("\n")
	}
	if res.FirstLostUpdateNS != nil {
		fmt.Fprintf(b, "  first lost at    %.1fs\n", time.Duration(*res.FirstLostUpdateNS).Seconds())
	}
	fmt.Fprintf(b, "  fence rejections %d\n", r.FenceRejections)
	fmt.Fprintf(b, "  overlaps         %d (windows where two clients believed they held the lock)\n", r.Overlaps)
	c := r.Checkers
	fmt.Fprintf(b, "  checkers         linearizable %s, lost-updates %s, token-monotonic %s, stats %s\n",
		c.Linearizable.Valid, c.LostUpdates.Valid, c.TokenMonotonic.Valid, c.Stats.Valid)
}

// checkRegister runs the register checkers; Porcupine's visualization of
// the failing keys goes to stagedViz, as for lock-append.
func checkRegister(run *store.Run, events []history.Event, timeout time.Duration) *store.Results {
	start := time.Now()
	viz := stagedViz(run)
	_ = os.Remove(viz)
	rr := checkers.CheckRegisterWorkload(events, checkers.Options{Timeout: timeout, VisualizationPath: viz})
	if rr.Checkers.Linearizable.Visualization != "" {
		rr.Checkers.Linearizable.Visualization = store.LinFile
	}
	res := &store.Results{Workload: "register", Register: &rr, Events: len(events), Faults: faults(events)}
	res.CheckTime = time.Since(start).Round(time.Microsecond).String()
	return res
}

func summarizeRegister(b *strings.Builder, r *checkers.RegisterWorkloadResult) {
	st, lin := r.Checkers.Stats, r.Checkers.Linearizable
	fmt.Fprintf(b, "  operations       %d ok, %d fail, %d info\n", st.Ok, st.Fail, st.Info)
	fmt.Fprintf(b, "  linearizable     %s: %s\n", lin.Valid, lin.Message)
	if lin.Valid == checkers.Invalid {
		fmt.Fprintf(b, "  failing keys     %d (first: %s)\n", lin.FailingKeys, lin.FailingKey)
	}
	fmt.Fprintf(b, "  keys             %d checked of %d, %d operations checked (%d info), in %s\n",
		lin.KeysChecked, lin.Keys, lin.Checked, lin.Info, lin.Elapsed.Round(time.Millisecond))
}
