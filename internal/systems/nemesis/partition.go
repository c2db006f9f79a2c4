package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Grudge describes a partition as Jepsen does: each node maps to the nodes
// whose packets it drops.
type Grudge map[string][]string

// String is "n1 drops n2,n3; n2 drops n1" in node order.
func (g Grudge) String() string {
	var parts []string
	for _, n := range g.nodes() {
		parts = append(parts, n+" drops "+strings.Join(g[n], ","))
	}
	return strings.Join(parts, "; ")
}

func (g Grudge) nodes() []string {
	var ns []string
	for n, drops := range g {
		if len(drops) > 0 {
			ns = append(ns, n)
		}
	}
	sort.Strings(ns)
	return ns
}

// Partition scopes.
const (
	PartOne            = "one"             // isolate one random server
	PartLeader         = "leader"          // isolate the leader
	PartHalves         = "halves"          // two halves that cannot talk
	PartMajoritiesRing = "majorities-ring" // each node sees a majority, no two the same
	PartBridge         = "bridge"          // two halves joined by one node that sees both
	PartResource       = "resource"        // cut the resource off from every server and client
)

// complete returns the symmetric grudge between two groups.
func complete(a, b []string) Grudge {
	g := Grudge{}
	for _, x := range a {
		g[x] = append(g[x], b...)
	}
	for _, y := range b {
		g[y] = append(g[y], a...)
	}
	return g
}

// Isolate cuts node off from every other node.
func Isolate(node string, all []string) Grudge {
	others := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == node })
	return complete([]string{node}, others)
}

// Halves splits the nodes (in the order given) into a first half of n/2
// and the rest.
func Halves(all []string) Grudge {
	return complete(all[:len(all)/2], all[len(all)/2:])
}

// Bridge splits the nodes into two halves joined by the middle node, which
// both halves see and which sees both.
func Bridge(all []string) Grudge {
	n := len(all)
	bridge := (n - 1) / 2
	return complete(all[:bridge], all[bridge+1:])
}

// MajoritiesRing places the nodes on a ring; each sees itself and the next
// n/2 nodes (a majority) and drops the rest, so that every node sees a
// majority but no two nodes see the same one.
func MajoritiesRing(all []string) Grudge {
	n := len(all)
	g := Grudge{}
	for i, x := range all {
		for j := n/2 + 1; j < n; j++ {
			g[x] = append(g[x], all[(i+j)%n])
		}
	}
	return g
}

// Partition cuts the servers apart as a grudge says, with iptables rules in
// each server's network namespace (from its network helper, never on the
// host's firewall), for one to three leases, then flushes the rules.
type Partition struct{ Scope string }

// Name is "partition:SCOPE".
func (f Partition) Name() string { return "partition:" + f.Scope }

// NetNodes are the servers, or the resource's nodes for :resource
// (NetFault).
func (f Partition) NetNodes(c Cluster) []string {
	if f.Scope == PartResource {
		return c.Resources()
	}
	return c.Servers()
}

// Applies checks the scope's precondition (Precondition): :resource needs
// a resource container; a grudge between servers needs two servers, a
// majorities ring and a bridge three.
func (f Partition) Applies(s Shape) error {
	scope, tier := splitTier(f.Scope)
	if scope != PartResource {
		if err := ownServers(s); err != nil {
			return err
		}
	}
	ts, err := inTier(s, scope, tier)
	if err != nil {
		return err
	}
	switch scope {
	case PartResource:
		return needContainer(s)
	case PartMajoritiesRing:
		return needServers(ts, 3, "a majorities ring")
	case PartBridge:
		return needServers(ts, 3, "a bridge")
	case PartOne, PartLeader:
		// One server (of the tier) cut off from every other.
		return needServers(s, 2, "a partition between servers")
	}
	return needServers(ts, 2, "a partition between servers")
}

// grudge computes the scope's grudge, and for partition:leader the leader
// it cuts off.
func (f Partition) grudge(ctx context.Context, env Env, r *rand.Rand) (Grudge, string, error) {
	scope, tier := splitTier(f.Scope)
	// With a tier, one and leader cut a server of the tier off from every
	// other server; the other grudges are among the tier's servers.
	every := slices.Clone(env.Servers())
	all := tierServers(env, tier)
	if len(all) < 2 && !(tier != "" && (scope == PartOne || scope == PartLeader) && len(all) == 1) {
		return nil, "", fmt.Errorf("partition: %d server cannot be partitioned", len(all))
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	switch scope {
	case PartOne:
		return Isolate(all[0], every), "", nil
	case PartLeader:
		l, err := env.Leader(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("partition: no leader: %w", err)
		}
		if !slices.Contains(all, l) {
			return nil, "", fmt.Errorf("partition: the leader %s is not of tier %s", l, tier)
		}
		return Isolate(l, every), l, nil
	case PartHalves:
		return Halves(all), "", nil
	case PartMajoritiesRing:
		if len(all) < 3 {
			return nil, "", fmt.Errorf("partition: a majorities ring needs 3 servers")
		}
		return MajoritiesRing(all), "", nil
	case PartBridge:
		if len(all) < 3 {
			return nil, "", fmt.Errorf("partition: a bridge needs 3 servers")
		}
		return Bridge(all), "", nil
	}
	return nil, "", fmt.Errorf("partition: unknown scope %q", f.Scope)
}

// Inject applies the scope's grudge.
func (f Partition) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	if f.Scope == PartResource {
		return f.cutResource(ctx, env, r)
	}
	g, leader, err := f.grudge(ctx, env, r)
	if err != nil {
		return nil, err
	}
	hold := between(r, env.Lease(), 3*env.Lease())
	nodes := g.nodes()
	rec := &PartitionRecord{Grudge: g.String()}
	heal := func(ctx context.Context) error { return rec.countThenFlush(ctx, env, nodes) }
	var cut []string // heal flushes every node, the one that failed too
	for _, n := range nodes {
		if err := drop(ctx, env, n, g[n]); err != nil {
			return inPart(cut, rec, heal, err)
		}
		cut = append(cut, n)
	}
	return &Injection{
		Nodes: nodes, Hold: hold, Leader: leader,
		Record:  rec,
		Recover: heal,
	}, nil
}

// PartitionRecord is what a partition records: who drops whom, or, when
// it cuts the resource off, from which nodes; and at recovery how many
// packets its rules stopped, over every node, or why they could not be
// counted.
type PartitionRecord struct {
	Grudge     string   `json:"grudge,omitempty"`
	CutOffFrom []string `json:"cut_off_from,omitempty"`
	Dropped    *int     `json:"dropped,omitempty"`
	Uncounted  string   `json:"uncounted,omitempty"`
}

// countThenFlush counts the packets the nodes' rules stopped, then removes
// the rules.
func (rec *PartitionRecord) countThenFlush(ctx context.Context, env Env, nodes []string) error {
	total := 0
	var errs []error
	for _, n := range nodes {
		c, err := dropped(ctx, env, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
		total += c
	}
	if err := errors.Join(errs...); err != nil {
		rec.Dropped, rec.Uncounted = nil, err.Error()
	} else {
		rec.Dropped, rec.Uncounted = &total, ""
	}
	return flush(ctx, env, nodes)
}

// cutResource cuts the resource's containers off from every server and
// client, with rules in the resource's network namespaces: requests in flight
// wait, and land (or time out) when the partition heals.
func (f Partition) cutResource(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	rs := env.Resources()
	if len(rs) == 0 {
		return nil, fmt.Errorf("partition: the run's resource has no container of its own (--resource postgres or proxy)")
	}
	peers := append(slices.Clone(env.Servers()), env.Clients()...)
	hold := between(r, env.Lease(), 3*env.Lease())
	rec := &PartitionRecord{CutOffFrom: slices.Clone(peers)}
	heal := func(ctx context.Context) error { return rec.countThenFlush(ctx, env, rs) }
	var cut []string // heal flushes every resource container
	for _, n := range rs {
		if err := dropBoth(ctx, env, n, peers); err != nil {
			return inPart(cut, rec, heal, err)
		}
		cut = append(cut, n)
	}
	return &Injection{
		Nodes: slices.Clone(rs), Hold: hold,
		Record:  rec,
		Recover: heal,
	}, nil
}

// drop makes node drop every packet from the peers (and, for clients,
// every packet to them: see dropBoth).
func drop(ctx context.Context, env Env, node string, peers []string) error {
	var rules []string
	for _, p := range peers {
		rules = append(rules, "iptables -w -A INPUT -s "+env.Addr(p)+" -j DROP")
	}
	_, err := env.NetExec(ctx, node, "sh", "-c", strings.Join(rules, " && "))
	return err
}

// dropBoth makes node drop every packet from and to the peers.
func dropBoth(ctx context.Context, env Env, node string, peers []string) error {
	var rules []string
	for _, p := range peers {
		rules = append(rules, "iptables -w -A INPUT -s "+env.Addr(p)+" -j DROP",
			"iptables -w -A OUTPUT -d "+env.Addr(p)+" -j DROP")
	}
	_, err := env.NetExec(ctx, node, "sh", "-c", strings.Join(rules, " && "))
	return err
}

// flush removes every rule fencecheck added in the nodes' namespaces.
func flush(ctx context.Context, env Env, nodes []string) error {
	var errs []error
	for _, n := range nodes {
		if _, err := env.NetExec(ctx, n, "sh", "-c", "iptables -w -F INPUT && iptables -w -F OUTPUT"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// tellRecord says the grudge (who drops whom), who the resource was cut
// off from, and the packets the rules dropped.
func (Partition) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[PartitionRecord](v)
	var out []string
	if v.Leader != "" {
		out = append(out, "the leader "+v.Leader+" cut off")
	}
	if rec.Grudge != "" {
		out = append(out, rec.Grudge)
	}
	if len(rec.CutOffFrom) > 0 {
		out = append(out, "cut off from "+strings.Join(rec.CutOffFrom, ", "))
	}
	return append(out, packetWords(rec.Dropped, rec.Uncounted)...), err
}
