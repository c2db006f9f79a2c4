// Package fencecheck is fencecheck's Go API, for a team whose lock recipe
// is Go: Main runs fencecheck's whole command line with the team's own
// recipes added as targets, in a binary of their module, which is also the
// binary fencecheck puts in its worker containers. So
//
//	CGO_ENABLED=0 go run ./mytest run --target mylock --fencing none
//
// runs the team's recipe under fencecheck's faults, against the servers of
// a built-in target, with fencecheck's checkers and reports. The binary is
// copied into Debian containers: build it static (CGO_ENABLED=0). Token
// fencing at the lock-store uses the recipe's Token; cas fencing needs the
// servers' own lease and does not work with a recipe.
//
//	func main() {
//		fencecheck.Main(fencecheck.Recipe{Name: "mylock", Servers: "redis", Dial: dialMyLock})
//	}
//
// A recipe implements targets.Client (Acquire, returning a targets.Lease
// with its fencing token and the time left on it). The resource stays
// fencecheck's: the default lock-store keeps the protected list in the
// servers' own store, fenced with the recipe's token. For a lock client in
// another language, see the client protocol (docs/client-protocol.md).
// Everything else of fencecheck is internal.
package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fencecheck/fencecheck/internal/cli"
	"github.com/fencecheck/fencecheck/targets"
)

// Recipe is a lock recipe of the user's.
type Recipe struct {
	// Name is the recipe's --target name ("mylock"); it must differ from
	// the built-in targets'.
	Name string
	// Servers names the built-in target whose servers the recipe runs
	// against (etcd, consul, redis, zookeeper, ...): their containers,
	// readiness, leader, the faults' aim, their store (the lock-store
	// resource) and their defaults (nodes, TTL).
	Servers string
	// Dial returns one worker's client of the servers: cfg carries their
	// endpoints, the lease TTL, the run's key prefix (keep the lock's keys
	// under it, apart from PREFIX/value, /fence, /rev and /lock, which are
	// fencecheck's) and the RPC timeout. A call on the client is one
	// attempt: no retries.
	Dial func(ctx context.Context, cfg targets.ClientConfig) (targets.Client, error)
}

// Main runs fencecheck's command line (os.Args) with recipes added to its
// targets, and exits with its exit code.
func Main(recipes ...Recipe) {
	os.Exit(Run(os.Args[1:], recipes...))
}

// Run runs fencecheck's command line with args and recipes added to its
// targets, and returns its exit code (0 valid, 1 invalid, 2 unknown, 254
// bad arguments, 255 harness failure).
func Run(args []string, recipes ...Recipe) int {
	ts := make([]targets.Target, 0, len(recipes))
	seen := map[string]bool{}
	for _, r := range recipes {
		t, err := r.target()
		if err == nil && seen[r.Name] {
			err = fmt.Errorf("recipe %q: two recipes have this name", r.Name)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "fencecheck: %v\n", err)
			return 254
		}
		seen[r.Name] = true
		ts = append(ts, t)
	}
	return cli.Run(args, os.Stdout, os.Stderr, ts...)
}

// target is the recipe as a target: the servers' target with the recipe's
// name and client.
func (r Recipe) target() (targets.Target, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("recipe %q: %s", r.Name, fmt.Sprintf(format, args...))
	}
	if r.Name == "" {
		return nil, bad("no name")
	}
	if r.Dial == nil {
		return nil, bad("no Dial")
	}
	if _, err := cli.BuiltinTarget(r.Name); err == nil {
		return nil, bad("the name of a built-in target")
	}
	base, err := cli.BuiltinTarget(r.Servers)
	if err != nil {
		return nil, bad("servers: %v", err)
	}
	if _, ok := base.(targets.Secured); ok {
		// Its servers' credentials are made per run for its own client.
		return nil, bad("servers: %s runs with credentials made for its own client; a recipe cannot use its servers yet", r.Servers)
	}
	return recipeTarget{Target: base, r: r}, nil
}

// recipeTarget is a built-in target whose client is the recipe's. Its
// optional behaviour (longest lease, default nodes, profile, version) is the
// servers'.
type recipeTarget struct {
	targets.Target
	r Recipe
}

func (t recipeTarget) Name() string { return t.r.Name }

// Dial dials the recipe's client and the servers' own, whose store (when
// it has one) serves the lock-store resource.
func (t recipeTarget) Dial(ctx context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Target.Validate(cfg); err != nil {
		return nil, err
	}
	c, err := t.r.Dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.r.Name, err)
	}
	own, err := t.Target.Dial(ctx, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	rc := &recipeClient{Client: c, own: own}
	if s, ok := own.(targets.Store); ok {
		return storeClient{rc, s}, nil
	}
	return rc, nil
}

func (t recipeTarget) MaxLease(cfg targets.ClientConfig) time.Duration {
	return targets.MaxLease(t.Target, cfg)
}
func (t recipeTarget) DefaultNodes() int        { return targets.DefaultNodes(t.Target) }
func (t recipeTarget) Profile() targets.Profile { return targets.ProfileOf(t.Target) }

// Version is the servers' version, when their target knows it.
func (t recipeTarget) Version() string {
	if v, ok := t.Target.(interface{ Version() string }); ok {
		return v.Version()
	}
	return ""
}

// recipeClient is the recipe's client with the servers' own beside it.
type recipeClient struct {
	targets.Client
	own targets.Client
}

func (c *recipeClient) Close() error { return errors.Join(c.Client.Close(), c.own.Close()) }

// storeClient is a recipeClient whose servers keep the lock-store.
type storeClient struct {
	*recipeClient
	targets.Store
}
