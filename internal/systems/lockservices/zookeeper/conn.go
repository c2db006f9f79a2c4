package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// conn is one ZooKeeper session of the client: the library's connection
// plus what the library does not expose. It tracks the last time anything
// arrived from the server (pings included: the server answers a ping only
// while the session lives), counts the sessions established, and notices
// the end of its first session (the library then starts a new one, which
// owns none of the first one's ephemeral nodes).
type conn struct {
	zk      *zk.Conn
	timeout time.Duration // the session timeout asked for (--ttl)
	// stale is how long the connection may stay silent before the client
	// takes it for dead: the library's own receive timeout (2/3 of the
	// session timeout).
	stale time.Duration

	lastRead atomic.Int64 // unix nanoseconds
	sessions atomic.Int64 // sessions established (StateHasSession events)

	mu      sync.Mutex
	cur     net.Conn // the current TCP connection
	stopped bool     // no more connections (crash-style stop)
	changed chan struct{}
	// dead is closed when the first session ends (expired, or closed).
	dead     chan struct{}
	deadOnce sync.Once
}

// nopLogger silences the library.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// dial opens a session to the servers, and waits until it is established
// or ctx ends.
func dial(ctx context.Context, servers []string, timeout time.Duration) (*conn, error) {
	c := &conn{timeout: timeout, stale: timeout * 2 / 3, changed: make(chan struct{}), dead: make(chan struct{})}
	c.lastRead.Store(time.Now().UnixNano())
	z, _, err := zk.Connect(servers, timeout,
		zk.WithLogger(nopLogger{}), zk.WithLogInfo(false),
		zk.WithDialer(c.dialTCP), zk.WithEventCallback(c.event))
	if err != nil {
		return nil, err
	}
	c.zk = z
	if err := c.waitSession(ctx, 0); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *conn) dialTCP(network, address string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return nil, errors.New("zookeeper: connection stopped")
	}
	nc, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	t := &tracked{Conn: nc, c: c}
	c.mu.Lock()
	c.cur = t
	c.mu.Unlock()
	return t, nil
}

// tracked is a TCP connection that records when data last arrived.
type tracked struct {
	net.Conn
	c *conn
}

func (t *tracked) Read(b []byte) (int, error) {
	n, err := t.Conn.Read(b)
	if n > 0 {
		t.c.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

// event follows the session's state; it must not block.
func (c *conn) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		c.sessions.Add(1)
	case zk.StateExpired:
		c.markDead()
	default:
		return
	}
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *conn) markDead() { c.deadOnce.Do(func() { close(c.dead) }) }

// waitSession waits until more than n sessions were established and the
// connection has one now.
func (c *conn) waitSession(ctx context.Context, n int64) error {
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if c.sessions.Load() > n && c.zk.State() == zk.StateHasSession {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("zookeeper: no session: %w", context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fresh makes sure a request goes out on a connection the server was heard
// on within the receive timeout. One that has been silent longer (a client
// resumed after a pause, a partitioned server) is closed and the library
// reconnects, to another server if need be, before the request is sent:
// else the request would go out on a connection the server has dropped and
// its outcome would be unknown.
func (c *conn) fresh(ctx context.Context) error {
	n := c.sessions.Load()
	if c.zk.State() == zk.StateHasSession && time.Since(c.lastHeard()) <= c.stale {
		return nil
	}
	c.mu.Lock()
	if c.cur != nil {
		c.cur.Close()
	}
	c.mu.Unlock()
	return c.waitSession(ctx, n)
}

func (c *conn) lastHeard() time.Time { return time.Unix(0, c.lastRead.Load()) }

// close ends the session (the server deletes its ephemeral nodes at once),
// waiting at most until ctx ends.
func (c *conn) close(ctx context.Context) error {
	_, err := call(ctx, func() (struct{}, error) {
		c.zk.Close()
		return struct{}{}, nil
	})
	c.markDead()
	return err
}

// stop ends the connection as a crashed process would: no more requests,
// no close of the session, which the servers expire after its timeout.
func (c *conn) stop() {
	c.mu.Lock()
	c.stopped = true
	if c.cur != nil {
		c.cur.Close()
	}
	c.mu.Unlock()
	// The library's Close queues a close request that, with no connection
	// left, is never sent; it returns within about three seconds.
	go c.zk.Close()
	c.markDead()
}

// call runs one request of the library, which takes no context, and waits
// for its answer until ctx ends. A request that was abandoned still
// completes in the background (the library fails every request it sent
// when its connection drops); its outcome is unknown to the caller.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("no answer: %w", context.Cause(ctx))
	}
}
