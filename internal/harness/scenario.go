package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/store"
)

// ScenarioAttempts is how many times a scripted story (a demo's story, a
// regression scenario) is played before it gives up with ErrNotSetUp.
const ScenarioAttempts = 3

// notSetUp is an error wrapping ErrNotSetUp.
func notSetUp(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotSetUp, fmt.Sprintf(format, args...))
}

// Attempts plays a scripted scenario up to attempts times: again while play
// returns an error wrapping ErrNotSetUp, telling missed of each attempt
// that did not take place. It returns nil, the first other error, or the
// last attempt's ErrNotSetUp.
func Attempts(attempts int, play func() error, missed func(attempt int, err error)) error {
	for i := 1; ; i++ {
		err := play()
		if err == nil || !errors.Is(err, ErrNotSetUp) || i >= attempts {
			return err
		}
		missed(i, err)
	}
}

// replay plays a story up to ScenarioAttempts times (Attempts). A story
// that missed and is played again says why on out, and its run directory is
// removed (its
// history is not a run of the scenario); every client is resumed and every
// armed wait for a holder withdrawn before the next attempt, which
// reconnects the workers (beginStory).
func replay[T any](ctx context.Context, cl *Cluster, out io.Writer, play func() (T, *store.Run, error)) (T, error) {
	var v T
	var run *store.Run
	err := Attempts(ScenarioAttempts, func() (err error) {
		v, run, err = play()
		return err
	}, func(i int, err error) {
		fmt.Fprintf(out, "  attempt %d of %d: %v; playing the story again\n", i, ScenarioAttempts, err)
		if run != nil {
			_ = os.RemoveAll(run.Dir)
		}
		cl.disarm()
		for _, c := range cl.clients {
			_ = cl.Signal(context.WithoutCancel(ctx), c.name, "SIGCONT")
		}
	})
	return v, err
}

// disarm withdraws every armed wait for a holder; a holder already handed
// to one goes on.
func (c *Cluster) disarm() {
	c.mu.Lock()
	ws := c.waiters
	c.waiters = nil
	c.mu.Unlock()
	for _, w := range ws {
		select {
		case h := <-w:
			h.Proceed()
		default:
		}
	}
}

// letGo lets a frozen holder proceed (it reads that once resumed) and
// returns ErrNotSetUp when it had given up waiting at its failpoint.
func letGo(h nemesis.Holder, who string) error {
	if h.Proceed == nil || !h.Proceed() {
		return notSetUp("%s had given up waiting at its failpoint before its fault was in place", who)
	}
	return nil
}

// inOrder checks the story's history against the steps it scripted
// (history.CheckOrder); a story whose events came otherwise is not set up.
func inOrder(events []history.Event, steps ...history.Step) error {
	if err := history.CheckOrder(events, steps...); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSetUp, err)
	}
	return nil
}

// answered returns the first of process p's events in events that is a
// completion or one of phases (a grant), and whether there is one: whether
// a client that should still be waiting was answered.
func answered(events []history.Event, p history.Process, phases ...string) (history.Event, bool) {
	for _, e := range events {
		if e.Process != p {
			continue
		}
		if e.Type.Completes() {
			return e, true
		}
		for _, f := range phases {
			if e.Type == history.Phase && e.F == f {
				return e, true
			}
		}
	}
	return history.Event{}, false
}
