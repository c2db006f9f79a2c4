// Command go-zookeeper is a fencecheck client program in Go: the lock of
// github.com/go-zookeeper/zk (zk.NewLock), driven over fencecheck's client
// protocol (JSON lines on stdin and stdout, docs/client-protocol.md).
//
// The recipe is the library's: one connection per process (session timeout
// = the run's TTL), zk.NewLock(conn, path, zk.WorldACL(zk.PermAll)), Lock()
// and Unlock(). Lock() takes no deadline: an acquire that outlasts its
// timeout closes the connection (which ends the attempt and its session)
// and the next one dials again. The library gives no lease time; the
// connection's events do: the time left is the session timeout while no
// disconnection or expiry was seen since the grant, else 0.
//
// It answers held (--recheck, the belief sampler) with the same events,
// the library's only word on the lock: held while no disconnection or
// expiry of the session came since the grant.
//
// Token (with --fencing token): the creation zxid (czxid) of the lock's
// znode, the child of the lock path owned by this session, read after the
// grant. Unfenced, the grants carry none.
//
// client.json builds it on the machine that runs fencecheck (go build) and
// starts ./client in each worker container.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

type request struct {
	ID        int64    `json:"id"`
	Type      string   `json:"type"`
	Endpoints []string `json:"endpoints"`
	TTLMS     int64    `json:"ttl_ms"`
	Prefix    string   `json:"prefix"`
	Fencing   string   `json:"fencing"`
	TimeoutMS int64    `json:"timeout_ms"`
}

type reply map[string]any

func fail(kind, format string, args ...any) reply {
	return reply{"type": "error", "kind": kind, "message": fmt.Sprintf(format, args...)}
}

type client struct {
	endpoints []string
	ttl       time.Duration
	path      string
	fenced    bool

	mu            sync.Mutex
	conn          *zk.Conn
	interruptions int // disconnections and expiries seen
	atGrant       int
	lock          *zk.Lock
}

func (c *client) dial() error {
	conn, events, err := zk.Connect(c.endpoints, c.ttl, zk.WithLogInfo(false))
	if err != nil {
		return err
	}
	go func() {
		for e := range events {
			if e.Type == zk.EventSession && (e.State == zk.StateDisconnected || e.State == zk.StateExpired) {
				c.mu.Lock()
				c.interruptions++
				c.mu.Unlock()
			}
		}
	}()
	c.conn = conn
	return nil
}

func (c *client) init(r request) reply {
	c.endpoints, c.ttl, c.path = r.Endpoints, time.Duration(r.TTLMS)*time.Millisecond, r.Prefix+"/client-lock"
	c.fenced = r.Fencing != "" && r.Fencing != "none"
	if err := c.dial(); err != nil {
		return fail("fail", "zookeeper: %v", err)
	}
	return reply{"implements": []string{"lock", "held"}, "tokens": c.fenced, "name": "go-zookeeper " + moduleVersion("github.com/go-zookeeper/zk") + " Lock"}
}

func (c *client) remaining() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lock == nil || c.interruptions != c.atGrant {
		return 0
	}
	return c.ttl.Milliseconds()
}

// believes is the held answer: the lock taken and its session not
// disconnected or expired since.
func (c *client) believes() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lock != nil && c.interruptions == c.atGrant
}

func (c *client) acquire(r request) reply {
	if c.lock != nil {
		return fail("fail", "already holding the lock")
	}
	if c.conn == nil {
		if err := c.dial(); err != nil {
			return fail("fail", "zookeeper: %v", err)
		}
	}
	c.mu.Lock()
	before := c.interruptions
	c.mu.Unlock()
	l := zk.NewLock(c.conn, c.path, zk.WorldACL(zk.PermAll))
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return fail("info", "lock: %v", err)
		}
	case <-time.After(time.Duration(r.TimeoutMS) * time.Millisecond):
		// Lock has no deadline: closing the connection ends the attempt,
		// and its session with its znode.
		c.conn.Close()
		<-done
		c.conn = nil
		return fail("fail", "lock not acquired within %d ms", r.TimeoutMS)
	}
	c.mu.Lock()
	c.lock, c.atGrant = l, before
	c.mu.Unlock()
	rep := reply{}
	if c.fenced {
		czxid, err := c.ownNode()
		if err != nil {
			c.release()
			return fail("info", "acquired, but the lock znode could not be read: %v", err)
		}
		rep["token"] = czxid
	}
	rep["remaining_ms"] = c.remaining()
	return rep
}

// ownNode is the czxid of the lock path's child that this session owns.
func (c *client) ownNode() (int64, error) {
	children, _, err := c.conn.Children(c.path)
	if err != nil {
		return 0, err
	}
	for _, ch := range children {
		_, st, err := c.conn.Get(c.path + "/" + ch)
		if err == nil && st.EphemeralOwner == c.conn.SessionID() {
			return st.Czxid, nil
		}
	}
	return 0, fmt.Errorf("no child of %s is this session's", c.path)
}

func (c *client) release() reply {
	c.mu.Lock()
	l := c.lock
	c.lock = nil
	c.mu.Unlock()
	if l == nil {
		return fail("fail", "no lock held")
	}
	if err := l.Unlock(); err != nil {
		return fail("info", "release: %v", err)
	}
	return reply{}
}

func main() {
	c := &client{}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "go-zookeeper: bad request %q: %v\n", in.Text(), err)
			os.Exit(2)
		}
		var rep reply
		switch {
		case r.Type == "init":
			rep = c.init(r)
		case c.endpoints == nil:
			rep = fail("fail", "%s before init", r.Type)
		case r.Type == "acquire":
			rep = c.acquire(r)
		case r.Type == "remaining":
			rep = reply{"remaining_ms": c.remaining()}
		case r.Type == "held":
			rep = reply{"held": c.believes()}
		case r.Type == "release":
			rep = c.release()
		default:
			rep = fail("fail", "unknown request %q", r.Type)
		}
		if _, ok := rep["type"]; !ok {
			rep["type"] = r.Type + "_ok"
		}
		rep["id"] = r.ID
		if err := out.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "go-zookeeper:", err)
			os.Exit(1)
		}
	}
}

// moduleVersion is the version of module path this binary was built with.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}
