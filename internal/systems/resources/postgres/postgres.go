// Package postgres is the resource "postgres": the list lives in a row of a
// PostgreSQL 15 table (Debian's package, in its own container on the run's
// network), reached with pgx. It is what most users' locks really protect: a
// database the lock service knows nothing about.
//
//	CREATE TABLE files (id text PRIMARY KEY, content jsonb, fence bigint, version bigint)
//
// One row per run (id: the run's prefix). Fencing modes:
//   - none: UPDATE files SET content = $content WHERE id = $id;
//   - token: UPDATE files SET content = $content, fence = $token
//     WHERE id = $id AND fence <= $token; 0 rows means a newer holder has
//     been at the row: the write is refused. Reads raise the fence the same
//     way (UPDATE ... SET fence = $token WHERE fence <= $token RETURNING
//     content), so a stale write that lands between a new holder's read and
//     its write is refused too;
//   - cas: the database's own concurrency control, no token at all: a
//     version column, UPDATE ... WHERE id = $id AND version = $version_read.
//
// Every write bumps version, which is also the write's revision. The
// resource keeps an audit log too (--audit-log): a table that checks no
// token, appended before the fenced write.
//
// Durability: fsync and synchronous_commit stay on (PostgreSQL's defaults),
// so kill:resource, which SIGKILLs the server and restarts it on its data,
// loses no committed write.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/systems/servers/pgserver"
	"github.com/fencecheck/fencecheck/targets"
)

// Resource is PostgreSQL.
type Resource struct{}

// Name is "postgres".
func (Resource) Name() string { return "postgres" }

// Fencings are none, token (the fence column) and cas (the version column).
func (Resource) Fencings() []targets.Fencing {
	return []targets.Fencing{targets.FencingNone, targets.FencingToken, targets.FencingCAS}
}

// Nodes is one PostgreSQL server, "pg", on the package's cluster, listening
// on the run's network, its process the container's PID 1 (so SIGSTOP and
// SIGKILL reach it), running as the postgres user (pgserver.Cmd).
func (Resource) Nodes() []resources.NodeSpec {
	return []resources.NodeSpec{{Name: "pg", Image: kinds.Base, Port: pgserver.Port, DataDir: pgserver.DataDir, Cmd: pgserver.Cmd()}}
}

// Ready returns nil once the server accepts a connection and is out of
// recovery (after a restart, it replays its WAL first).
func (Resource) Ready(ctx context.Context, nodes []targets.Node) error {
	return pgserver.Ready(ctx, nodes)
}

// Dial returns a handle on the run's row. It connects lazily, and again
// after a connection was lost (a timeout closes it): never to retry an
// operation, only so that the next one has a connection.
func (Resource) Dial(_ context.Context, cfg resources.Config, _ targets.Client) (resources.Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: postgres: no endpoint", resources.ErrBadConfig)
	}
	return &store{db: newDB(cfg), id: cfg.Prefix}, nil
}

// DialAuditLog returns the run's audit log, a table that checks no token.
func (Resource) DialAuditLog(_ context.Context, cfg resources.Config) (resources.AuditLog, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: postgres: no endpoint", resources.ErrBadConfig)
	}
	return &auditLog{db: newDB(cfg), run: cfg.Prefix}, nil
}

// db is one connection, made when needed.
type db struct {
	addr string
	rpc  time.Duration

	mu   sync.Mutex
	conn *pgx.Conn
}

func newDB(cfg resources.Config) *db {
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	return &db{addr: cfg.Endpoints[0], rpc: rpc}
}

// do runs f on the connection within the RPC timeout, connecting first if
// there is none (or it was lost).
func (d *db) do(ctx context.Context, f func(ctx context.Context, c *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, d.rpc)
	defer cancel()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil || d.conn.IsClosed() {
		c, err := pgx.Connect(ctx, pgserver.ConnString(d.addr, d.rpc))
		if err != nil {
			return fmt.Errorf("postgres: connect: %w", err)
		}
		d.conn = c
	}
	return f(ctx, d.conn)
}

func (d *db) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return d.conn.Close(ctx)
}

type store struct {
	db *db
	id string
}

func (s *store) Close() error { return s.db.close() }

// Reset creates the table if needed and empties the run's row.
func (s *store) Reset(ctx context.Context) error {
	return s.db.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS files (
			id text PRIMARY KEY, content jsonb NOT NULL, fence bigint NOT NULL, version bigint NOT NULL)`); err != nil {
			return fmt.Errorf("postgres: reset: %w", err)
		}
		if _, err := c.Exec(ctx, `INSERT INTO files (id, content, fence, version) VALUES ($1, '[]', 0, 0)
			ON CONFLICT (id) DO UPDATE SET content = '[]', fence = 0, version = 0`, s.id); err != nil {
			return fmt.Errorf("postgres: reset: %w", err)
		}
		return nil
	})
}

// Read reads the row; under token fencing it raises the fence first, in
// the same statement, or is refused.
func (s *store) Read(ctx context.Context, a resources.Access) (resources.State, error) {
	var st resources.State
	var content []byte
	err := s.db.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		if a.Fencing != targets.FencingToken {
			return c.QueryRow(ctx, `SELECT content, version FROM files WHERE id = $1`, s.id).Scan(&content, &st.Version)
		}
		token := tokenOf(a)
		err := c.QueryRow(ctx, `UPDATE files SET fence = $2 WHERE id = $1 AND fence <= $2 RETURNING content, version`,
			s.id, token).Scan(&content, &st.Version)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.refused(ctx, c, "read", token)
		}
		return err
	})
	if err != nil {
		if errors.Is(err, resources.ErrFenced) {
			return st, err
		}
		return st, fmt.Errorf("postgres: read: %w", err)
	}
	if err := json.Unmarshal(content, &st.List); err != nil {
		return st, fmt.Errorf("postgres: read: content %q: %w", content, err)
	}
	if st.List == nil {
		st.List = []int64{}
	}
	return st, nil
}

// refused is the error of a statement that touched 0 rows under token
// fencing, with the fence it found.
func (s *store) refused(ctx context.Context, c *pgx.Conn, what string, token int64) error {
	var fence int64
	if err := c.QueryRow(ctx, `SELECT fence FROM files WHERE id = $1`, s.id).Scan(&fence); err != nil {
		return fmt.Errorf("%w: PostgreSQL refused the %s: 0 rows, fence ? > %d", resources.ErrFenced, what, token)
	}
	return fmt.Errorf("%w: PostgreSQL refused the %s: 0 rows, fence %d > %d", resources.ErrFenced, what, fence, token)
}

func tokenOf(a resources.Access) int64 {
	if a.Lease == nil {
		return 0
	}
	return a.Lease.Token()
}

// Write updates the row as the fencing mode says and returns its new
// version.
func (s *store) Write(ctx context.Context, a resources.Access, read resources.State, list []int64) (int64, error) {
	content, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	var rev int64
	err = s.db.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		switch a.Fencing {
		case targets.FencingNone:
			return c.QueryRow(ctx, `UPDATE files SET content = $2, version = version + 1 WHERE id = $1 RETURNING version`,
				s.id, content).Scan(&rev)
		case targets.FencingToken:
			token := tokenOf(a)
			err := c.QueryRow(ctx, `UPDATE files SET content = $2, fence = $3, version = version + 1
				WHERE id = $1 AND fence <= $3 RETURNING version`, s.id, content, token).Scan(&rev)
			if errors.Is(err, pgx.ErrNoRows) {
				return s.refused(ctx, c, "UPDATE", token)
			}
			return err
		case targets.FencingCAS:
			err := c.QueryRow(ctx, `UPDATE files SET content = $2, version = version + 1
				WHERE id = $1 AND version = $3 RETURNING version`, s.id, content, read.Version).Scan(&rev)
			if errors.Is(err, pgx.ErrNoRows) {
				var now int64
				if c.QueryRow(ctx, `SELECT version FROM files WHERE id = $1`, s.id).Scan(&now) == nil {
					return fmt.Errorf("%w: PostgreSQL refused the UPDATE: 0 rows, version %d != %d read", resources.ErrFenced, now, read.Version)
				}
				return fmt.Errorf("%w: PostgreSQL refused the UPDATE: 0 rows, version changed since %d", resources.ErrFenced, read.Version)
			}
			return err
		}
		return fmt.Errorf("unknown fencing %q", a.Fencing)
	})
	if err != nil {
		if errors.Is(err, resources.ErrFenced) {
			return 0, err
		}
		return 0, fmt.Errorf("postgres: write: %w", err)
	}
	return rev, nil
}

// auditLog is the audit table: every holder's entry, in insertion order.
type auditLog struct {
	db  *db
	run string
}

func (l *auditLog) Close() error { return l.db.close() }

func (l *auditLog) Reset(ctx context.Context) error {
	return l.db.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS audit (
			seq bigserial PRIMARY KEY, run text NOT NULL, process bigint NOT NULL, token bigint NOT NULL, element bigint NOT NULL)`); err != nil {
			return fmt.Errorf("postgres: audit log: %w", err)
		}
		if _, err := c.Exec(ctx, `DELETE FROM audit WHERE run = $1`, l.run); err != nil {
			return fmt.Errorf("postgres: audit log: %w", err)
		}
		return nil
	})
}

func (l *auditLog) Append(ctx context.Context, e resources.AuditEntry) error {
	return l.db.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `INSERT INTO audit (run, process, token, element) VALUES ($1, $2, $3, $4)`,
			l.run, e.Process, e.Token, e.Element); err != nil {
			return fmt.Errorf("postgres: audit log: %w", err)
		}
		return nil
	})
}

func (l *auditLog) Entries(ctx context.Context) ([]resources.AuditEntry, error) {
	var out []resources.AuditEntry
	err := l.db.do(ctx, func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT process, token, element FROM audit WHERE run = $1 ORDER BY seq`, l.run)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e resources.AuditEntry
			if err := rows.Scan(&e.Process, &e.Token, &e.Element); err != nil {
				return err
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: audit log: %w", err)
	}
	return out, nil
}
