package nemesis

import (
	"context"
	"math/rand/v2"
)

// PauseClient freezes a random client with SIGSTOP, whatever it is doing,
// for 1.5 to 3 leases, then resumes it. Unlike pause-holder it does not wait
// for the client to hold the lock: it shows what pauses at any moment do.
type PauseClient struct{}

// Name is "pause-client".
func (PauseClient) Name() string { return "pause-client" }

// Inject pauses one random client.
func (PauseClient) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	clients := env.Clients()
	node := clients[r.IntN(len(clients))]
	hold := between(r, 3*env.Lease()/2, 3*env.Lease())
	if err := env.Signal(ctx, node, "SIGSTOP"); err != nil {
		// A call that failed may have stopped it all the same.
		return inPart([]string{node}, nil, func(context.Context) error { return signalAll(env, []string{node}, "SIGCONT") }, err)
	}
	return &Injection{
		Nodes: []string{node}, Hold: hold,
		Recover: func(ctx context.Context) error { return env.Signal(ctx, node, "SIGCONT") },
	}, nil
}
