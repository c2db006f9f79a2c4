package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
)

// Kill crashes servers with SIGKILL, keeps them down for one to two leases,
// and restarts them on their data (the container's file system survives),
// at their addresses.
type Kill struct{ Scope string }

// Name is "kill:SCOPE".
func (f Kill) Name() string { return "kill:" + f.Scope }

// Applies checks the scope's precondition (Precondition): :minority needs
// three servers, :resource a resource container (a resource that lives in
// the lock service has no process of its own to kill).
func (f Kill) Applies(s Shape) error { return scopeApplies(f.Scope, s) }

// Inject kills the servers the scope names.
func (f Kill) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	nodes, err := pickServers(ctx, env, r, f.Scope)
	if err != nil {
		return nil, err
	}
	down := between(r, env.Lease(), 2*env.Lease())
	var killed []string
	restart := func(ctx context.Context) error {
		var errs []error
		for _, n := range killed {
			errs = append(errs, env.Restart(ctx, n))
		}
		return errors.Join(errs...)
	}
	for _, n := range nodes {
		// Counted before the kill: a kill cut short after its SIGKILL
		// (the run ending) still needs the restart.
		killed = append(killed, n)
		if err := env.Kill(ctx, n); err != nil {
			return nil, errors.Join(err, restart(context.Background()))
		}
	}
	return &Injection{
		Nodes: nodes, Hold: down,
		Params:  map[string]string{"down": ms(down)},
		Recover: restart,
	}, nil
}
