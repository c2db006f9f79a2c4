// Command go-rueidislock is a fencecheck client program in Go: rueidis's
// rueidislock (github.com/redis/rueidis/rueidislock), a lock whose holder
// is told by a context: the README promises that the context "will be
// canceled automatically and immediately once the KeyMajority is not held
// anymore". It is driven over fencecheck's client protocol (JSON lines on
// stdin and stdout, docs/client-protocol.md).
//
// The recipe is rueidislock's README for one Redis instance: NewLocker
// with KeyMajority 1, KeyValidity the run's TTL and NoLoopTracking (Redis
// 7), every other option the library's default (its keys under the run's
// prefix), then WithContext(ctx, name) to wait for the lock, whose returned
// cancel releases it. The wait is bounded by the acquire's timeout_ms
// without bounding the lock: the parent context is cancelled only when the
// wait gives up, never once the lock is held.
//
// held (implements "held"): the library's own belief, whether the lock's
// context is still live. remaining: rueidislock offers no deadline, only
// that context; while it is live, the time left is the key's validity
// counted from the grant or from the last renewal this program can see,
// which it cannot: it says the whole validity while the context lives, and
// 0 once it is cancelled. A run that judges the library by what it
// believes uses --recheck, which asks held right before each write.
//
// Token: none (rueidislock offers no fencing token): "tokens": false, so
// --fencing token is refused before anything starts.
//
// client.json builds it on the machine that runs fencecheck (go build) and
// starts ./client in each worker container.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
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
	locker rueidislock.Locker
	name   string
	ttl    time.Duration
	// the lock held, if any: its context and its release
	held    context.Context
	release context.CancelFunc
}

func (c *client) init(r request) reply {
	if len(r.Endpoints) != 1 {
		return fail("fail", "rueidislock's recipe for one Redis instance takes one endpoint, got %d", len(r.Endpoints))
	}
	c.ttl, c.name = time.Duration(r.TTLMS)*time.Millisecond, "lock"
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: r.Endpoints},
		KeyPrefix:      r.Prefix + "/client-rueidislock", // its keys: KeyPrefix:0:NAME
		KeyMajority:    1,
		KeyValidity:    c.ttl,
		NoLoopTracking: true,
	})
	if err != nil {
		return fail("fail", "rueidislock.NewLocker: %v", err)
	}
	c.locker = l
	return reply{"implements": []string{"lock", "held"}, "tokens": false,
		"name": "rueidislock " + moduleVersion("github.com/redis/rueidis")}
}

func (c *client) live() bool { return c.held != nil && c.held.Err() == nil }

func (c *client) remaining() int64 {
	if !c.live() {
		return 0
	}
	return c.ttl.Milliseconds()
}

func (c *client) acquire(r request) reply {
	if c.held != nil {
		return fail("fail", "already holding the lock")
	}
	// The lock's context derives from the one WithContext is given: a
	// parent cancelled only if the wait gives up.
	parent, giveUp := context.WithCancel(context.Background())
	type got struct {
		ctx    context.Context
		cancel context.CancelFunc
		err    error
	}
	done := make(chan got, 1)
	go func() {
		ctx, cancel, err := c.locker.WithContext(parent, c.name)
		done <- got{ctx, cancel, err}
	}()
	var g got
	select {
	case g = <-done:
	case <-time.After(time.Duration(r.TimeoutMS) * time.Millisecond):
		giveUp()
		g = <-done
		if g.err == nil {
			g.cancel() // granted as the wait gave up: released at once
		}
		return fail("fail", "lock not acquired within %d ms", r.TimeoutMS)
	}
	if g.err != nil {
		giveUp()
		return fail("fail", "lock: %v", g.err)
	}
	c.held = g.ctx
	c.release = func() { g.cancel(); giveUp() }
	return reply{"remaining_ms": c.remaining()}
}

func (c *client) unlock() reply {
	if c.held == nil {
		return fail("fail", "no lock held")
	}
	lost := c.held.Err() != nil
	c.release()
	c.held, c.release = nil, nil
	if lost {
		return fail("fail", "release: the library had already cancelled the lock's context")
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
			fmt.Fprintf(os.Stderr, "go-rueidislock: bad request %q: %v\n", in.Text(), err)
			os.Exit(2)
		}
		var rep reply
		switch {
		case r.Type == "init":
			rep = c.init(r)
		case c.locker == nil:
			rep = fail("fail", "%s before init", r.Type)
		case r.Type == "acquire":
			rep = c.acquire(r)
		case r.Type == "remaining":
			rep = reply{"remaining_ms": c.remaining()}
		case r.Type == "held":
			rep = reply{"held": c.live()}
		case r.Type == "release":
			rep = c.unlock()
		default:
			rep = fail("fail", "unknown request %q", r.Type)
		}
		if _, ok := rep["type"]; !ok {
			rep["type"] = r.Type + "_ok"
		}
		rep["id"] = r.ID
		if err := out.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "go-rueidislock:", err)
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
