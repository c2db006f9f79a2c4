package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// KillHolder crashes the lock holder inside its critical section: it takes
// the next client that reaches its failpoint (lease checked, about to work
// and write), sends SIGKILL to the client's whole container (the client
// program and its lease keepalives die with it) while it waits there, and
// keeps it down for one to two leases; recovery starts the container again
// and the harness reconnects to it. The killed holder's operation completes
// info (it never wrote, but the history cannot know that), its process is
// retired, and a fresh process continues on the restarted worker. The lock
// stays held by nobody until the service expires the dead holder's lease:
// the liveness checker measures how long that takes.
//
// The kill lands at the failpoint: the holder waits there until it is told
// to proceed (or until its failpoint timeout, a minute longer than any
// operation), and it is told only after the kill. Its record says so (its
// holder's hit and phase), with the holder's process and token, and the TTL
// and the target's longest lease (Env.Lease) that the recovery is measured
// in.
type KillHolder struct{}

// Name is "kill-holder".
func (KillHolder) Name() string { return "kill-holder" }

// Inject waits for the next holder and kills its container.
func (KillHolder) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	h, err := env.NextHolder(ctx)
	if err != nil {
		return nil, err
	}
	node := h.Node
	down := between(r, env.Lease(), 2*env.Lease())
	restart := func(ctx context.Context) error { return env.Restart(ctx, node) }
	if err := env.Kill(ctx, node); err != nil {
		// A kill cut short (the time limit) may have killed it all the
		// same: recorded, and started again at once by the schedule's
		// heal, within its bound (recoverTimeout): a restart made while
		// the kill was still landing can leave no worker to reconnect to,
		// and an unbounded reconnect held a run past its time limit for
		// 28 minutes (CI, Curator under kill-holder).
		h.Proceed()
		return inPart([]string{node}, nil, restart, fmt.Errorf("kill-holder: %w", err))
	}
	// The holder is dead: the proceed cannot reach it, and it is owed
	// all the same. The kill hit it at its failpoint.
	h.Proceed()
	aim := h.aimed(true)
	aim.TTL, aim.Lease = history.Ms(env.TTL()), history.Ms(env.Lease())
	return &Injection{
		Nodes: []string{node}, Hold: down,
		Holder:  aim,
		Recover: restart,
	}, nil
}

func (KillHolder) holderVerb() string { return "killed" }

func (KillHolder) down() bool { return true }
