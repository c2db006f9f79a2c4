package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// PauseHolder freezes the lock holder inside its critical section: it takes
// the next client that reaches its failpoint (lease checked, about to work
// and write), sends SIGSTOP to the client's container (freezing all of it,
// lease keepalives included) while the client waits there, lets it proceed
// (it reads that only once resumed), and holds it for a random time between
// 1.5 and 3 leases (Env.Lease: the TTL, or longer where the target's
// server-side timer or lock-delay is), after which SIGCONT resumes it. The
// lease expires meanwhile; another client can acquire the lock and write,
// and the resumed holder then writes with a stale lease. The pause is in
// place before the holder's write leaves, however slow the machine.
type PauseHolder struct{}

// Name is "pause-holder".
func (PauseHolder) Name() string { return "pause-holder" }

// Inject waits for the next holder and pauses it.
func (PauseHolder) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	h, err := env.NextHolder(ctx)
	if err != nil {
		return nil, err
	}
	hold := time.Duration((1.5 + 1.5*r.Float64()) * float64(env.Lease()))
	if err := env.Signal(ctx, h.Node, "SIGSTOP"); err != nil {
		// A call that failed (the run's time limit cancelled it, the
		// engine's answer was lost) may have stopped the holder all the
		// same: resume it, or it stays frozen until teardown.
		h.Proceed()
		return nil, fmt.Errorf("pause-holder: %w", errors.Join(err, signalAll(env, []string{h.Node}, "SIGCONT")))
	}
	params := map[string]string{
		"process": h.Process.String(),
		"token":   strconv.FormatInt(h.Token, 10),
		"hold":    hold.Round(time.Millisecond).String(),
	}
	h.hit(params)
	return &Injection{
		Nodes:  []string{h.Node},
		Params: params,
		Hold:   hold,
		Recover: func(ctx context.Context) error {
			return env.Signal(ctx, h.Node, "SIGCONT")
		},
	}, nil
}
