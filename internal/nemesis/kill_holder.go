package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
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
// operation), and it is told only after the kill. Its params say so (hit,
// phase), with the holder's process and token, and the TTL and the
// target's longest lease (Env.Lease) that the recovery is measured in.
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
		// same: start it again, or it stays down until teardown.
		h.Proceed()
		return nil, fmt.Errorf("kill-holder: %w", errors.Join(err, restart(context.Background())))
	}
	// The holder is dead: the proceed cannot reach it, and it is owed
	// all the same.
	h.Proceed()
	return &Injection{
		Nodes: []string{node}, Hold: down,
		Params: map[string]string{
			"process": h.Process.String(),
			"token":   strconv.FormatInt(h.Token, 10),
			"down":    ms(down),
			"ttl":     ms(env.TTL()),
			"lease":   ms(env.Lease()),
			"hit":     "true",
			"phase":   PhaseFailpoint,
		},
		Recover: restart,
	}, nil
}
