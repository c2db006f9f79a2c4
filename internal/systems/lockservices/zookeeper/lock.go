package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencecheck/fencecheck/targets"
)

// Dial returns a client. Znodes: PREFIX/lock (the lock's queue),
// PREFIX/election (the election's candidates), PREFIX/value (the list, as
// JSON), PREFIX/fence (the highest accepted token, in decimal), PREFIX/reg/KEY
// (the register workload's registers, in decimal). The client keeps one
// session for the store and the registers, and opens one per lease.
func (t Target) Dial(ctx context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: zookeeper: no endpoints", targets.ErrBadConfig)
	}
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	// Setup is not a measured operation: the first session may take longer
	// than a request on a loaded machine, where a follower that answered the
	// readiness check may still be syncing with the leader.
	dctx, cancel := context.WithTimeout(ctx, max(rpc, setupSession))
	defer cancel()
	main, err := dial(dctx, cfg.Endpoints, cfg.TTL)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	pfx := "/" + strings.Trim(cfg.Prefix, "/")
	if pfx == "/" {
		pfx = "/fencecheck"
	}
	return &client{main: main, servers: cfg.Endpoints, ttl: cfg.TTL, rpc: rpc, prefix: pfx,
		lockDir: pfx + "/lock", electionDir: pfx + "/election", value: pfx + "/value", fence: pfx + "/fence",
		made: map[string]bool{}, leases: map[*lease]bool{}}, nil
}

// setupSession bounds the wait for the client's first session at setup.
const setupSession = 30 * time.Second

type client struct {
	main     *conn
	servers  []string
	ttl, rpc time.Duration

	prefix, lockDir, electionDir, value, fence string

	mu     sync.Mutex
	made   map[string]bool // znodes known to exist
	leases map[*lease]bool // leases whose session is open
}

// Close closes the store's session, and stops every lease's session as a
// crashed process would: their znodes stay until the servers expire them.
func (c *client) Close() error {
	c.mu.Lock()
	ls := c.leases
	c.leases = map[*lease]bool{}
	c.mu.Unlock()
	for l := range ls {
		l.s.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.rpc)
	defer cancel()
	return c.main.close(ctx)
}

// op runs one request on the store's session, within the RPC timeout, on a
// connection that was heard from lately (conn.fresh).
func op[T any](ctx context.Context, c *client, f func(z *zk.Conn) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, c.rpc)
	defer cancel()
	if err := c.main.fresh(ctx); err != nil {
		var zero T
		return zero, err
	}
	return call(ctx, func() (T, error) { return f(c.main.zk) })
}

// ensure creates the persistent znode path and its parents where missing.
func (c *client) ensure(ctx context.Context, path string) error {
	c.mu.Lock()
	known := c.made[path]
	c.mu.Unlock()
	if known {
		return nil
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		_, err := op(ctx, c, func(z *zk.Conn) (string, error) { return z.Create(p, nil, 0, zk.WorldACL(zk.PermAll)) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	c.mu.Lock()
	c.made[path] = true
	c.mu.Unlock()
	return nil
}

// Acquire takes the lock with the lock recipe.
func (c *client) Acquire(ctx context.Context) (targets.Lease, error) {
	l, err := c.queue(ctx, c.lockDir, nil)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: lock: %w", err)
	}
	return l, nil
}

// Campaign leads the election with ZooKeeper's election recipe: the same
// queue of ephemeral sequential znodes, under PREFIX/election, each holding
// its candidate's name; the lowest leads. The term is the leader's czxid.
func (c *client) Campaign(ctx context.Context, candidate string) (targets.Lease, error) {
	l, err := c.queue(ctx, c.electionDir, []byte(candidate))
	if err != nil {
		return nil, fmt.Errorf("zookeeper: campaign: %w", err)
	}
	return l, nil
}

// seqLen is the length of the sequence number ZooKeeper appends to a
// sequential znode's name.
const seqLen = 10

func seq(name string) string { return name[max(len(name)-seqLen, 0):] }

// queue joins the queue of ephemeral sequential znodes under dir on a new
// session and returns once its znode is the first of the queue.
func (c *client) queue(ctx context.Context, dir string, data []byte) (*lease, error) {
	if err := c.ensure(ctx, dir); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, c.rpc)
	s, err := dial(sctx, c.servers, c.ttl)
	cancel()
	if err != nil {
		return nil, err
	}
	l := &lease{c: c, s: s}
	c.mu.Lock()
	c.leases[l] = true
	c.mu.Unlock()
	if err := l.join(ctx, dir, data); err != nil {
		l.abandon()
		return nil, err
	}
	return l, nil
}

// rpc runs one request on the lease's session within the RPC timeout.
func rpc[T any](ctx context.Context, l *lease, f func(z *zk.Conn) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, l.c.rpc)
	defer cancel()
	return call(ctx, func() (T, error) { return f(l.s.zk) })
}

// join creates the lease's znode and waits until it is the first.
func (l *lease) join(ctx context.Context, dir string, data []byte) error {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	guid := hex.EncodeToString(id[:])
	path, err := rpc(ctx, l, func(z *zk.Conn) (string, error) {
		return z.Create(dir+"/"+guid+"-n-", data, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	})
	if err != nil && !errors.Is(err, zk.ErrSessionExpired) && !errors.Is(err, zk.ErrNoNode) {
		// The answer was lost: the znode may exist. Look for it by its
		// GUID once the session has a connection again.
		path, err = l.find(ctx, dir, guid, err)
	}
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	l.path = path
	st, err := rpc(ctx, l, func(z *zk.Conn) (exists, error) {
		ok, st, err := z.Exists(path)
		return exists{ok, st}, err
	})
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !st.ok {
		return fmt.Errorf("%s vanished: the session ended", path)
	}
	l.token, l.version = st.stat.Czxid, st.stat.Version
	name := path[len(dir)+1:]
	for {
		kids, err := rpc(ctx, l, func(z *zk.Conn) ([]string, error) {
			kids, _, err := z.Children(dir)
			return kids, err
		})
		if err != nil {
			return fmt.Errorf("children of %s: %w", dir, err)
		}
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(seq(a), seq(b)) })
		i := slices.Index(kids, name)
		switch {
		case i < 0:
			return fmt.Errorf("%s vanished: the session ended", path)
		case i == 0:
			return nil
		}
		type watch struct {
			ok bool
			ch <-chan zk.Event
		}
		w, err := rpc(ctx, l, func(z *zk.Conn) (watch, error) {
			ok, _, ch, err := z.ExistsW(dir + "/" + kids[i-1])
			return watch{ok, ch}, err
		})
		if err != nil {
			return fmt.Errorf("watch %s: %w", kids[i-1], err)
		}
		if !w.ok {
			continue
		}
		select {
		case <-w.ch:
		case <-l.s.dead:
			return errors.New("the session ended while waiting")
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", kids[i-1], context.Cause(ctx))
		}
	}
}

type exists struct {
	ok   bool
	stat *zk.Stat
}

// find looks for the znode whose create's answer was lost (cause), by the
// GUID in its name: after a sync, so that the server it asks has applied
// every transaction the leader had committed.
func (l *lease) find(ctx context.Context, dir, guid string, cause error) (string, error) {
	if _, err := rpc(ctx, l, func(z *zk.Conn) (string, error) { return z.Sync(dir) }); err != nil {
		return "", fmt.Errorf("%w; then sync: %w", cause, err)
	}
	kids, err := rpc(ctx, l, func(z *zk.Conn) ([]string, error) {
		kids, _, err := z.Children(dir)
		return kids, err
	})
	if err != nil {
		return "", fmt.Errorf("%w; then children: %w", cause, err)
	}
	for _, k := range kids {
		if strings.HasPrefix(k, guid+"-") {
			return dir + "/" + k, nil
		}
	}
	return "", cause
}

// lease is a znode of a queue (the lock's or the election's) that came
// first, on a session of its own.
type lease struct {
	c       *client
	s       *conn
	path    string
	token   int64 // czxid
	version int32 // the znode's data version (it is never set)
}

func (l *lease) Token() int64 { return l.token }

// Remaining is the session timeout from the last time the server was heard
// on the session's connection, or 0 once the session has ended.
func (l *lease) Remaining() time.Duration {
	select {
	case <-l.s.dead:
		return 0
	default:
	}
	return max(time.Until(l.s.lastHeard().Add(l.c.ttl)), 0)
}

// Held is the recipe's own belief: its session is alive and the server was
// heard within a session timeout (Remaining; targets.Believer).
func (l *lease) Held(context.Context) (bool, error) { return l.Remaining() > 0, nil }

// forget drops the lease from the client's open sessions.
func (l *lease) forget() {
	l.c.mu.Lock()
	delete(l.c.leases, l)
	l.c.mu.Unlock()
}

// abandon closes the session of a failed attempt, in the background: the
// servers delete its znode when the close arrives, or expire the session.
func (l *lease) abandon() {
	l.forget()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.c.rpc)
		defer cancel()
		_ = l.s.close(ctx)
	}()
}

// Release deletes the znode, then closes the lease's session.
func (l *lease) Release(ctx context.Context) error {
	l.forget()
	_, err := rpc(ctx, l, func(z *zk.Conn) (struct{}, error) { return struct{}{}, z.Delete(l.path, -1) })
	cctx, cancel := context.WithTimeout(ctx, l.c.rpc)
	defer cancel()
	cerr := l.s.close(cctx)
	if err != nil {
		return fmt.Errorf("zookeeper: release: delete %s: %w", l.path, err)
	}
	if cerr != nil {
		return fmt.Errorf("zookeeper: release: close the session: %w", cerr)
	}
	return nil
}
