package sweep

import (
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// NewTrial is a finished lock-append run as a trial: its verdict, its
// acknowledged and lost updates and fence rejections, and the timing of its
// first holder pause from events (the run's history, see Timing). run is
// the run's directory, as the sweep records it.
func NewTrial(seed uint64, res *store.Results, events []history.Event, run string) Trial {
	t := Trial{Seed: seed, Verdict: res.Valid().String(), Run: run}
	if res.Result != nil {
		s := res.Result.Summary()
		t.Acknowledged, t.Lost, t.FenceRejections = s.Acknowledged, s.Lost, s.FenceRejections
	}
	t.Timing(events)
	return t
}

// Timing sets what the trial knows from the run's history: how many holder
// pauses it had, and of the first one how long its window held, whether it
// hit, and the paused holder's timeline: the time it believed it had left
// at its lease check (LeftMS), how long after the check the pause was in
// place (DelayMS), and the time left by that same estimate when its write
// left once resumed (SlackMS). Fields it cannot find stay unset.
func (t *Trial) Timing(events []history.Event) {
	t.Faults, t.HeldMS, t.Hit, t.LeftMS, t.DelayMS, t.SlackMS, t.StopTookMS, t.HoldMS = 0, 0, false, nil, nil, nil, nil, nil
	faults, err := history.Faults(events)
	if err != nil {
		return
	}
	var pause *history.Fault
	for i, f := range faults {
		if strings.HasPrefix(f.Fault, "pause-holder") {
			t.Faults++
			if pause == nil {
				pause = &faults[i]
			}
		}
	}
	if pause == nil {
		return
	}
	if pause.Stop >= pause.Start {
		t.HeldMS = (pause.Stop - pause.Start) / 1e6
	}
	t.Hit, _ = pause.Aimed()
	if h := pause.Holder; h != nil && h.StopTook != nil {
		t.StopTookMS = new(h.StopTook.D().Milliseconds())
	}
	if pause.Hold > 0 {
		t.HoldMS = new(pause.Hold.D().Milliseconds())
	}
	p, ok := pause.HeldProcess()
	if !ok {
		return
	}
	tl := holderTimeline(events, p, pause.Start)
	if !tl.checked {
		return
	}
	t.LeftMS = &tl.left
	delay := (pause.Start - tl.checkAt) / 1e6
	t.DelayMS = &delay
	if tl.wrote {
		slack := (tl.checkAt + tl.left*1e6 - tl.writeAt) / 1e6
		t.SlackMS = &slack
	}
}

// timeline is a paused holder's critical section: its last lease check
// before the pause (when, and the time it believed it had left, ms), and
// when its write left after the pause.
type timeline struct {
	checked, wrote   bool
	checkAt, writeAt int64
	left             int64
}

// holderTimeline finds process p's last lease check before time at and its
// first write sent after it.
func holderTimeline(events []history.Event, p history.Process, at int64) timeline {
	var tl timeline
	for _, e := range events {
		if e.Process != p || e.Type != history.Phase {
			continue
		}
		switch {
		case e.F == la.PhaseChecked && e.Time <= at:
			var c la.Checked
			if e.Decode(&c) == nil {
				tl.checked, tl.checkAt, tl.left = true, e.Time, c.RemainingMS
				tl.wrote = false
			}
		case e.F == la.PhaseWriteSent && e.Time > at && tl.checked && !tl.wrote:
			tl.wrote, tl.writeAt = true, e.Time
		}
	}
	return tl
}
