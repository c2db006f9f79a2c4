package sweep

import (
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/history"
	la "github.com/fencecheck/fencecheck/internal/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/store"
)

// NewTrial is a finished lock-append run as a trial: its verdict, its
// acknowledged and lost updates, its first holder pause (how long it held,
// whether it hit) and the time that holder believed it had left at its
// lease check, which it finds in events (the run's history). run is the
// run's directory, as the sweep records it.
func NewTrial(seed uint64, res *store.Results, events []history.Event, run string) Trial {
	t := Trial{Seed: seed, Verdict: res.Valid().String(), Run: run}
	if la, ok := res.Result.(*checkers.LockAppendResult); ok {
		t.Acknowledged, t.Lost, t.FenceRejections = la.LostUpdates.Acknowledged, la.LostUpdates.Lost, la.FenceRejections
	}
	var pause *history.Fault
	for i, f := range res.Faults {
		if strings.HasPrefix(f.Fault, "pause-holder") {
			t.Faults++
			if pause == nil {
				pause = &res.Faults[i]
			}
		}
	}
	if pause == nil {
		return t
	}
	if pause.Stop >= pause.Start {
		t.HeldMS = (pause.Stop - pause.Start) / 1e6
	}
	t.Hit, _ = strconv.ParseBool(pause.Params["hit"])
	if p, err := strconv.Atoi(pause.Params["process"]); err == nil {
		if left, ok := LeftAtCheck(events, history.Process(p), pause.Start); ok {
			t.LeftMS = &left
		}
	}
	return t
}

// LeftAtCheck is the time (ms) process p believed it had left on its lease
// at its last lease check before time at: the checked phase of the
// critical section a pause caught at its failpoint.
func LeftAtCheck(events []history.Event, p history.Process, at int64) (int64, bool) {
	var left int64
	found := false
	for _, e := range events {
		if e.Time > at {
			break
		}
		if e.Process != p || e.Type != history.Phase || e.F != la.PhaseChecked {
			continue
		}
		var c la.Checked
		if e.Decode(&c) == nil {
			left, found = c.RemainingMS, true
		}
	}
	return left, found
}
