package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Partition-client modes: which of the holder's packets are lost.
const (
	CutBoth     = "both"     // every packet, both ways, silently (the default)
	CutRequests = "requests" // what the holder sends: nothing reaches a server
	CutReplies  = "replies"  // what it receives: its requests land, no answer comes
	CutReset    = "reset"    // every TCP packet answered by a reset, both ways
)

// PartitionClient cuts the lock holder off from every server, inside its
// critical section, for 1.5 to 3 leases, then heals. It takes the next
// client that reaches its failpoint and lets it proceed once the cut is in
// place, so its write leaves into the cut network. Its lease expires
// meanwhile (its keepalives no longer arrive), another client gets the
// lock, and when the holder's connection heals its late write is a stale
// one. The harness's control connection to the client is not cut.
//
// The mode says which packets are lost, by iptables rules in the holder's
// network namespace. both: every packet either way, dropped silently (no
// RST: a connection is half-open, and the client hangs until its own
// timeout). requests: what the holder sends (nothing it sends arrives, what
// a server sends still does). replies: what it receives (its requests land
// and take effect, the answers never come: it believes a renewal or a write
// failed that succeeded). reset: every TCP packet either way is refused
// with a reset, so the holder's connections fail at once.
//
// With the resource scope (partition-client:MODE:resource) the holder is
// cut off from the resource's containers instead (PostgreSQL, the fencing
// proxy), not from the lock service: it keeps its lock, and its write is
// what is lost, delayed or landed unanswered.
//
// At recovery the record holds how many packets the rules stopped
// (dropped), from their counters, which shows the cut took.
type PartitionClient struct {
	Mode string
	// Resource cuts the holder off from the resource's containers.
	Resource bool
}

var cutModes = []string{CutBoth, CutRequests, CutReplies, CutReset}

// Name is "partition-client", or "partition-client:MODE" for a one-way or
// resetting cut.
func (f PartitionClient) Name() string {
	name := "partition-client"
	if f.Mode != "" && f.Mode != CutBoth || f.Resource {
		name += ":" + cmp.Or(f.Mode, CutBoth)
	}
	if f.Resource {
		name += ":" + ScopeResource
	}
	return name
}

// parsePartitionClient is partition-client's constructor: a mode, then
// optionally :resource.
func parsePartitionClient(param string) (Fault, error) {
	mode, scope, _ := strings.Cut(param, ":")
	if scope != "" && scope != ScopeResource {
		return nil, fmt.Errorf("partition-client:%s: the scope after the mode is resource (the holder cut off from the resource's containers), or none (from the servers)", param)
	}
	f := PartitionClient{Resource: scope == ScopeResource}
	if mode == "" || mode == CutBoth {
		return f, nil
	}
	if !slices.Contains(cutModes, mode) {
		return nil, fmt.Errorf("scope %q: valid: %s (then :resource)", mode, strings.Join(cutModes, ", "))
	}
	f.Mode = mode
	return f, nil
}

// Applies: the resource scope needs a resource container.
func (f PartitionClient) Applies(s Shape) error {
	if f.Resource {
		return needContainer(s)
	}
	return nil
}

// NetNodes are the clients: any may be the holder it cuts off (NetFault).
func (PartitionClient) NetNodes(c Cluster) []string { return c.Clients() }

// rules are the iptables rules that cut node's traffic with a peer.
func (f PartitionClient) rules(addr string) []string {
	in := "iptables -w -A INPUT -s " + addr
	out := "iptables -w -A OUTPUT -d " + addr
	switch f.Mode {
	case CutRequests:
		return []string{out + " -j DROP"}
	case CutReplies:
		return []string{in + " -j DROP"}
	case CutReset:
		// The reset an OUTPUT rule makes comes in as from the peer: the
		// INPUT rule lets resets through, or the socket never sees it.
		const rst = " -j REJECT --reject-with tcp-reset"
		return []string{in + " -p tcp ! --tcp-flags RST RST" + rst, out + " -p tcp" + rst}
	}
	return []string{in + " -j DROP", out + " -j DROP"}
}

// Inject waits for the next holder and cuts it off.
func (f PartitionClient) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	h, err := env.NextHolder(ctx)
	if err != nil {
		return nil, err
	}
	hold := between(r, 3*env.Lease()/2, 3*env.Lease())
	nodes := []string{h.Node}
	peers := env.Servers()
	if f.Resource {
		peers = env.Resources()
	}
	if len(peers) == 0 {
		h.Proceed()
		return nil, errors.New("partition-client: no resource container to cut the holder off from")
	}
	var rules []string
	for _, s := range peers {
		rules = append(rules, f.rules(env.Addr(s))...)
	}
	if _, err := env.NetExec(ctx, h.Node, "sh", "-c", strings.Join(rules, " && ")); err != nil {
		// Some of the rules may be in place: the node is cut in part.
		h.Proceed()
		return inPart(nodes, nil, func(ctx context.Context) error { return flush(ctx, env, nodes) }, err)
	}
	rec := &PartitionClientRecord{}
	return &Injection{
		Nodes: nodes, Hold: hold, Holder: h.aim(), Record: rec,
		Recover: func(ctx context.Context) error {
			if n, err := dropped(ctx, env, h.Node); err != nil {
				rec.Uncounted = err.Error()
			} else {
				rec.Dropped = &n
			}
			return flush(ctx, env, nodes)
		},
	}, nil
}

// PartitionClientRecord is what partition-client records at recovery: how
// many packets its rules stopped, or why they could not be counted.
type PartitionClientRecord struct {
	Dropped   *int   `json:"dropped,omitempty"`
	Uncounted string `json:"uncounted,omitempty"`
}

// dropped is how many packets the rules in node's INPUT and OUTPUT chains
// (fencecheck's alone: flush empties both) matched.
func dropped(ctx context.Context, env Env, node string) (int, error) {
	out, err := env.NetExec(ctx, node, "sh", "-c", "iptables -w -L INPUT -v -n -x && iptables -w -L OUTPUT -v -n -x")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || (f[2] != "DROP" && f[2] != "REJECT") {
			continue
		}
		v, err := strconv.Atoi(f[0])
		if err != nil {
			return 0, fmt.Errorf("iptables counters: %q", l)
		}
		n += v
	}
	return n, nil
}

func (PartitionClient) holderVerb() string { return "cut off" }

// tellRecord says the packets the holder's cut dropped.
func (PartitionClient) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[PartitionClientRecord](v)
	return packetWords(rec.Dropped, rec.Uncounted), err
}
