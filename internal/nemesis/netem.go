package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Netem scopes.
const (
	NetemDelay = "delay"
	NetemLoss  = "loss"
)

// Netem degrades the network of a random minority of servers (one server of
// three), on what they send: delay holds every packet 200 ms ± 50 ms
// (normally distributed, so packets also reorder); loss drops 30% of them.
// Held one to three leases, then removed.
//
// It is tc netem's effect without tc netem, which needs a kernel built with
// sch_netem (this project's CI machines have none): delay is an NFQUEUE rule
// in the container's network namespace whose packets the harness releases late
// (harness/netdelay), loss an iptables statistic-match rule.
type Netem struct{ Scope string }

// Name is "netem:SCOPE".
func (f Netem) Name() string { return "netem:" + f.Scope }

// NetNodes are the servers (NetFault).
func (Netem) NetNodes(c Cluster) []string { return c.Servers() }

const lossRule = "OUTPUT -o eth0 -m statistic --mode random --probability 0.3 -j DROP"

// Inject degrades the network.
func (f Netem) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	nodes, err := pickServers(ctx, env, r, ScopeMinority)
	if err != nil {
		if nodes, err = pickServers(ctx, env, r, ScopeOne); err != nil {
			return nil, err
		}
	}
	hold := between(r, env.Lease(), 3*env.Lease())
	params := map[string]string{"hold": ms(hold)}
	var on, off func(ctx context.Context, node string) error
	switch f.Scope {
	case NetemLoss:
		params["loss"] = "30%"
		on = func(ctx context.Context, n string) error {
			_, err := env.NetExec(ctx, n, "sh", "-c", "iptables -w -A "+lossRule)
			return err
		}
		off = func(ctx context.Context, n string) error {
			_, err := env.NetExec(ctx, n, "sh", "-c", "iptables -w -D "+lossRule)
			return err
		}
	default:
		params["delay"] = "200ms±50ms"
		on = func(ctx context.Context, n string) error {
			return env.Delay(ctx, n, 200*time.Millisecond, 50*time.Millisecond)
		}
		off = env.Undelay
	}
	var done []string
	heal := func(ctx context.Context) error {
		var errs []error
		for _, n := range done {
			errs = append(errs, off(ctx, n))
		}
		return errors.Join(errs...)
	}
	for _, n := range nodes {
		if err := on(ctx, n); err != nil {
			return nil, errors.Join(err, heal(context.Background()))
		}
		done = append(done, n)
	}
	return &Injection{Nodes: nodes, Hold: hold, Params: params, Recover: heal}, nil
}
