package nemesis

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Server scopes: which servers a fault hits.
const (
	ScopeOne      = "one"      // one random server
	ScopeLeader   = "leader"   // the leader
	ScopeMinority = "minority" // a random minority ((n-1)/2 servers)
	ScopeMajority = "majority" // a random majority (n/2+1 servers)
	ScopeAll      = "all"      // every server
	// ScopeResource: the resource's own container (PostgreSQL, the
	// fencing proxy), not the lock service's.
	ScopeResource = "resource"
)

// A server scope may name a tier of a target with servers of more than one
// kind (targets.Tiered): SCOPE@TIER picks among that tier's servers alone.
// pause-server:one@etcd pauses one etcd node under Kubernetes' apiservers;
// kill:leader@etcd kills the etcd leader; partition:one@apiserver cuts one
// apiserver off from every other server while clients still reach it.

// splitTier splits a scope into its base scope and the tier it picks from
// ("" for every server).
func splitTier(scope string) (base, tier string) {
	base, tier, _ = strings.Cut(scope, "@")
	return base, tier
}

// tierServers are env's servers of tier ("" every server).
func tierServers(env Cluster, tier string) []string {
	var out []string
	for _, n := range env.Servers() {
		if tier == "" || env.Tier(n) == tier {
			out = append(out, n)
		}
	}
	return out
}

// inTier is s as a fault of scope base scoped to tier sees it (its servers
// those of the tier), or why the run has no such tier, or why its leader is
// not in it.
func inTier(s Shape, base, tier string) (Shape, error) {
	if tier == "" {
		return s, nil
	}
	if base == ScopeLeader && s.LeaderTier != "" && tier != s.LeaderTier {
		return s, cannotApply("leader@%s: the leader of target %s is a server of tier %s", tier, s.Target, s.LeaderTier)
	}
	n, ok := s.Tiers[tier]
	if !ok {
		if len(s.Tiers) == 0 {
			return s, cannotApply("@%s: target %s has servers of one kind, no tiers", tier, s.Target)
		}
		return s, cannotApply("@%s: target %s has no tier %q (its tiers: %s)", tier, s.Target, tier, strings.Join(slices.Sorted(maps.Keys(s.Tiers)), ", "))
	}
	s.Servers = n
	return s, nil
}

// pickServers returns the servers a scope names, in a seeded random order.
func pickServers(ctx context.Context, env Env, r *rand.Rand, scope string) ([]string, error) {
	scope, tier := splitTier(scope)
	all := tierServers(env, tier)
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	n := len(all)
	switch scope {
	case ScopeOne:
		return all[:1], nil
	case ScopeLeader:
		l, err := env.Leader(ctx)
		if err != nil {
			return nil, fmt.Errorf("no leader to hit: %w", err)
		}
		if !slices.Contains(all, l) {
			return nil, fmt.Errorf("the leader %s is not of tier %s", l, tier)
		}
		return []string{l}, nil
	case ScopeMinority:
		if (n-1)/2 == 0 {
			return nil, fmt.Errorf("%d servers have no minority", n)
		}
		return all[:(n-1)/2], nil
	case ScopeMajority:
		return all[:n/2+1], nil
	case ScopeAll:
		return all, nil
	case ScopeResource:
		rs := env.Resources()
		if len(rs) == 0 {
			return nil, fmt.Errorf("the run's resource has no container of its own (--resource postgres or proxy)")
		}
		return slices.Clone(rs), nil
	}
	return nil, fmt.Errorf("unknown scope %q", scope)
}

// scopeApplies is the precondition of a server scope (pickServers): a
// minority needs three servers, :resource a resource container.
func scopeApplies(scope string, s Shape) error {
	scope, tier := splitTier(scope)
	if scope != ScopeResource {
		if err := ownServers(s); err != nil {
			return err
		}
	}
	s, err := inTier(s, scope, tier)
	if err != nil {
		return err
	}
	switch scope {
	case ScopeMinority:
		return needServers(s, 3, "a minority of servers")
	case ScopeResource:
		return needContainer(s)
	}
	return nil
}

// tiered is the constructor of a fault that takes one of the given scopes
// (the first is the default), whose server scopes may name a tier
// (SCOPE@TIER): pause-server, kill, partition.
func tiered(scopes []string, make func(scope string) Fault) func(string) (Fault, error) {
	return scopedIn(scopes, true, make)
}

func scopedIn(scopes []string, tiers bool, make func(scope string) Fault) func(string) (Fault, error) {
	return func(scope string) (Fault, error) {
		if scope == "" {
			scope = scopes[0]
		}
		base, tier := splitTier(scope)
		if !tiers {
			base, tier = scope, ""
		}
		if !slices.Contains(scopes, base) {
			valid := strings.Join(scopes, ", ")
			if tiers {
				valid += " (a server scope may name a tier: one@etcd)"
			}
			return nil, fmt.Errorf("scope %q: valid: %s", base, valid)
		}
		if tier != "" && (base == ScopeResource || base == PartResource) {
			return nil, fmt.Errorf("scope %q: the resource has no tiers", scope)
		}
		return make(scope), nil
	}
}

// checkServerScope checks a server scope (SCOPE or SCOPE@TIER) of a fault
// that parses its own parameters; the error lists the valid scopes after
// others (the fault's own, "holder, "), then what may follow (then).
func checkServerScope(scope, others, then string) error {
	base, tier := splitTier(scope)
	if !slices.Contains(serverScopes, base) {
		return fmt.Errorf("scope %q: valid: %s%s (%s)", scope, others, strings.Join(serverScopes, ", "), then)
	}
	if tier != "" && base == ScopeResource {
		return fmt.Errorf("scope %q: the resource has no tiers", scope)
	}
	return nil
}

// between returns a seeded random duration in [lo, hi].
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Float64()*float64(hi-lo))
}
