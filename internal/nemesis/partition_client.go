package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
)

// PartitionClient cuts the lock holder off from every server, inside its
// critical section, for 1.5 to 3 leases, then heals. It takes the next
// client that reaches its failpoint and lets it proceed once the cut is in
// place, so its write leaves into the cut network. Its lease expires
// meanwhile (its keepalives no longer arrive), another client gets the
// lock, and when the holder's connection heals its late write is a stale
// one. The harness's control connection to the client is not cut.
type PartitionClient struct{}

// Name is "partition-client".
func (PartitionClient) Name() string { return "partition-client" }

// NetNodes are the clients: any may be the holder it cuts off (NetFault).
func (PartitionClient) NetNodes(c Cluster) []string { return c.Clients() }

// Inject waits for the next holder and cuts it off.
func (PartitionClient) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	h, err := env.NextHolder(ctx)
	if err != nil {
		return nil, err
	}
	hold := between(r, 3*env.Lease()/2, 3*env.Lease())
	nodes := []string{h.Node}
	if err := dropBoth(ctx, env, h.Node, env.Servers()); err != nil {
		h.Proceed()
		return nil, errors.Join(err, flush(context.Background(), env, nodes))
	}
	params := map[string]string{"process": h.Process.String(), "token": strconv.FormatInt(h.Token, 10), "hold": ms(hold)}
	h.hit(params)
	return &Injection{
		Nodes: nodes, Hold: hold, Params: params,
		Recover: func(ctx context.Context) error { return flush(ctx, env, nodes) },
	}, nil
}
