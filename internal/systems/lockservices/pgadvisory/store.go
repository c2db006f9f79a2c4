package pgadvisory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/targets"
)

// schema is what the lock and the lock-store need, made once by Ready:
// the token's sequence, each lock's last grant (fencecheck_holders: its
// token and the backend that took it), and the lists' table (one row per
// run prefix).
const schema = `CREATE SEQUENCE IF NOT EXISTS ` + tokenSequence + `;
CREATE TABLE IF NOT EXISTS fencecheck_holders (k1 int4, k2 int4, token bigint NOT NULL, pid int4 NOT NULL, PRIMARY KEY (k1, k2));
CREATE TABLE IF NOT EXISTS fencecheck_lists (id text PRIMARY KEY, content jsonb NOT NULL, fence bigint NOT NULL, version bigint NOT NULL)`

// Reset empties the run's list and its fence. The token sequence is not
// reset: tokens only grow.
func (c *Client) Reset(ctx context.Context) error {
	return c.store.doWithin(ctx, max(c.store.rpc, setupLimit), func(ctx context.Context, pc *pgx.Conn) error {
		if _, err := pc.Exec(ctx, schema); err != nil {
			return fmt.Errorf("pg-advisory: reset: %w", err)
		}
		_, err := pc.Exec(ctx, `INSERT INTO fencecheck_lists (id, content, fence, version) VALUES ($1, '[]', 0, 0)
			ON CONFLICT (id) DO UPDATE SET content = '[]', fence = 0, version = 0`, c.id)
		if err != nil {
			return fmt.Errorf("pg-advisory: reset: %w", err)
		}
		return nil
	})
}

func decode(b []byte) ([]int64, error) {
	list := []int64{}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("pg-advisory: the list: %w", err)
	}
	return list, nil
}

// Read reads the list.
func (c *Client) Read(ctx context.Context) ([]int64, error) {
	var b []byte
	err := c.store.do(ctx, func(ctx context.Context, pc *pgx.Conn) error {
		return pc.QueryRow(ctx, "SELECT content FROM fencecheck_lists WHERE id = $1", c.id).Scan(&b)
	})
	if err != nil {
		return nil, fmt.Errorf("pg-advisory: read: %w", err)
	}
	return decode(b)
}

// ReadFenced raises the fence to the lease's token and reads, in one
// statement, or is refused when the fence is higher.
func (c *Client) ReadFenced(ctx context.Context, l targets.Lease) ([]int64, error) {
	var b []byte
	err := c.store.do(ctx, func(ctx context.Context, pc *pgx.Conn) error {
		return pc.QueryRow(ctx, "UPDATE fencecheck_lists SET fence = $2 WHERE id = $1 AND fence <= $2 RETURNING content", c.id, l.Token()).Scan(&b)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pg-advisory: fenced read with token %d: %w", l.Token(), targets.ErrFenced)
	}
	if err != nil {
		return nil, fmt.Errorf("pg-advisory: fenced read: %w", err)
	}
	return decode(b)
}

// Write replaces the list as f says; the row's version is the revision.
func (c *Client) Write(ctx context.Context, list []int64, l targets.Lease, f targets.Fencing) (int64, error) {
	content, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	q := "UPDATE fencecheck_lists SET content = $2, version = version + 1 WHERE id = $1 RETURNING version"
	args := []any{c.id, string(content)} // text: the simple protocol would send []byte as bytea
	switch f.Applied() {
	case targets.FencingNone:
	case targets.FencingToken:
		q = "UPDATE fencecheck_lists SET content = $2, fence = $3, version = version + 1 WHERE id = $1 AND fence <= $3 RETURNING version"
		args = append(args, l.Token())
	case targets.FencingCAS:
		if _, ok := l.(*lease); !ok {
			return 0, fmt.Errorf("%w: pg-advisory's cas fencing needs a lease of its own lock", targets.ErrBadConfig)
		}
		// The write lands only while the lock's last grant is the
		// writer's and the backend that took it still holds the lock.
		q = `UPDATE fencecheck_lists SET content = $2, version = version + 1 WHERE id = $1 AND EXISTS (
			SELECT 1 FROM fencecheck_holders h JOIN pg_locks l ON l.pid = h.pid
			WHERE h.k1 = $3 AND h.k2 = $4 AND h.token = $5 AND l.locktype = 'advisory'
			AND l.classid = (h.k1)::oid AND l.objid = (h.k2)::oid AND l.objsubid = 2 AND l.granted) RETURNING version`
		args = append(args, c.k1, c.k2, l.Token())
	default:
		return 0, fmt.Errorf("%w: pg-advisory has no fencing %q", targets.ErrBadConfig, f)
	}
	var rev int64
	err = c.store.do(ctx, func(ctx context.Context, pc *pgx.Conn) error {
		return pc.QueryRow(ctx, q, args...).Scan(&rev)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("pg-advisory: write with token %d: %w", l.Token(), targets.ErrFenced)
	}
	if err != nil {
		return 0, fmt.Errorf("pg-advisory: write: %w", err)
	}
	return rev, nil
}
