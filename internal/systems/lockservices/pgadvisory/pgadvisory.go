// Package pgadvisory is the target "pg-advisory": PostgreSQL's session-level
// advisory lock, the way many teams make one pod run a migration or a cron
// job. PostgreSQL 15 (Debian's, the base image's; the postgres resource's
// server) runs on one node.
//
// Lock: pg_advisory_lock(k1, k2) on the client's own session (one
// connection, kept across grants), with k1 fencecheck's and k2 a hash of the
// run's key prefix. The lock has no TTL: it is held as long as the session
// lives, and the server ends a session when its TCP connection is found
// dead. The client sets that detection on its session to the lease TTL:
// tcp_keepalives_idle TTL/2, tcp_keepalives_interval and
// tcp_keepalives_count spread over the other half, and tcp_user_timeout
// the TTL (unacknowledged data for a TTL ends the connection). A client cut
// off from the server therefore loses the lock about one TTL later, and a
// SIGSTOPped client never does: its kernel still acknowledges and answers
// keepalives, so its session stays alive and so does its lock.
//
// Fencing token: nextval of a sequence, taken right after the grant on the
// same session. Sequences are WAL-logged and never go back, across a
// restart of the server too.
//
// Lease check (Remaining): a careful client asks the server whether its
// session still holds the lock (pg_locks, granted, its backend's pid). If
// it does, the lease runs until the server could find the session dead:
// the TTL from when the question was sent. If not, or without an answer,
// nothing is left.
//
// Release: pg_advisory_unlock(k1, k2) on the session.
//
// The lock-store is a table of the same database, reached on a connection
// of its own (as an application's pool would be, not the lock's session):
// fencing none, token (a fence column) and cas (the write lands only while
// the lock's last grant, recorded with its token and backend at the grant,
// is the writer's and that backend still holds the lock, checked in the
// same statement).
package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/internal/systems/servers/pgserver"
	"github.com/fencecheck/fencecheck/targets"
)

// Target is PostgreSQL's advisory lock, reached directly or through
// PgBouncer (Pooling).
type Target struct {
	// Pooling is PgBouncer's pool mode between the clients and the
	// server: "" (no PgBouncer), PoolTransaction or PoolSession.
	Pooling string
}

// PgBouncer's pool modes.
const (
	PoolTransaction = "transaction"
	PoolSession     = "session"
)

// Tiers of the pooled targets: the server, and PgBouncer, which clients
// talk to.
const (
	TierPostgres  = "postgres"
	TierPgBouncer = "pgbouncer"
)

// BouncerPort is PgBouncer's port.
const BouncerPort = 6432

// Name is "pg-advisory", "pg-advisory-pgbouncer" (transaction pooling) or
// "pg-advisory-pgbouncer-session".
func (t Target) Name() string {
	switch t.Pooling {
	case PoolTransaction:
		return "pg-advisory-pgbouncer"
	case PoolSession:
		return "pg-advisory-pgbouncer-session"
	}
	return "pg-advisory"
}

// ClientTier is PgBouncer's when there is one (targets.Tiered).
func (t Target) ClientTier() string {
	if t.Pooling == "" {
		return ""
	}
	return TierPgBouncer
}

// LeaderTier is the server's (targets.Tiered).
func (t Target) LeaderTier() string {
	if t.Pooling == "" {
		return ""
	}
	return TierPostgres
}

// Image is the base image, which holds PostgreSQL 15.
func (Target) Image() string { return kinds.Base }

// Version is the PostgreSQL major version.
func (Target) Version() string { return "15" }

// DefaultNodes is 1: one PostgreSQL server (and PgBouncer beside it).
func (Target) DefaultNodes() int { return 1 }

// Nodes is one PostgreSQL server (pgserver's, as the postgres resource runs it), as n1, and with
// pooling PgBouncer (Debian's 1.18, the base image's) as b1, in front of
// it.
func (t Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n != 1 {
		return nil, fmt.Errorf("%w: %s is one PostgreSQL server: run it with --nodes 1, not %d", targets.ErrBadConfig, t.Name(), n)
	}
	specs := []targets.NodeSpec{{Name: "n1", Port: pgserver.Port, Cmd: pgserver.Cmd(), DataDir: pgserver.DataDir}}
	if t.Pooling == "" {
		return specs, nil
	}
	specs[0].Tier = TierPostgres
	return append(specs, targets.NodeSpec{
		Name: "b1", Port: BouncerPort, Tier: TierPgBouncer,
		// PgBouncer will not run as root.
		Cmd:   []string{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "pgbouncer", "/etc/fencecheck/pgbouncer.ini"},
		Files: []targets.File{{Path: "/etc/fencecheck/pgbouncer.ini", Data: []byte(bouncerConfig(t.Pooling))}, {Path: "/etc/fencecheck/userlist.txt", Data: []byte(`"postgres" ""` + "\n")}},
	}), nil
}

// PgBouncer's server connections per pool. Transaction pooling: fewer
// than the clients of a run (5 by default), so that they share them, as a
// pooler's clients do. Session pooling gives each client connection a
// server connection of its own for as long as it is connected, so its pool
// has room for every client's two (the lock's session and the
// lock-store's) and the harness's.
const (
	TransactionPoolSize = 3
	SessionPoolSize     = 40
)

func poolSize(mode string) int {
	if mode == PoolSession {
		return SessionPoolSize
	}
	return TransactionPoolSize
}

// bouncerConfig is pgbouncer.ini for a pool mode. PgBouncer finds a dead
// client by its own TCP keepalives, set here to about 2 s (idle 1 s, one
// probe after 1 s), and tcp_user_timeout 2 s: it cannot know the run's TTL,
// so pooled runs take a TTL of at least 2 s and their lease bound is the
// larger (MaxLease). In session mode it resets a server connection a
// client leaves with DISCARD ALL, which releases its advisory locks; in
// transaction mode it resets nothing.
func bouncerConfig(mode string) string {
	return fmt.Sprintf(`[databases]
postgres = host=n1 port=%d dbname=postgres user=postgres

[pgbouncer]
listen_addr = 0.0.0.0
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = /etc/fencecheck/userlist.txt
pool_mode = %s
default_pool_size = %d
max_client_conn = 500
tcp_keepalive = 1
tcp_keepidle = 1
tcp_keepintvl = 1
tcp_keepcnt = 1
tcp_user_timeout = 2000
ignore_startup_parameters = extra_float_digits
logfile =
pidfile =
`, pgserver.Port, BouncerPort, mode, poolSize(mode))
}

// Validate: the TTL is whole seconds of at least 2 (the keepalive settings
// are in seconds, and a lease needs one of them on each side).
func (Target) Validate(cfg targets.ClientConfig) error {
	if cfg.TTL < 2*time.Second || cfg.TTL%time.Second != 0 {
		return fmt.Errorf("%w: pg-advisory maps --ttl onto the server's TCP keepalive settings, in whole seconds: at least 2s; --ttl %s is not", targets.ErrBadConfig, cfg.TTL)
	}
	return nil
}

// MaxLease is a TTL and a second: the keepalives' last probe, and the
// server's (or PgBouncer's) noticing it failed.
func (Target) MaxLease(cfg targets.ClientConfig) time.Duration { return cfg.TTL + time.Second }

// Ready returns nil once the server accepts a connection out of recovery
// and has the token's sequence and the lock-store's table (made here if
// missing), and PgBouncer, if any, passes a query on.
func (t Target) Ready(ctx context.Context, nodes []targets.Node) error {
	server := nodes[:1]
	if err := pgserver.Ready(ctx, server); err != nil {
		return err
	}
	c := conn{addr: server[0].Addr, rpc: 5 * time.Second}
	defer c.drop()
	if err := c.do(ctx, func(ctx context.Context, pc *pgx.Conn) error {
		_, err := pc.Exec(ctx, schema)
		return err
	}); err != nil {
		return err
	}
	for _, n := range targets.Endpoints(t, nodes) {
		if n == server[0].Addr {
			continue
		}
		b := conn{addr: n, rpc: 2 * time.Second, simple: true}
		err := targets.PollReady(ctx, "pgbouncer", 100*time.Millisecond, func(ctx context.Context) error {
			return b.do(ctx, func(ctx context.Context, pc *pgx.Conn) error {
				_, err := pc.Exec(ctx, "SELECT 1")
				return err
			})
		})
		b.drop()
		if err != nil {
			return err
		}
	}
	return nil
}

// Leader is the server.
func (Target) Leader(_ context.Context, nodes []targets.Node) (string, error) {
	if len(nodes) == 0 {
		return "", errors.New("pg-advisory: no server")
	}
	return nodes[0].Name, nil
}

// Dial returns a client: the lock's session and the lock-store's
// connection, each made when first needed.
func (t Target) Dial(_ context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("pg-advisory: no endpoint")
	}
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	k := keys(cfg.Prefix)
	c := &Client{
		lock:  conn{addr: cfg.Endpoints[0], rpc: rpc, params: keepalive(cfg.TTL)},
		store: conn{addr: cfg.Endpoints[0], rpc: rpc},
		ttl:   cfg.TTL, k1: k.k1, k2: k.k2, id: cfg.Prefix,
	}
	if t.Pooling != "" {
		// PgBouncer takes no server settings at start-up (its own
		// keepalives find a dead client), and its transaction pooling
		// no named prepared statements.
		c.lock.params, c.lock.simple, c.store.simple = nil, true, true
	}
	return c, nil
}

// lockKeys are the two int4 keys of a prefix's advisory lock.
type lockKeys struct{ k1, k2 int32 }

// keyClass is the first key of every fencecheck advisory lock ("fc").
const keyClass = 0x6663

func keys(prefix string) lockKeys {
	h := fnv.New32a()
	h.Write([]byte(prefix))
	return lockKeys{keyClass, int32(h.Sum32())}
}

// keepalive is the session settings that make the server find a dead
// client within about ttl.
func keepalive(ttl time.Duration) map[string]string {
	s := int(ttl / time.Second)
	idle := max(1, s/2)
	count := max(1, s-idle)
	return map[string]string{
		"tcp_keepalives_idle":     fmt.Sprint(idle),
		"tcp_keepalives_interval": "1",
		"tcp_keepalives_count":    fmt.Sprint(count),
		"tcp_user_timeout":        fmt.Sprint(ttl.Milliseconds()),
		"application_name":        "fencecheck",
	}
}

// conn is one connection, made when needed and again after it was lost;
// one call at a time (do).
type conn struct {
	addr   string
	rpc    time.Duration
	params map[string]string
	simple bool // the simple query protocol (through PgBouncer)

	mu sync.Mutex
	c  *pgx.Conn
}

// do runs f on the connection within the RPC timeout, connecting first if
// there is none. It never retries f.
func (c *conn) do(ctx context.Context, f func(ctx context.Context, pc *pgx.Conn) error) error {
	return c.doWithin(ctx, c.rpc, f)
}

// setupLimit bounds a set-up step's statements (Reset: the schema and the
// run's list) instead of the RPC timeout, which bounds the operations a
// history records: a loaded CI machine (load 29) took more than the 3 s
// default to connect and create the tables. A hang limit, not a speed.
const setupLimit = time.Minute

// doWithin is do within limit.
func (c *conn) doWithin(ctx context.Context, limit time.Duration, f func(ctx context.Context, pc *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	pc, err := c.get(ctx)
	if err != nil {
		return err
	}
	return f(ctx, pc)
}

// get returns the connection, connecting first if there is none. c.mu is
// held.
func (c *conn) get(ctx context.Context) (*pgx.Conn, error) {
	if c.c != nil && !c.c.IsClosed() {
		return c.c, nil
	}
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=%d", c.addr, max(1, int(c.rpc/time.Second))))
	if err != nil {
		return nil, err
	}
	for k, v := range c.params {
		cfg.RuntimeParams[k] = v
	}
	if c.simple {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	pc, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pg-advisory: connect: %w", err)
	}
	c.c = pc
	return pc, nil
}

// drop closes the connection, ending its session (and any lock it holds),
// without waiting on a server that does not answer. c.mu is held.
func (c *conn) drop() {
	if c.c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = c.c.Close(ctx)
	c.c = nil
}
