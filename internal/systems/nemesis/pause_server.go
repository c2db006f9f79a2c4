package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
)

// PauseServer freezes server processes with SIGSTOP for one to three leases,
// then resumes them with SIGCONT. A frozen leader stops heartbeating; the
// others elect a new one; when it resumes it learns it was deposed.
type PauseServer struct{ Scope string }

// Name is "pause-server:SCOPE".
func (f PauseServer) Name() string { return "pause-server:" + f.Scope }

// Applies checks the scope's precondition (Precondition): :minority needs
// three servers, :resource a resource container.
func (f PauseServer) Applies(s Shape) error { return scopeApplies(f.Scope, s) }

// Inject pauses the servers the scope names.
func (f PauseServer) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	nodes, err := pickServers(ctx, env, r, f.Scope)
	if err != nil {
		return nil, err
	}
	hold := between(r, env.Lease(), 3*env.Lease())
	var stopped []string
	for _, n := range nodes {
		if err := env.Signal(ctx, n, "SIGSTOP"); err != nil {
			// n too: a call that failed (its context ended, the engine's
			// answer was lost) may have stopped it all the same.
			stopped = append(stopped, n)
			return inPart(stopped, nil, func(context.Context) error { return signalAll(env, stopped, "SIGCONT") }, err)
		}
		stopped = append(stopped, n)
	}
	return &Injection{
		Nodes: nodes, Hold: hold,
		Recover: func(ctx context.Context) error { return signalAll(env, nodes, "SIGCONT") },
	}, nil
}

// signalAll signals every node, with a context of its own, and returns every
// error.
func signalAll(env Env, nodes []string, sig string) error {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, env.Signal(context.Background(), n, sig))
	}
	return errors.Join(errs...)
}
