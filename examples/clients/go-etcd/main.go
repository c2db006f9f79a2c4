// Command go-etcd is a fencecheck client program in Go: etcd's own
// concurrency.Mutex, driven over fencecheck's client protocol (JSON lines on
// stdin and stdout, docs/client-protocol.md). It is what a team's Go helper
// around etcd's Mutex looks like: a lease of the run's TTL kept alive, the
// mutex locked on it, and the lock key's create revision as the fencing
// token. fencecheck reads and writes the resource itself with that token.
// It answers held (--recheck, the belief sampler) with the session's Done
// channel: the library's own word on whether its lease still lives.
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
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
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

// client is one worker's etcd client and the lock it holds, if any.
type client struct {
	cli  *clientv3.Client
	ttl  time.Duration
	rpc  time.Duration
	key  string
	held *held
}

// held is a locked mutex, its lease and when that lease runs out, as the
// keepalive answers tell.
type held struct {
	mu    *concurrency.Mutex
	sess  *concurrency.Session
	stop  context.CancelFunc
	token int64

	m      sync.Mutex
	expiry time.Time
}

func (h *held) remaining() time.Duration {
	h.m.Lock()
	defer h.m.Unlock()
	return time.Until(h.expiry)
}

func (c *client) init(r request) reply {
	cli, err := clientv3.New(clientv3.Config{Endpoints: r.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fail("fail", "etcd client: %v", err)
	}
	c.cli, c.ttl, c.rpc, c.key = cli, time.Duration(r.TTLMS)*time.Millisecond, time.Duration(r.RPCTimeoutMS)*time.Millisecond, r.Prefix+"/client-lock"
	return reply{"implements": []string{"lock", "held"}, "tokens": true, "name": "etcd concurrency.Mutex (Go)"}
}

func (c *client) acquire(r request) reply {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.TimeoutMS)*time.Millisecond)
	defer cancel()
	sent := time.Now()
	gctx, gcancel := context.WithTimeout(ctx, c.rpc)
	g, err := c.cli.Grant(gctx, int64(c.ttl/time.Second))
	gcancel()
	if err != nil {
		return fail("fail", "grant: %v", err)
	}
	lctx, stop := context.WithCancel(context.Background())
	h := &held{stop: stop, expiry: sent.Add(time.Duration(g.TTL) * time.Second)}
	abandon := func() {
		stop()
		rctx, cancel := context.WithTimeout(context.Background(), c.rpc)
		defer cancel()
		_, _ = c.cli.Revoke(rctx, g.ID)
	}
	ka, err := c.cli.KeepAlive(lctx, g.ID)
	if err != nil {
		abandon()
		return fail("fail", "keepalive: %v", err)
	}
	go func() {
		for k := range ka {
			if k.TTL > 0 {
				h.m.Lock()
				h.expiry = time.Now().Add(time.Duration(k.TTL) * time.Second)
				h.m.Unlock()
			}
		}
	}()
	h.sess, err = concurrency.NewSession(c.cli, concurrency.WithLease(g.ID), concurrency.WithContext(lctx))
	if err != nil {
		abandon()
		return fail("fail", "session: %v", err)
	}
	h.mu = concurrency.NewMutex(h.sess, c.key)
	if err := h.mu.Lock(ctx); err != nil {
		abandon()
		// A Lock cut short by its deadline may have put its key: with the
		// lease revoked it is gone again. Nothing was granted to us.
		return fail("fail", "lock: %v", err)
	}
	cr, ok := h.mu.IsOwner().TargetUnion.(*pb.Compare_CreateRevision)
	if !ok {
		abandon()
		return fail("info", "mutex ownership is not a create-revision compare")
	}
	h.token = cr.CreateRevision
	c.held = h
	return reply{"token": h.token, "remaining_ms": h.remaining().Milliseconds()}
}

func (c *client) remaining() reply {
	if c.held == nil {
		return reply{"remaining_ms": 0}
	}
	return reply{"remaining_ms": max(0, c.held.remaining().Milliseconds())}
}

// believes is the held answer: the library's own signal, the session's
// Done channel, not yet closed (its keepalive has not given the lease up).
func (c *client) believes() reply {
	if c.held == nil {
		return reply{"held": false}
	}
	select {
	case <-c.held.sess.Done():
		return reply{"held": false}
	default:
		return reply{"held": true}
	}
}

func (c *client) release() reply {
	h := c.held
	c.held = nil
	if h == nil {
		return fail("fail", "no lock held")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.rpc)
	err := h.mu.Unlock(ctx)
	cancel()
	h.stop()
	rctx, cancel := context.WithTimeout(context.Background(), c.rpc)
	defer cancel()
	if _, rerr := c.cli.Revoke(rctx, h.sess.Lease()); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
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
			fmt.Fprintf(os.Stderr, "go-etcd: bad request %q: %v\n", in.Text(), err)
			os.Exit(2)
		}
		var rep reply
		switch {
		case r.Type == "init":
			rep = c.init(r)
		case c.cli == nil:
			rep = fail("fail", "%s before init", r.Type)
		case r.Type == "acquire":
			rep = c.acquire(r)
		case r.Type == "remaining":
			rep = c.remaining()
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
			fmt.Fprintln(os.Stderr, "go-etcd:", err)
			os.Exit(1)
		}
	}
}
