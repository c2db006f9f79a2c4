package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
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

// pickServers returns the servers a scope names, in a seeded random order.
func pickServers(ctx context.Context, env Env, r *rand.Rand, scope string) ([]string, error) {
	all := slices.Clone(env.Servers())
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
	switch scope {
	case ScopeMinority:
		return needServers(s, 3, "a minority of servers")
	case ScopeResource:
		return needContainer(s)
	}
	return nil
}

// scoped is the constructor of a fault that takes one of the given scopes
// (the first is the default).
func scoped(scopes []string, make func(scope string) Fault) func(string) (Fault, error) {
	return func(scope string) (Fault, error) {
		if scope == "" {
			scope = scopes[0]
		}
		if !slices.Contains(scopes, scope) {
			return nil, fmt.Errorf("scope %q: valid: %s", scope, strings.Join(scopes, ", "))
		}
		return make(scope), nil
	}
}

// between returns a seeded random duration in [lo, hi].
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Float64()*float64(hi-lo))
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func itoa(i int) string { return strconv.Itoa(i) }
