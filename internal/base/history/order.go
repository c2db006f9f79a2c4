package history

import (
	"errors"
	"fmt"
	"strings"
)

// Step is one event a scripted scenario expects: the first event of
// Process with Type and F (a phase's name, an operation's function, or a
// nemesis event's start/stop). Name says what it means in the scenario
// ("A reads", "B's write acknowledged"); it names the step in errors.
type Step struct {
	Name    string
	Process Process
	Type    Type
	F       string
}

// ErrOrder: a scripted scenario's events are missing or out of order, so
// the scenario did not take place as scripted.
var ErrOrder = errors.New("scenario out of order")

// CheckOrder checks that the scenario the steps describe happened: each
// step's event (the first that matches it) is in events, and each comes
// after the previous step's. It returns nil, or an error wrapping ErrOrder
// that names the first step missing or out of place, with the events it
// was compared with. A scripted test calls it before it asserts a verdict
// about the scenario.
func CheckOrder(events []Event, steps ...Step) error {
	prev := -1
	prevName := ""
	for _, s := range steps {
		at := -1
		for i, e := range events {
			if e.Process == s.Process && e.Type == s.Type && (s.F == "" || e.F == s.F) {
				at = i
				break
			}
		}
		switch {
		case at < 0:
			return fmt.Errorf("%w: %s (process %s, %s %s) never happened", ErrOrder, s.Name, s.Process, s.Type, s.F)
		case at < prev:
			return fmt.Errorf("%w: %s (event %d) came before %s (event %d)", ErrOrder, s.Name, events[at].Index,
				prevName, events[prev].Index)
		}
		prev, prevName = at, s.Name
	}
	return nil
}

// Format writes events one a line, for a test's log when its scenario or
// its verdict is not the one expected.
func Format(events []Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%4d %9.3fs %-8s %-6s %-16s %s\n", e.Index, float64(e.Time)/1e9, e.Process, e.Type, e.F, e.Value)
	}
	return b.String()
}
