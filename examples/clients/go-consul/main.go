// Command go-consul is a fencecheck client program in Go: HashiCorp's
// consul api Lock (github.com/hashicorp/consul/api), driven over
// fencecheck's client protocol (JSON lines on stdin and stdout,
// docs/client-protocol.md).
//
// The recipe is the one the api package documents: client.LockOpts with the
// key, a session TTL of the run's TTL (at least Consul's 10 s) and the
// run's lock-delay when it is above 0 (LockDelay 0 is the api's way of
// asking for Consul's default, 15 s, so a lock-delay of 0 cannot be had
// through it); Lock(stopCh) blocks until the lock is held and returns
// a channel that is closed when it is lost; Unlock releases it. The api
// renews the session every half TTL in the background. It gives no lease
// time, only that channel: the time left is the session TTL while the
// channel is open, else 0, which is how its callers use it.
//
// It answers held (--recheck, the belief sampler) with that channel, the
// api's only word on the lock: held while it is open.
//
// Token (with --fencing token): the lock key's ModifyIndex, read after the
// grant (Consul's indexes only grow), and only if the key still holds this
// grant's value (LockOptions.Value): a holder stalled between the grant
// and the read would otherwise take a later holder's index for its own.
// Unfenced, the grants carry none.
//
// client.json builds it on the machine that runs fencecheck (go build) and
// starts ./client in each worker container.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

type request struct {
	ID           int64    `json:"id"`
	Type         string   `json:"type"`
	Endpoints    []string `json:"endpoints"`
	TTLMS        int64    `json:"ttl_ms"`
	Prefix       string   `json:"prefix"`
	Fencing      string   `json:"fencing"`
	LockDelayMS  *int64   `json:"lock_delay_ms"`
	RPCTimeoutMS int64    `json:"rpc_timeout_ms"`
	TimeoutMS    int64    `json:"timeout_ms"`
}

type reply map[string]any

func fail(kind, format string, args ...any) reply {
	return reply{"type": "error", "kind": kind, "message": fmt.Sprintf(format, args...)}
}

type client struct {
	api       *api.Client
	key       string
	ttl       time.Duration
	lockDelay time.Duration
	fenced    bool
	id        string // this process's, in the lock key's value
	grant     int
	lock      *api.Lock
	lost      <-chan struct{}
}

func (c *client) init(r request) reply {
	cfg := api.DefaultConfig()
	cfg.Address = r.Endpoints[0]
	cfg.HttpClient = nil
	cfg.WaitTime = time.Duration(r.RPCTimeoutMS) * time.Millisecond / 2
	cli, err := api.NewClient(cfg)
	if err != nil {
		return fail("fail", "consul client: %v", err)
	}
	c.api, c.key = cli, strings.TrimPrefix(r.Prefix, "/")+"/client-lock"
	c.ttl = max(time.Duration(r.TTLMS)*time.Millisecond, 10*time.Second)
	if r.LockDelayMS != nil {
		c.lockDelay = time.Duration(*r.LockDelayMS) * time.Millisecond
	}
	c.fenced = r.Fencing != "" && r.Fencing != "none"
	c.id, _ = os.Hostname()
	return reply{"implements": []string{"lock", "held"}, "tokens": c.fenced, "name": "consul api " + moduleVersion("github.com/hashicorp/consul/api") + " Lock"}
}

func (c *client) remaining() int64 {
	if c.lock == nil {
		return 0
	}
	select {
	case <-c.lost:
		return 0
	default:
		return c.ttl.Milliseconds()
	}
}

// believes is the held answer: the lock's lost channel not yet closed.
func (c *client) believes() bool {
	if c.lock == nil {
		return false
	}
	select {
	case <-c.lost:
		return false
	default:
		return true
	}
}

func (c *client) acquire(r request) reply {
	if c.lock != nil {
		return fail("fail", "already holding the lock")
	}
	// The key's value names this grant (LockOptions.Value), so that the
	// token read after it can tell the grant's key from a later holder's.
	c.grant++
	value := []byte(fmt.Sprintf("%s/%d/%d", c.id, os.Getpid(), c.grant))
	opts := &api.LockOptions{Key: c.key, Value: value, SessionTTL: c.ttl.String(), LockWaitTime: time.Duration(r.TimeoutMS) * time.Millisecond, LockTryOnce: true}
	if c.lockDelay > 0 {
		opts.LockDelay = c.lockDelay
	}
	lock, err := c.api.LockOpts(opts)
	if err != nil {
		return fail("fail", "lock: %v", err)
	}
	lost, err := lock.Lock(nil)
	if err != nil {
		return fail("info", "lock: %v", err)
	}
	if lost == nil {
		return fail("fail", "lock not acquired within %d ms", r.TimeoutMS)
	}
	c.lock, c.lost = lock, lost
	rep := reply{}
	if c.fenced {
		kv, _, err := c.api.KV().Get(c.key, &api.QueryOptions{RequireConsistent: true})
		if err != nil || kv == nil {
			c.release()
			return fail("info", "acquired, but the lock key could not be read: %v", err)
		}
		if kv.Session == "" || !bytes.Equal(kv.Value, value) {
			// The session lapsed between the grant and the read (a
			// stalled process), and the key is another holder's now:
			// its index is not this grant's token.
			c.release()
			return fail("fail", "the lock was lost before its token could be read (the key holds %q)", kv.Value)
		}
		rep["token"] = kv.ModifyIndex
	}
	rep["remaining_ms"] = c.remaining()
	return rep
}

func (c *client) release() reply {
	lock := c.lock
	c.lock = nil
	if lock == nil {
		return fail("fail", "no lock held")
	}
	if err := lock.Unlock(); err != nil {
		if err == api.ErrLockNotHeld {
			return fail("fail", "release: %v", err)
		}
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
			fmt.Fprintf(os.Stderr, "go-consul: bad request %q: %v\n", in.Text(), err)
			os.Exit(2)
		}
		var rep reply
		switch {
		case r.Type == "init":
			rep = c.init(r)
		case c.api == nil:
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
			fmt.Fprintln(os.Stderr, "go-consul:", err)
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
