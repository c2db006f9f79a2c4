// Package consul is the Consul target: a cluster of Consul servers (1.14.x,
// the last MPL-2.0 line), the official api package's Lock as the lock
// recipe, and a key of the same cluster's KV store as the protected resource.
//
// Lease: a Consul session with a TTL of --ttl (at least 10 s, Consul's
// session_ttl_min), no health checks (only the TTL ends it), behavior
// "release", and a lock-delay of --lock-delay (Consul's default 15 s when
// unset; 0 is honoured). The client renews the session every TTL/2. The
// leader invalidates a session 2 TTL after the last renewal it received
// (Consul's grace multiplier), releases its locks, and then refuses to grant
// them again for the lock-delay; a waiter of the api's Lock that was refused
// during a lock-delay tries again 5 s later. MaxLease is 2 TTL + 1 s, plus
// lock-delay + 5 s when there is a lock-delay. The client's own estimate
// (Lease.Remaining) counts a single TTL from its last successful renewal, as
// a careful client does.
//
// Fencing token: the lock key's ModifyIndex right after the grant. Consul's
// KV indexes are Raft log indexes, which the whole cluster shares and which
// only grow, across leader changes too; a grant is a Raft entry that sets the
// key's Session and ModifyIndex, and nothing else writes the key while the
// session holds it, so every later grant has a larger ModifyIndex. (The
// key's LockIndex counts grants but restarts when the key is deleted, and
// its CreateIndex does not change between grants.)
//
// Fencing modes:
//   - none: a plain KV put of the value;
//   - token: PREFIX/fence holds the highest accepted token. The writer reads
//     it (value and ModifyIndex), refuses if it is greater than its token,
//     else sends a transaction [check-index fence = the index it read; set
//     fence = its token; set value]. Consul has no compare of values in a
//     transaction; check-index makes the read and the write one atomic step,
//     since the transaction applies only if nobody wrote the fence since. A
//     transaction that fails that check is rejected (the fence moved under
//     the writer): it certainly did not apply;
//   - cas: a transaction [check-session lock key = our session; set value]:
//     Consul's own concurrency control applies the write only while the lock
//     key is still held by the writer's session.
//
// No hidden retries: the api package retries nothing but a lock monitor's
// reads (MonitorRetries, left at 0), and the HTTP transport keeps no idle
// connections, so net/http never replays a request on a reused connection.
// Every call is one attempt.
package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/fencecheck/fencecheck/targets"
)

const (
	httpPort = 8500

	// MinTTL is Consul's shortest session TTL (session_ttl_min).
	MinTTL = 10 * time.Second
	// MaxTTL is Consul's longest session TTL.
	MaxTTL = 24 * time.Hour
	// DefaultLockDelay is the lock-delay of a session that names none.
	DefaultLockDelay = 15 * time.Second
	// MaxLockDelay is Consul's cap on a session's lock-delay.
	MaxLockDelay = 60 * time.Second
	// ttlMultiplier: the leader invalidates a session this many TTLs after
	// the last renewal it received.
	ttlMultiplier = 2
	// timerSlack covers what lies between the leader's session timer and a
	// waiter's grant: the invalidation's Raft commit, the waiter's wake-up
	// from its blocking query, its acquire's Raft commit.
	timerSlack = time.Second
	// lockWait bounds each blocking read of a waiting Lock, so that a
	// cancelled Acquire returns within about a second.
	lockWait = time.Second

	// Read modes of the KV.
	ModeDefault    = "default"
	ModeConsistent = "consistent"
	ModeStale      = "stale"
)

// Target is Consul.
type Target struct {
	// Release is the server version the cluster runs, a name of the consul
	// image's version table (kinds.Versions); "" is the default, the
	// table's first. Every version runs with the same command line and the
	// same client library (github.com/hashicorp/consul/api of fencecheck's
	// go.mod).
	Release string
	// Creds, set by Attach, are what Ready, Leader and ServerVersion
	// present to servers fencecheck did not start (--endpoints): an ACL
	// token (Password), TLS; nil for fencecheck's own.
	Creds *targets.Credentials
}

// Name is "consul".
func (Target) Name() string { return "consul" }

// ReadModes are the KV's read modes: "default" (served by the leader without
// a quorum check), "consistent" (the leader confirms its leadership with a
// quorum first), "stale" (any server, from its own state).
func (Target) ReadModes() []string { return []string{ModeDefault, ModeConsistent, ModeStale} }

// LinearizableReadModes: only consistent reads are promised linearizable
// (Consul's documentation: default reads may be stale for a moment after a
// leader change).
func (Target) LinearizableReadModes() []string { return []string{ModeConsistent} }

// Nodes returns an n-server cluster, n in 1, 3, 5 (or any n from 1 to 7).
func (Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n < 1 || n > 7 {
		return nil, fmt.Errorf("%w: consul runs 1 to 7 servers (usually 1, 3 or 5), not %d", targets.ErrBadConfig, n)
	}
	specs := make([]targets.NodeSpec, n)
	for i := range specs {
		name := fmt.Sprintf("n%d", i+1)
		cmd := []string{"/usr/local/bin/consul", "agent", "-server",
			"-bootstrap-expect", strconv.Itoa(n),
			"-node", name,
			"-datacenter", "dc1",
			"-data-dir", "/var/lib/consul",
			"-client", "0.0.0.0",
			"-http-port", strconv.Itoa(httpPort),
			"-dns-port", "-1",
			"-retry-interval", "1s",
			// Production Raft timing (the default multiplier 5 is for
			// development machines): elections in about a second.
			"-hcl", "performance { raft_multiplier = 1 }",
			// No call home: the agent would look up HashiCorp's
			// update-check service at start.
			"-hcl", "disable_update_check = true",
			"-log-level", "info",
		}
		for j := 1; j <= n; j++ {
			if j != i+1 {
				cmd = append(cmd, "-retry-join", fmt.Sprintf("n%d", j))
			}
		}
		specs[i] = targets.NodeSpec{Name: name, Port: httpPort, Cmd: cmd, DataDir: "/var/lib/consul"}
	}
	return specs, nil
}

// lockDelay is the lock-delay cfg asks for.
func lockDelay(cfg targets.ClientConfig) time.Duration {
	if cfg.LockDelay == nil {
		return DefaultLockDelay
	}
	return *cfg.LockDelay
}

// Validate rejects what Consul cannot honour: a TTL under 10 s, over 24 h or
// not in whole seconds, a negative lock-delay, one over Consul's 60 s cap,
// or one not in whole milliseconds.
func (Target) Validate(cfg targets.ClientConfig) error {
	switch {
	case cfg.TTL < MinTTL:
		return fmt.Errorf("%w: consul sessions have a TTL of at least %s (session_ttl_min); --ttl %s is shorter", targets.ErrBadConfig, MinTTL, cfg.TTL)
	case cfg.TTL > MaxTTL:
		return fmt.Errorf("%w: consul sessions have a TTL of at most 24h; --ttl %s is longer", targets.ErrBadConfig, cfg.TTL)
	case cfg.TTL%time.Second != 0:
		return fmt.Errorf("%w: consul session TTLs are whole seconds here; --ttl %s is not", targets.ErrBadConfig, cfg.TTL)
	}
	if cfg.LockDelay != nil {
		d := *cfg.LockDelay
		switch {
		case d < 0:
			return fmt.Errorf("%w: --lock-delay %s is negative", targets.ErrBadConfig, d)
		case d > MaxLockDelay:
			return fmt.Errorf("%w: consul caps the lock-delay at 60s; --lock-delay %s is longer", targets.ErrBadConfig, d)
		case d%time.Millisecond != 0:
			return fmt.Errorf("%w: --lock-delay %s is not in whole milliseconds", targets.ErrBadConfig, d)
		}
	}
	return nil
}

// Profile: the TTL is MinTTL, the shortest lease Consul grants, so that
// pauses and runs stay as short as Consul allows; the lock-delay is 0 (the
// worst case: with Consul's default 15 s a paused holder's lock stays
// untaken 20 s longer, so each pause would have to last over a minute);
// faults come 2 s apart; and a run lasts 45 s: a holder paused at about 3 s
// loses its session by 24 s (MaxLease 21 s), another client takes the lock
// and writes, and the paused holder writes when it resumes, at the latest
// when the time limit heals the pause.
func (Target) Profile() targets.Profile {
	zero := time.Duration(0)
	return targets.Profile{
		TTL: MinTTL, LockDelay: &zero, NemesisInterval: 2 * time.Second, TimeLimit: 45 * time.Second,
		Why: "TTL 10s (Consul's minimum), lock-delay 0, faults 2s apart, 45s runs: a pause must outlast 2 TTL + 1s",
	}
}

// MaxLease is 2 TTL + 1 s, plus lock-delay + 5 s when the lock-delay is not
// zero. The leader invalidates the session 2 TTL after the last renewal it
// received, and a second covers the Raft commits and a waiter's wake-up in
// between. The lock-delay then keeps the lock from anyone else; a waiter
// (the api's Lock) whose acquire was refused during it sleeps
// api.DefaultLockRetryTime (5 s) before it tries again, so the lock can stay
// untaken up to that much longer. With lock-delay 0 no acquire is refused
// and waiters, woken by the release of the key, take it at once.
func (Target) MaxLease(cfg targets.ClientConfig) time.Duration {
	d := ttlMultiplier*cfg.TTL + timerSlack
	if delay := min(lockDelay(cfg), MaxLockDelay); delay > 0 {
		d += delay + api.DefaultLockRetryTime
	}
	return d
}

// newAPI returns an api client of one server. It keeps no idle connections:
// every request goes on a fresh one, which net/http never replays. timeout
// bounds every request, the api's own blocking reads included.
//
// addr is HOST:PORT (http), or http:// or https:// and HOST:PORT (an
// attached server's). creds (nil: none) give the ACL token (Password) and
// the TLS configuration.
func newAPI(addr string, timeout time.Duration, creds *targets.Credentials) (*api.Client, error) {
	tr := &http.Transport{
		DialContext:       (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableKeepAlives: true,
	}
	scheme := "http"
	if s, rest, ok := strings.Cut(addr, "://"); ok {
		scheme, addr = s, rest
	}
	cfg := &api.Config{Address: addr, Scheme: scheme}
	if creds != nil {
		tc, err := creds.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("consul: %w", err)
		}
		tr.TLSClientConfig, cfg.Token = tc, creds.Password
	}
	cfg.HttpClient = &http.Client{Transport: tr, Timeout: timeout}
	return api.NewClient(cfg)
}

// Attach is Consul on existing servers (targets.Attacher): each endpoint
// http:// or https:// (or HOST:PORT: https when creds carry TLS), an ACL
// token given as --auth :TOKEN.
func (t Target) Attach(eps []string, creds *targets.Credentials) (targets.Target, []targets.Node, error) {
	if creds != nil && creds.Username != "" {
		return nil, nil, fmt.Errorf("%w: consul takes an ACL token: --auth :TOKEN, with no user", targets.ErrBadConfig)
	}
	// The api falls back to these when a field is empty: the harness's
	// own clients would use them and the workers, in their containers,
	// would not.
	for _, v := range []string{"CONSUL_HTTP_TOKEN", "CONSUL_HTTP_TOKEN_FILE", "CONSUL_NAMESPACE", "CONSUL_PARTITION", "CONSUL_HTTP_AUTH"} {
		if os.Getenv(v) != "" {
			return nil, nil, fmt.Errorf("%w: %s is set: fencecheck's workers would not see it; unset it and give the token with --auth-file", targets.ErrBadConfig, v)
		}
	}
	addrs, err := targets.HTTPEndpoints(eps, creds)
	if err != nil {
		return nil, nil, err
	}
	t.Creds = creds
	return t, targets.AttachedNodes(addrs), nil
}

// Purge deletes the keys under the run's prefix (targets.Purger).
func (t Target) Purge(ctx context.Context, cfg targets.ClientConfig) error {
	pfx := strings.Trim(cfg.Prefix, "/")
	if !targets.RunPrefix(pfx) || len(cfg.Endpoints) == 0 {
		return fmt.Errorf("consul: purge: no endpoint or prefix %q", cfg.Prefix)
	}
	c, err := newAPI(cfg.Endpoints[0], 10*time.Second, cfg.Credentials)
	if err != nil {
		return err
	}
	_, err = c.KV().DeleteTree(pfx+"/", (&api.WriteOptions{}).WithContext(ctx))
	return err
}

// Ready returns nil once every server knows the same leader and serves a
// consistent (linearizable) read.
func (t Target) Ready(ctx context.Context, nodes []targets.Node) error {
	clients := make([]*api.Client, len(nodes))
	for i, n := range nodes {
		c, err := newAPI(n.Addr, 2*time.Second, t.Creds)
		if err != nil {
			return err
		}
		clients[i] = c
	}
	return targets.PollReady(ctx, "consul", 200*time.Millisecond, func(ctx context.Context) error { return ready(ctx, nodes, clients) })
}

func ready(ctx context.Context, nodes []targets.Node, clients []*api.Client) error {
	leader := ""
	for i, n := range nodes {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		l, err := clients[i].Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(sctx))
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", n.Name, err)
		case l == "":
			return fmt.Errorf("%s: no leader", n.Name)
		case leader != "" && l != leader:
			return fmt.Errorf("%s: servers disagree on the leader (%s, %s)", n.Name, leader, l)
		}
		leader = l
	}
	for i, n := range nodes {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _, err := clients[i].KV().Get("fencecheck/ready", (&api.QueryOptions{RequireConsistent: true}).WithContext(sctx))
		cancel()
		if err != nil {
			return fmt.Errorf("%s: consistent read: %w", n.Name, err)
		}
	}
	return nil
}

// ElectsLeader is true: the servers elect their Raft leader (targets.Elected).
func (Target) ElectsLeader() bool { return true }

// serverName is the node of nodes that the Raft server named node at
// address (its RPC address, HOST:8300) is: the one whose client address
// has the same host (an attached run names its servers s1, s2, ... by
// their endpoints, not as Consul names them), else node as Consul names
// it (fencecheck's own servers: n1, n2, ... both ways).
func serverName(nodes []targets.Node, node, address string) string {
	host, _, err := net.SplitHostPort(address)
	if err == nil {
		for _, n := range nodes {
			addr := n.Addr
			if _, rest, ok := strings.Cut(addr, "://"); ok {
				addr = rest
			}
			if h, _, err := net.SplitHostPort(addr); err == nil && h == host {
				return n.Name
			}
		}
	}
	return node
}

// Leader returns the node name of the server that leads, from the Raft
// configuration as the first server that answers reports it.
func (t Target) Leader(ctx context.Context, nodes []targets.Node) (string, error) {
	var errs []error
	for _, n := range nodes {
		c, err := newAPI(n.Addr, 2*time.Second, t.Creds)
		if err != nil {
			return "", err
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conf, err := c.Operator().RaftGetConfiguration((&api.QueryOptions{}).WithContext(sctx))
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		for _, s := range conf.Servers {
			if s.Leader {
				return serverName(nodes, s.Node, s.Address), nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: no leader in the raft configuration", n.Name))
	}
	return "", fmt.Errorf("consul: no leader found: %w", errors.Join(errs...))
}

var (
	_ targets.Target       = Target{}
	_ targets.LeaseBounder = Target{}
	_ targets.ReadModer    = Target{}
	_ targets.Elected      = Target{}
	_ targets.Client       = (*client)(nil)
	_ targets.KV           = (*client)(nil)
)
