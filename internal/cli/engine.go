package cli

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/platform/docker"
	"github.com/fencecheck/fencecheck/internal/runtime"
)

// engineConn is the Docker Engine a command's runs share: the harness is
// handed it (harness.Config.Engine) and connects to none itself. It
// connects at the first get, which a command calls when a run is about to
// start, after its arguments are checked: a command that refuses its
// arguments, or has nothing to run, never calls Docker. It keeps the
// connection for the runs after, and the command closes it when it
// returns. A connection that failed is tried again at the next get, as
// each run connected on its own before the harness was handed its engine.
// Runs of one command come one after another: it is not safe for
// concurrent use.
type engineConn struct{ eng runtime.Engine }

// get returns the command's engine, connecting first if it is not
// connected; an error wraps harness.ErrHarness (exit 255), as the
// harness's own connection did.
func (c *engineConn) get(ctx context.Context) (runtime.Engine, error) {
	if c.eng == nil {
		eng, err := docker.Connect(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		c.eng = eng
	}
	return c.eng, nil
}

// run is harness.Run of cfg on the command's engine (harness.RunOn): a
// failed connection is the run's harness failure, or its interruption
// when ctx ended (Ctrl-C).
func (c *engineConn) run(ctx context.Context, cfg harness.Config) (*harness.Outcome, error) {
	return harness.RunOn(ctx, c.get, cfg)
}

// close closes the engine if it was connected.
func (c *engineConn) close() {
	if c.eng != nil {
		c.eng.Close()
		c.eng = nil
	}
}
