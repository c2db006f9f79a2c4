package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencecheck/fencecheck/targets"
)

// Client is one worker's lock session and lock-store connection.
type Client struct {
	lock, store conn
	ttl         time.Duration
	k1, k2      int32
	id          string // the run's prefix: the lock-store's row
}

// Close ends both sessions (a lock still held goes with its session).
func (c *Client) Close() error {
	for _, cn := range []*conn{&c.lock, &c.store} {
		cn.mu.Lock()
		cn.drop()
		cn.mu.Unlock()
	}
	return nil
}

// tokenSequence is the fencing token's sequence, shared by every lock of
// the server (tokens grow per lock all the same) and never reset.
const tokenSequence = "fencecheck_token"

// Acquire takes the advisory lock on the client's session (blocking in
// pg_advisory_lock until it is granted or ctx ends), then takes a token
// from the sequence on the same session. When ctx ends first, or anything
// fails, the session is closed, so that a lock granted at that moment goes
// with it.
func (c *Client) Acquire(ctx context.Context) (targets.Lease, error) {
	c.lock.mu.Lock()
	defer c.lock.mu.Unlock()
	pc, err := c.lock.get(ctx)
	if err != nil {
		return nil, err
	}
	var l *lease
	err = func() error {
		if _, err := pc.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", c.k1, c.k2); err != nil {
			return fmt.Errorf("pg-advisory: lock: %w", err)
		}
		tctx, cancel := context.WithTimeout(ctx, c.lock.rpc)
		defer cancel()
		var token, pid int64
		if err := pc.QueryRow(tctx, grantQuery, c.k1, c.k2).Scan(&token, &pid); err != nil {
			return fmt.Errorf("pg-advisory: token: %w", err)
		}
		l = &lease{c: c, token: token, pid: pid, checked: time.Now()}
		return nil
	}()
	if err != nil {
		c.lock.drop()
		return nil, err
	}
	return l, nil
}

// grantQuery takes the grant's token from the sequence and records the
// grant (its token, and the backend it ran on) as the lock's holder, for
// cas fencing: one statement, on the lock's session.
const grantQuery = `WITH t AS (SELECT nextval('` + tokenSequence + `') AS token)
	INSERT INTO fencecheck_holders (k1, k2, token, pid) SELECT $1, $2, token, pg_backend_pid() FROM t
	ON CONFLICT (k1, k2) DO UPDATE SET token = EXCLUDED.token, pid = EXCLUDED.pid
	RETURNING token, pid`

// lease is a grant: its token and the backend that holds it.
type lease struct {
	c     *Client
	token int64
	pid   int64 // the holding session's backend

	mu      sync.Mutex
	checked time.Time // when the last check that found the lock held was sent
	lost    bool
}

func (l *lease) Token() int64 { return l.token }

// Remaining asks the server whether the session still holds the lock; if
// it does, the lease runs a TTL from when the question was sent (the
// server finds a dead session within about that); else nothing is left.
func (l *lease) Remaining() time.Duration {
	sent := time.Now()
	held, err := l.c.held(context.Background(), l.pid)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil || !held || l.lost {
		l.lost = l.lost || (err == nil && !held)
		return 0
	}
	l.checked = sent
	return max(0, l.c.ttl-time.Since(sent))
}

// Held asks the server, on the lock's session, whether that session still
// holds the advisory lock (the recipe's own belief: PostgreSQL's answer on
// the connection that took it; targets.Believer).
func (l *lease) Held(ctx context.Context) (bool, error) {
	held, err := l.c.held(ctx, l.pid)
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = l.lost || !held
	return held && !l.lost, nil
}

// held reports whether backend pid holds the client's advisory lock, asked
// on the lock's session.
func (c *Client) held(ctx context.Context, pid int64) (bool, error) {
	var held bool
	err := c.lock.do(ctx, func(ctx context.Context, pc *pgx.Conn) error {
		return pc.QueryRow(ctx, heldQuery, c.k1, c.k2, pid).Scan(&held)
	})
	return held, err
}

// heldQuery: does backend $3 hold advisory lock ($1, $2)? A two-key
// advisory lock shows in pg_locks as classid, objid and objsubid 2.
const heldQuery = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
	AND classid = ($1::int4)::oid AND objid = ($2::int4)::oid AND objsubid = 2 AND granted AND pid = $3)`

// Release unlocks on the session; a session that no longer holds the lock
// (it died and a new one was made) says so.
func (l *lease) Release(ctx context.Context) error {
	var ok bool
	err := l.c.lock.do(ctx, func(ctx context.Context, pc *pgx.Conn) error {
		return pc.QueryRow(ctx, "SELECT pg_advisory_unlock($1, $2)", l.c.k1, l.c.k2).Scan(&ok)
	})
	if err != nil {
		return fmt.Errorf("pg-advisory: unlock: %w", err)
	}
	if !ok {
		return errors.New("pg-advisory: unlock: the session did not hold the lock")
	}
	return nil
}
