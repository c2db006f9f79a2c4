package nemesis

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Roles a replayed fault is aimed at, instead of nodes: in a new cluster the
// leader, and the client that holds the lock, may be other nodes.
const (
	// RoleHolder: the next client to reach its failpoint (pause-holder,
	// partition-client).
	RoleHolder = "holder"
	// RoleLeader: the server that leads when the fault comes (:leader).
	RoleLeader = "leader"
)

// Step is one fault of a recorded schedule, as Recorded reads it from a
// history and a replaying Schedule injects it again (history.FaultStep: an
// experiment file's schedule holds it too).
type Step = history.FaultStep

// Recorded reads the schedule a history recorded: one step per fault that
// started (nemesis start events; the stop gives the next quiet time), in
// order. A history without nemesis events has no steps (nil, no error).
func Recorded(events []history.Event) ([]Step, error) {
	faults, err := history.Faults(events)
	if err != nil {
		return nil, err
	}
	if len(faults) == 0 {
		return nil, nil
	}
	origin := events[0].Time
	var steps []Step
	for _, f := range faults {
		if f.Fault == "" {
			return nil, fmt.Errorf("nemesis: a fault at %s has no name", time.Duration(f.Start))
		}
		st := Step{Fault: f.Fault, Nodes: slices.Clone(f.Nodes)}
		at := f.Start
		switch {
		case f.Holder != nil && (f.Holder.Hit != nil || f.Holder.Token != nil):
			st.Role = RoleHolder
			if t, ok := failpointTime(events, f); ok {
				at = t
			}
		case strings.HasSuffix(f.Fault, ":"+ScopeLeader):
			st.Role = RoleLeader
		}
		st.After = time.Duration(max(0, at-origin))
		// The recorded quiet time includes the original's health check
		// before the fault, and, up to a recorded start, its injection;
		// the replay makes its own.
		st.After = max(0, st.After-f.Health.Before.D())
		if at == f.Start {
			st.After = max(0, st.After-f.Took.D())
		}
		if f.Hold < 0 {
			return nil, fmt.Errorf("nemesis: fault %s at %s: hold %s", f.Fault, time.Duration(f.Start), f.Hold)
		}
		timed, err := timedByTTL(f)
		if err != nil {
			return nil, err
		}
		if !timed {
			st.Hold = f.Hold.D()
		}
		steps = append(steps, st)
		if f.Stop < 0 {
			break // the history ends inside it: nothing followed
		}
		origin = f.Stop
	}
	return steps, nil
}

// failpointTime is when the holder of a holder fault reached its failpoint:
// the time of its process's last phase event before the fault's start (its
// lease check; the failpoint follows it).
func failpointTime(events []history.Event, f history.Fault) (int64, bool) {
	if f.Holder == nil {
		return 0, false
	}
	p := f.Holder.Process
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Time > f.Start {
			continue
		}
		if e.Process == p && e.Type == history.Phase {
			return e.Time, true
		}
		if e.Process == p && e.Type == history.Invoke {
			return 0, false // its operation began after any phase: none of this section
		}
	}
	return 0, false
}

// timedByTTL tells a pause-holder:xM, which holds M TTLs from the moment it
// found the holder, its SIGSTOP's time included: the recorded hold is what
// was left after that SIGSTOP, and the replayed fault computes its own.
func timedByTTL(f history.Fault) (bool, error) {
	if !strings.HasPrefix(f.Fault, "pause-holder") {
		return false, nil
	}
	var rec PauseHolderRecord
	if err := f.DecodeFigures(&rec); err != nil {
		return false, fmt.Errorf("nemesis: fault %s at %s: %w", f.Fault, time.Duration(f.Start), err)
	}
	return rec.TTLMultiple > 0, nil
}
