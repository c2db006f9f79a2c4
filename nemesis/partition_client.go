package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"
)

// PartitionClient cuts the lock holder off from every server, inside its
// critical section, for 1.5 to 3 leases, then heals. Its lease expires
// meanwhile (its keepalives no longer arrive), another client gets the lock,
// and when the holder's connection heals its late write is a stale one.
// The harness's control connection to the client is not cut.
type PartitionClient struct{}

// Name is "partition-client".
func (PartitionClient) Name() string { return "partition-client" }

// Inject waits for the next holder and cuts it off.
func (PartitionClient) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	h, err := env.NextHolder(ctx)
	if err != nil {
		return nil, err
	}
	delay := time.Duration(r.Float64() * 0.8 * float64(env.Work()))
	hold := between(r, 3*env.Lease()/2, 3*env.Lease())
	if err := sleep(ctx, delay); err != nil {
		return nil, err
	}
	nodes := []string{h.Node}
	if err := dropBoth(ctx, env, h.Node, env.Servers()); err != nil {
		return nil, errors.Join(err, flush(context.Background(), env, nodes))
	}
	return &Injection{
		Nodes: nodes, Hold: hold,
		Params: map[string]string{"process": h.Process.String(), "token": strconv.FormatInt(h.Token, 10),
			"hold": ms(hold), "delay": ms(delay)},
		Recover: func(ctx context.Context) error { return flush(ctx, env, nodes) },
	}, nil
}
