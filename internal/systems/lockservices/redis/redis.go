// Package redis is the single-instance Redis target: one redis-server (the
// base image's, Debian bookworm's 7.0.15), the SET NX PX lock recipe, and a
// key of the same server as the protected resource. Its sub-packages are the
// other Redis targets: sentinel (a primary, a replica and three Sentinels)
// and redlock (independent masters and the Redlock algorithm).
//
// Lock: SET PREFIX/lock <random value> NX PX <ttl>. A waiting client tries
// again every 15-25 ms. Release is a Lua compare-and-delete: DEL only if the
// key still holds the caller's value, so a holder whose lease expired cannot
// delete its successor's lock. The lease is the key's expiry: nothing
// renews it. Lease.Remaining is the client's estimate, TTL minus the time
// since it sent the SET.
//
// Fencing token: INCR PREFIX/token, in the same Lua script as the SET NX and
// only when the SET took the lock. A script runs atomically, so no other
// grant can come between a grant and its INCR: tokens are unique and in
// grant order, as long as the counter survives. With `redis` (AOF, fsync
// always) it survives a crash of the server: the INCR is on disk before the
// client hears of it. With `redis-nopersist` (--save "" --appendonly no, a
// common set-up for a Redis used for locks) a restarted server is empty and
// INCR starts again from 1: tokens are granted twice and go down.
//
// Fencing modes, on the resource PREFIX/value (JSON) in the same server,
// each one Lua script that also INCRs PREFIX/rev, the resource's revision:
//   - none: SET value;
//   - token: PREFIX/fence holds the highest token accepted; a write with a
//     lower token is refused, else fence and value are set together;
//   - cas: the value is set only while PREFIX/lock still holds the writer's
//     random value (Redis's own atomicity ties the write to ownership).
//
// Redis expires keys by its wall clock (a key's expiry is an absolute Unix
// time in ms): a server clock that jumps forward by more than the TTL
// expires the lock at once while its holder still works, and another client
// takes it (nemesis clock-skew:server). The older holder, still running, then
// usually writes before the newer one, whose read came first: token fencing
// accepts both (its tokens arrive in increasing order) and the newer write
// erases the older; cas refuses the older holder's write, since the lock key
// no longer holds its value.
//
// No hidden retries: go-redis's command retries are off (Options), so every
// command is sent at most once. Acquire tries again only when an attempt
// certainly did not take the lock (see Lock.Acquire).
//
// Redis has no Raft leader: Leader is the server itself.
package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/targets"
)

// Port is redis-server's client port.
const Port = 6379

// ServerVersion is the version of the redis-server in the base image
// (Debian bookworm's redis package).
const ServerVersion = "7.0.15"

// MinTTL is the shortest lease the Redis targets take: a lease must outlast
// a few round trips.
const MinTTL = 100 * time.Millisecond

// Persistence settings of the servers.
var (
	// Durable: every write is in the append-only file, fsynced, before the
	// client hears of it; a killed server restarts with all of it.
	Durable = []string{"--appendonly", "yes", "--appendfsync", "always", "--save", ""}
	// Volatile: nothing on disk; a restarted server is empty.
	Volatile = []string{"--appendonly", "no", "--save", ""}
	// Everysec: every write is in the append-only file before the client
	// hears of it, and a background thread fsyncs the file about once a
	// second (Redis's default for AOF): a power loss loses the last second
	// or two of acknowledged writes, a process crash loses none.
	Everysec = []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}
)

// DataDir is where redis-server keeps its append-only file.
const DataDir = "/var/lib/redis"

// ServerCmd is the command line of a redis-server on Port with its data in
// DataDir and the given persistence settings.
func ServerCmd(persistence []string) []string {
	cmd := []string{"redis-server", "--port", fmt.Sprint(Port), "--bind", "0.0.0.0", "--protected-mode", "no",
		"--dir", DataDir, "--loglevel", "notice"}
	return append(cmd, persistence...)
}

// Target is a single Redis server.
type Target struct {
	// NoPersistence runs the server with --save "" --appendonly no: a
	// restart loses every key, the token counter included.
	NoPersistence bool
	// Everysec fsyncs the append-only file once a second instead of
	// before every reply (appendfsync everysec).
	Everysec bool
	// Creds, set by Attach, are what Ready presents to a server
	// fencecheck did not start (--endpoints); nil for its own, or for an
	// attached server that asks for none.
	Creds *targets.Credentials
}

// Name is "redis", "redis-nopersist" without persistence, or
// "redis-everysec" with appendfsync everysec.
func (t Target) Name() string {
	switch {
	case t.NoPersistence:
		return "redis-nopersist"
	case t.Everysec:
		return "redis-everysec"
	}
	return "redis"
}

// Image is the base image, which holds redis-server.
func (Target) Image() string { return kinds.Base }

// Version is the redis-server version.
func (Target) Version() string { return ServerVersion }

// DefaultNodes is 1: a single server.
func (Target) DefaultNodes() int { return 1 }

// Nodes returns the one server.
func (t Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n != 1 {
		return nil, fmt.Errorf("%w: %s is a single Redis server: run it with --nodes 1, not %d", targets.ErrBadConfig, t.Name(), n)
	}
	p := Durable
	switch {
	case t.NoPersistence:
		p = Volatile
	case t.Everysec:
		p = Everysec
	}
	return []targets.NodeSpec{{Name: "n1", Port: Port, Cmd: ServerCmd(p), DataDir: DataDir}}, nil
}

// Validate rejects leases Redis cannot express (PX is in whole
// milliseconds) or too short to be held.
func (Target) Validate(cfg targets.ClientConfig) error { return ValidateTTL(cfg.TTL) }

// ValidateTTL checks a lease TTL for the Redis targets.
func ValidateTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl%time.Millisecond != 0 {
		return fmt.Errorf("%w: Redis lock leases are whole milliseconds of at least %s; --ttl %s is not", targets.ErrBadConfig, MinTTL, ttl)
	}
	return nil
}

// Ready returns nil once every node answers PING (a server still loading
// its append-only file answers LOADING).
func (t Target) Ready(ctx context.Context, nodes []targets.Node) error {
	return pingAllWith(ctx, nodes, t.Creds)
}

// Attach is a single Redis server that fencecheck did not start
// (targets.Attacher): one endpoint, HOST:PORT, redis:// or rediss://
// (TLS), and creds to present (a password, an ACL user, TLS).
func (t Target) Attach(eps []string, creds *targets.Credentials) (targets.Target, []targets.Node, error) {
	if t.NoPersistence || t.Everysec {
		return nil, nil, fmt.Errorf("%w: %s names how fencecheck's own server persists; an attached server persists as its owners set it: use --target redis", targets.ErrBadConfig, t.Name())
	}
	if len(eps) != 1 {
		return nil, nil, fmt.Errorf("%w: %s is a single Redis server: give one endpoint, not %d", targets.ErrBadConfig, t.Name(), len(eps))
	}
	e, err := targets.ParseEndpoint(eps[0], "redis", "rediss")
	if err != nil {
		return nil, nil, err
	}
	tc, err := creds.TLSConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: redis: %w", targets.ErrBadConfig, err)
	}
	if e.Scheme == "redis" && tc != nil {
		return nil, nil, fmt.Errorf("%w: --endpoints %s: redis:// with TLS credentials (--tls-*): say rediss://", targets.ErrBadConfig, eps[0])
	}
	t.Creds = creds
	return t, targets.AttachedNodes([]string{e.String()}), nil
}

// Purge deletes every key under cfg.Prefix/ (targets.Purger), found by
// SCAN, which reads the key space without blocking the server.
func (t Target) Purge(ctx context.Context, cfg targets.ClientConfig) error {
	if len(cfg.Endpoints) == 0 || !targets.RunPrefix(cfg.Prefix) {
		return fmt.Errorf("redis: purge: no endpoint or prefix %q", cfg.Prefix)
	}
	c, err := NewClientFor(cfg.Endpoints[0], RPC(cfg), cfg.Credentials)
	if err != nil {
		return err
	}
	defer c.Close()
	pattern := globEscape(cfg.Prefix) + "/*"
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, 5000).Result()
		if err != nil {
			return fmt.Errorf("redis: purge: %w", err)
		}
		if len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("redis: purge: %w", err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// globEscape escapes the characters SCAN's MATCH treats as special.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PingAll waits until every node answers PING, or returns the last reason
// one did not when ctx ends.
func PingAll(ctx context.Context, nodes []targets.Node) error { return pingAllWith(ctx, nodes, nil) }

// pingAllWith is PingAll presenting creds (nil: none).
func pingAllWith(ctx context.Context, nodes []targets.Node, creds *targets.Credentials) error {
	return targets.PollReady(ctx, "redis", 100*time.Millisecond, func(ctx context.Context) error { return pingAll(ctx, nodes, creds) })
}

func pingAll(ctx context.Context, nodes []targets.Node, creds *targets.Credentials) error {
	var errs []error
	for _, n := range nodes {
		c, err := NewClientFor(n.Addr, time.Second, creds)
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err = c.Ping(pctx).Err()
		cancel()
		c.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Leader is the one server: Redis has no Raft leader.
func (Target) Leader(_ context.Context, nodes []targets.Node) (string, error) {
	if len(nodes) == 0 {
		return "", errors.New("redis: no server")
	}
	return nodes[0].Name, nil
}

// Dial returns a client of the server (the first endpoint).
func (t Target) Dial(_ context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("redis: no endpoint")
	}
	rpc := RPC(cfg)
	rdb, err := NewClientFor(cfg.Endpoints[0], rpc, cfg.Credentials)
	if err != nil {
		return nil, err
	}
	return Connect(rdb, cfg), nil
}

// RPC is the client's limit on each request (5 s when unset).
func RPC(cfg targets.ClientConfig) time.Duration {
	if cfg.RPCTimeout > 0 {
		return cfg.RPCTimeout
	}
	return 5 * time.Second
}

// Client is the single-instance lock and the resource, on one go-redis
// client (of one server, or of the primary a Sentinel names).
type Client struct {
	Lock
	Resource
}

// Connect returns the Client of cfg's keys on rdb.
func Connect(rdb *goredis.Client, cfg targets.ClientConfig) *Client {
	rpc, keys := RPC(cfg), KeysFor(cfg.Prefix)
	return &Client{
		Lock:     Lock{RDB: rdb, Keys: keys, TTL: cfg.TTL, RPC: rpc},
		Resource: Resource{RDB: rdb, Keys: keys, RPC: rpc},
	}
}

// Close closes the go-redis client.
func (c *Client) Close() error { return c.Lock.RDB.Close() }
