package nemesis

import (
	"context"
	"math/rand/v2"
	"time"
)

// Clock-skew scopes.
const (
	ClockServer = "server"
	ClockClient = "client"
)

// ClockSkew skews a clock for one to two leases, then restores it.
//
// server: the wall clock of one random server process jumps forward by two
// to four TTLs (more than a lease), by patching the process's vDSO; the
// machine's clock is not touched. Servers that time leases on the monotonic
// clock (etcd) do not notice; servers that expire keys by the wall clock
// (Redis) expire every lease at once.
//
// client: a random client's lease clock jumps ahead or behind by two to four
// TTLs. Behind, the client believes its lease has more time left than it
// has, and its lease check passes when it should not; ahead, it gives up
// leases it still holds.
type ClockSkew struct{ Scope string }

// Name is "clock-skew:SCOPE".
func (f ClockSkew) Name() string { return "clock-skew:" + f.Scope }

// Applies checks the scope's precondition (Precondition): :server needs a
// way to skew a server process's clock (Shape.ServerClock); a client's
// lease clock can always be skewed.
func (f ClockSkew) Applies(s Shape) error {
	if f.Scope == ClockServer && s.ServerClock != nil {
		return cannotApply("a server's clock cannot be skewed here: %w", s.ServerClock)
	}
	return nil
}

// Inject skews one clock.
func (f ClockSkew) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	offset := between(r, 2*env.TTL(), 4*env.TTL()).Round(time.Second)
	hold := between(r, env.Lease(), 2*env.Lease())
	var node string
	var skew func(context.Context, string, time.Duration) error
	switch f.Scope {
	case ClockServer:
		servers := env.Servers()
		node, skew = servers[r.IntN(len(servers))], env.SkewServerClock
	default:
		clients := env.Clients()
		node, skew = clients[r.IntN(len(clients))], env.SkewClientClock
		if r.IntN(2) == 0 {
			offset = -offset
		}
	}
	if err := skew(ctx, node, offset); err != nil {
		return nil, err
	}
	return &Injection{
		Nodes: []string{node}, Hold: hold,
		Params:  map[string]string{"offset": offset.String(), "hold": ms(hold)},
		Recover: func(ctx context.Context) error { return skew(ctx, node, 0) },
	}, nil
}
