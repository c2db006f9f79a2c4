// Command go-redsync is a fencecheck client program in Go: redsync's Mutex
// (github.com/go-redsync/redsync/v4, Redlock over independent Redis
// masters, through its go-redis v9 pool), driven over fencecheck's client
// protocol (JSON lines on stdin and stdout, docs/client-protocol.md).
//
// One program serves two targets (client.json's "targets"): on redlock
// (five independent masters) it is Redlock, on redis (one server) redsync's
// lock on a single instance, the same code with one pool; the init's
// endpoints say which.
//
// The recipe is redsync's README: one pool per master, redsync.New(pools),
// rs.NewMutex(name, WithExpiry(ttl)), LockContext with the acquire's
// deadline, UnlockContext. The time left is redsync's own validity
// estimate, Mutex.Until, which also answers held (--recheck, the belief
// sampler): held while Until has not passed.
//
// Token: none. Redlock grants a lock by a majority of independent masters,
// with no single counter to take a number from, and redsync offers none:
// the program says "tokens": false, and client.json declares it, so that a
// run with --fencing token is refused (exit 254) before anything starts.
//
// client.json builds it on the machine that runs fencecheck (go build) and
// starts ./client in each worker container.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
)

type request struct {
	ID           int64    `json:"id"`
	Type         string   `json:"type"`
	Endpoints    []string `json:"endpoints"`
	TTLMS        int64    `json:"ttl_ms"`
	Prefix       string   `json:"prefix"`
	RPCTimeoutMS int64    `json:"rpc_timeout_ms"`
	TimeoutMS    int64    `json:"timeout_ms"`
}

type reply map[string]any

func fail(kind, format string, args ...any) reply {
	return reply{"type": "error", "kind": kind, "message": fmt.Sprintf(format, args...)}
}

type client struct {
	rs   *redsync.Redsync
	name string
	ttl  time.Duration
	rpc  time.Duration
	m    *redsync.Mutex
}

func (c *client) init(r request) reply {
	c.ttl, c.rpc, c.name = time.Duration(r.TTLMS)*time.Millisecond, time.Duration(r.RPCTimeoutMS)*time.Millisecond, r.Prefix+"/client-lock"
	var pools []redsyncredis.Pool
	for _, ep := range r.Endpoints {
		pools = append(pools, redsyncgoredis.NewPool(goredis.NewClient(&goredis.Options{Addr: ep, MaxRetries: -1})))
	}
	c.rs = redsync.New(pools...)
	return reply{"implements": []string{"lock", "held"}, "tokens": false, "name": "redsync " + moduleVersion("github.com/go-redsync/redsync/v4") + " Mutex"}
}

func (c *client) remaining() int64 {
	if c.m == nil {
		return 0
	}
	return max(0, time.Until(c.m.Until()).Milliseconds())
}

// believes is the held answer: redsync's own local belief, the mutex's
// validity (Mutex.Until) not yet passed. (Mutex.Valid asks the masters:
// the servers' word, not the library's belief.)
func (c *client) believes() reply {
	return reply{"held": c.m != nil && time.Now().Before(c.m.Until())}
}

func (c *client) acquire(r request) reply {
	if c.m != nil {
		return fail("fail", "already holding the lock")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.TimeoutMS)*time.Millisecond)
	defer cancel()
	m := c.rs.NewMutex(c.name, redsync.WithExpiry(c.ttl), redsync.WithTries(1<<30))
	if err := m.LockContext(ctx); err != nil {
		// redsync releases the masters it did lock before it gives up.
		return fail("fail", "lock: %v", err)
	}
	c.m = m
	return reply{"remaining_ms": c.remaining()}
}

func (c *client) release() reply {
	m := c.m
	c.m = nil
	if m == nil {
		return fail("fail", "no lock held")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.rpc)
	defer cancel()
	ok, err := m.UnlockContext(ctx)
	var taken *redsync.ErrTaken
	switch {
	case errors.As(err, &taken) || (err == nil && !ok):
		return fail("fail", "release: the lock was no longer ours: %v", err)
	case err != nil:
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
			fmt.Fprintf(os.Stderr, "go-redsync: bad request %q: %v\n", in.Text(), err)
			os.Exit(2)
		}
		var rep reply
		switch {
		case r.Type == "init":
			rep = c.init(r)
		case c.rs == nil:
			rep = fail("fail", "%s before init", r.Type)
		case r.Type == "acquire":
			rep = c.acquire(r)
		case r.Type == "remaining":
			rep = reply{"remaining_ms": c.remaining()}
		case r.Type == "held":
			rep = c.believes()
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
			fmt.Fprintln(os.Stderr, "go-redsync:", err)
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
