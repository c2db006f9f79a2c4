package nemesis

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/platform/netdelay"
)

// Netem modes: what happens to the packets.
const (
	NetemDelay     = "delay"
	NetemLoss      = "loss"
	NetemDuplicate = "duplicate"
	NetemReorder   = "reorder"
	NetemCorrupt   = "corrupt"
	NetemRate      = "rate"
)

// Netem scopes: whose packets. The servers' is the default (no scope in
// the name).
const (
	NetemServers = "servers"
	NetemClient  = "client"
)

// netemMode is a mode of Netem: its policy (loss is an iptables rule
// instead), and its record: the policy as people read it, in the record's
// field of the mode (field), and what it counts at recovery (count).
type netemMode struct {
	mode   string
	policy netdelay.Policy
	text   string
	field  func(*NetemRecord) *string
	count  func(*NetemRecord, netdelay.Counts)
}

// netemModes are Netem's modes with their policies (loss is an iptables
// rule instead) and what they record.
var netemModes = []netemMode{
	{NetemDelay, netdelay.Policy{Delay: 200 * time.Millisecond, Jitter: 50 * time.Millisecond}, "200ms±50ms",
		func(r *NetemRecord) *string { return &r.Delay }, func(r *NetemRecord, c netdelay.Counts) { r.Packets, r.Held = &c.Packets, &c.Held }},
	{NetemLoss, netdelay.Policy{}, "30%",
		func(r *NetemRecord) *string { return &r.Loss }, func(r *NetemRecord, c netdelay.Counts) { r.Dropped = &c.Packets }},
	{NetemDuplicate, netdelay.Policy{Duplicate: 0.3}, "30%",
		func(r *NetemRecord) *string { return &r.Duplicate }, func(r *NetemRecord, c netdelay.Counts) { r.Packets, r.Duplicated = &c.Packets, &c.Duplicated }},
	{NetemReorder, netdelay.Policy{Reorder: 0.3, ReorderBy: 100 * time.Millisecond}, "30% held 100ms",
		func(r *NetemRecord) *string { return &r.Reorder }, func(r *NetemRecord, c netdelay.Counts) { r.Packets, r.Reordered = &c.Packets, &c.Reordered }},
	{NetemCorrupt, netdelay.Policy{Corrupt: 0.1}, "10%",
		func(r *NetemRecord) *string { return &r.Corrupt }, func(r *NetemRecord, c netdelay.Counts) { r.Packets, r.Corrupted = &c.Packets, &c.Corrupted }},
	{NetemRate, netdelay.Policy{Rate: 16 << 10}, "16KiB/s",
		func(r *NetemRecord) *string { return &r.Rate }, func(r *NetemRecord, c netdelay.Counts) { r.Packets, r.Held = &c.Packets, &c.Held }},
}

// NetemRecord is what netem records: its mode's policy, under the mode's
// name, and at recovery what its rules counted: packets they saw, and of
// those the ones held (delay, rate), duplicated, reordered or corrupted; for
// loss, the packets dropped.
type NetemRecord struct {
	Delay      string `json:"delay,omitempty"`
	Loss       string `json:"loss,omitempty"`
	Duplicate  string `json:"duplicate,omitempty"`
	Reorder    string `json:"reorder,omitempty"`
	Corrupt    string `json:"corrupt,omitempty"`
	Rate       string `json:"rate,omitempty"`
	Packets    *int64 `json:"packets,omitempty"`
	Held       *int64 `json:"held,omitempty"`
	Duplicated *int64 `json:"duplicated,omitempty"`
	Reordered  *int64 `json:"reordered,omitempty"`
	Corrupted  *int64 `json:"corrupted,omitempty"`
	Dropped    *int64 `json:"dropped,omitempty"`
}

// Netem degrades the network on what nodes send, held one to three leases
// (the client's 1.5-3), then removed:
//   - delay: every packet held 200 ms ± 50 ms (normally distributed, so
//     packets also reorder);
//   - loss: 30 % dropped;
//   - duplicate: 30 % sent twice;
//   - reorder: 30 % held 100 ms while the rest pass at once;
//   - corrupt: 10 % sent with one bit of their IP payload flipped (the
//     receiver drops them, as a noisy link's: TCP sends them again);
//   - rate: a 16 KiB/s link, in order.
//
// Scope: a random minority of servers (one of three, or the one) by default;
// client: the next lock holder's container, taken at its failpoint (as
// partition-client), whose requests, renewals and write are then degraded;
// resource: the resource's own containers.
//
// It is tc netem's effect without tc netem, which needs a kernel built with
// sch_netem (this project's CI machines have none): loss is an iptables
// statistic-match rule, every other mode an NFQUEUE rule in the node's
// network namespace whose packets the harness gives their verdicts
// (platform/netdelay). At recovery the record holds what was done: the
// packets seen and those held, reordered, duplicated or corrupted
// (dropped, for loss).
type Netem struct{ Mode, Scope string }

// Name is "netem:MODE", with ":SCOPE" for client and resource.
func (f Netem) Name() string {
	if f.Scope == NetemServers || f.Scope == "" {
		return "netem:" + f.Mode
	}
	return "netem:" + f.Mode + ":" + f.Scope
}

// parseNetem is netem's constructor: a mode (delay by default) and a scope.
func parseNetem(param string) (Fault, error) {
	mode, scope, _ := strings.Cut(param, ":")
	if mode == "" {
		mode = NetemDelay
	}
	if !slices.ContainsFunc(netemModes, func(m netemMode) bool { return m.mode == mode }) {
		return nil, fmt.Errorf("mode %q: valid: %s (then :client or :resource, as in netem:duplicate:client)", mode, strings.Join(netemScopes, ", "))
	}
	switch scope {
	case "", NetemServers:
		scope = NetemServers
	case NetemClient, ScopeResource:
	default:
		return nil, fmt.Errorf("netem:%s:%s: valid scopes: servers (the default), client, resource", mode, scope)
	}
	return Netem{Mode: mode, Scope: scope}, nil
}

// Applies: the resource scope needs a resource container.
func (f Netem) Applies(s Shape) error {
	switch f.Scope {
	case ScopeResource:
		return needContainer(s)
	case NetemClient:
		return nil
	}
	return ownServers(s)
}

// NetNodes are the nodes it may degrade (NetFault).
func (f Netem) NetNodes(c Cluster) []string {
	switch f.Scope {
	case NetemClient:
		return c.Clients()
	case ScopeResource:
		return c.Resources()
	}
	return c.Servers()
}

const lossRule = "OUTPUT -o eth0 -m statistic --mode random --probability 0.3 -j DROP"

// Inject degrades the network.
func (f Netem) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	var nodes []string
	var h *Holder
	hold := between(r, env.Lease(), 3*env.Lease())
	switch f.Scope {
	case NetemClient:
		next, err := env.NextHolder(ctx)
		if err != nil {
			return nil, err
		}
		h, nodes = &next, []string{next.Node}
		hold = between(r, 3*env.Lease()/2, 3*env.Lease())
	case ScopeResource:
		var err error
		if nodes, err = pickServers(ctx, env, r, ScopeResource); err != nil {
			return nil, err
		}
	default:
		var err error
		if nodes, err = pickServers(ctx, env, r, ScopeMinority); err != nil {
			if nodes, err = pickServers(ctx, env, r, ScopeOne); err != nil {
				return nil, err
			}
		}
	}
	var mode netemMode
	for _, m := range netemModes {
		if m.mode == f.Mode {
			mode = m
		}
	}
	policy := mode.policy
	rec := &NetemRecord{}
	if mode.field != nil {
		*mode.field(rec) = mode.text
	}
	var counts netdelay.Counts
	var on func(ctx context.Context, node string) error
	var off func(ctx context.Context, node string) error
	if f.Mode == NetemLoss {
		on = func(ctx context.Context, n string) error {
			_, err := env.NetExec(ctx, n, "sh", "-c", "iptables -w -A "+lossRule)
			return err
		}
		off = func(ctx context.Context, n string) error {
			d, err := dropped(ctx, env, n)
			if err == nil {
				counts.Packets += int64(d)
				_, err = env.NetExec(ctx, n, "sh", "-c", "iptables -w -D "+lossRule)
			}
			return err
		}
	} else {
		on = func(ctx context.Context, n string) error { return env.Shape(ctx, n, policy) }
		off = func(ctx context.Context, n string) error {
			c, err := env.Unshape(ctx, n)
			counts.Packets += c.Packets
			counts.Held += c.Held
			counts.Reordered += c.Reordered
			counts.Duplicated += c.Duplicated
			counts.Corrupted += c.Corrupted
			return err
		}
	}
	var done []string
	heal := func(ctx context.Context) error {
		var errs []error
		for _, n := range done {
			errs = append(errs, off(ctx, n))
		}
		done = nil
		return errors.Join(errs...)
	}
	for _, n := range nodes {
		if err := on(ctx, n); err != nil {
			if h != nil {
				h.Proceed()
			}
			return inPart(done, rec, heal, err)
		}
		done = append(done, n)
	}
	var aim *history.Aim
	if h != nil {
		aim = h.aim()
	}
	return &Injection{Nodes: nodes, Hold: hold, Holder: aim, Record: rec, Recover: func(ctx context.Context) error {
		err := heal(ctx)
		if mode.count != nil {
			mode.count(rec, counts)
		}
		return err
	}}, nil
}

func (Netem) holderVerb() string { return "caught by netem" }

// tellRecord says the effect netem applied and what it counted:
// "delay 200ms±50ms; 300 packets, 290 held".
func (Netem) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[NetemRecord](v)
	var out []string
	for _, m := range []struct{ name, v string }{
		{"delay", rec.Delay}, {"loss", rec.Loss}, {"duplicate", rec.Duplicate},
		{"reorder", rec.Reorder}, {"corrupt", rec.Corrupt}, {"rate", rec.Rate},
	} {
		if m.v != "" {
			out = append(out, m.name+" "+m.v)
		}
	}
	var counts []string
	if rec.Packets != nil {
		counts = append(counts, fmt.Sprintf("%d %s", *rec.Packets, plural(*rec.Packets, "packet")))
	}
	for _, c := range []struct {
		n    *int64
		word string
	}{{rec.Held, "held"}, {rec.Duplicated, "duplicated"}, {rec.Reordered, "reordered"}, {rec.Corrupted, "corrupted"}, {rec.Dropped, "dropped"}} {
		if c.n != nil {
			counts = append(counts, fmt.Sprintf("%d %s", *c.n, c.word))
		}
	}
	if len(counts) > 0 {
		out = append(out, strings.Join(counts, ", "))
	}
	return out, err
}
