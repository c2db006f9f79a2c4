package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/targets"
)

// client is the harness's end of one worker: its container, its connection,
// and the operation in flight. The history is recorded here, on the
// harness's clock: the invocation just before the operation is sent, each
// phase and the completion as they arrive.
//
// A worker whose connection ended (its container was killed) is dead until
// revive gives it a new connection (its container was restarted): the
// operation in flight when it died completes info, and the generator
// continues on it under a fresh process once it is up again (awaitUp).
type client struct {
	name string
	// lock is the lock of the worker's setup (Cluster.workerSetup): its
	// operations take it.
	lock      int
	container *runtime.Container
	rec       *history.Recorder
	workload  workloads.Workload
	// onFailpoint is told when the worker waits at its failpoint; it must
	// see that c.proceed(id) is called once.
	onFailpoint func(c *client, p history.Process, id, token int64)

	mu    sync.Mutex
	procs map[int64]history.Process // op id -> process
	// gaveUpAt: the ops whose worker gave up waiting at its failpoint.
	gaveUpAt map[int64]bool
	cur      *pending
	conn     *worker.Conn
	dead     error         // set when the connection ended, nil again once revived
	gone     chan struct{} // closed when the current connection's reader ended
	up       chan struct{} // closed while a connection is up; a new, open one once dead
}

// pending is the operation in flight on a client.
type pending struct {
	id      int64
	f       string
	invoke  json.RawMessage
	process history.Process
	// awaited is true until the completion is recorded: by the worker's done,
	// or as info by a timeout or the end of the connection.
	awaited bool
	typ     history.Type
	value   json.RawMessage // the completion's value as recorded
	done    chan struct{}   // closed when the worker finished the op or died
}

// completion decodes the recorded completion value into v.
func (p *pending) completion(v any) error { return json.Unmarshal(p.value, v) }

// dialWorker connects to a worker (retrying until it listens or ctx ends) and
// sets it up. program is the client program's name for itself, when the
// worker runs one.
func dialWorker(ctx context.Context, c *runtime.Container, setup worker.Setup) (cn *worker.Conn, program string, err error) {
	addr := net.JoinHostPort(c.IP, fmt.Sprint(worker.Port))
	var nc net.Conn
	for {
		d := net.Dialer{Timeout: time.Second, KeepAlive: 5 * time.Second}
		nc, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, "", fmt.Errorf("worker %s (%s) never listened: %w", c.Name, addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cn = worker.NewConn(nc)
	if err := cn.Send(worker.Message{Kind: worker.KindSetup, Protocol: worker.Protocol, Setup: &setup}); err != nil {
		cn.Close()
		return nil, "", fmt.Errorf("worker %s: %w", c.Name, err)
	}
	// The answer comes after the worker dialed the target: bound it.
	if dl, ok := ctx.Deadline(); ok {
		nc.SetReadDeadline(dl)
	}
	m, err := cn.Recv()
	nc.SetReadDeadline(time.Time{})
	if err != nil {
		cn.Close()
		return nil, "", fmt.Errorf("worker %s: setup: %w", c.Name, err)
	}
	if m.Kind != worker.KindReady {
		cn.Close()
		if m.BadConfig {
			// The worker's message already starts with the error's text.
			msg := strings.TrimPrefix(m.Error, targets.ErrBadConfig.Error()+": ")
			return nil, "", fmt.Errorf("worker %s: setup: %w: %s", c.Name, targets.ErrBadConfig, msg)
		}
		return nil, "", fmt.Errorf("worker %s: setup: %s", c.Name, m.Error)
	}
	return cn, m.Client, nil
}

func newClient(name string, c *runtime.Container, cn *worker.Conn, rec *history.Recorder, w workloads.Workload,
	onFailpoint func(*client, history.Process, int64, int64)) *client {
	cl := &client{name: name, container: c, conn: cn, rec: rec, workload: w, onFailpoint: onFailpoint,
		procs: map[int64]history.Process{}, gaveUpAt: map[int64]bool{}, gone: make(chan struct{}), up: make(chan struct{})}
	close(cl.up)
	go cl.read(cn, cl.gone)
	return cl
}

// read records what the worker reports on cn, until the connection ends;
// then it marks the client dead, ends the operation in flight, and closes
// gone.
func (c *client) read(cn *worker.Conn, gone chan struct{}) {
	for {
		m, err := cn.Recv()
		if err != nil {
			c.mu.Lock()
			c.dead = err
			c.up = make(chan struct{})
			if p := c.cur; p != nil {
				c.cur = nil
				close(p.done)
			}
			c.mu.Unlock()
			close(gone)
			return
		}
		switch m.Kind {
		case worker.KindPhase:
			c.mu.Lock()
			p, ok := c.procs[m.ID]
			c.mu.Unlock()
			if !ok {
				continue
			}
			var v any
			if len(m.Value) > 0 {
				v = m.Value
			}
			c.rec.Record(p, history.Phase, m.Phase, v)
			if m.Phase == history.PhaseFailpointTimeout {
				c.mu.Lock()
				c.gaveUpAt[m.ID] = true
				c.mu.Unlock()
			}
		case worker.KindFailpoint:
			c.mu.Lock()
			p, ok := c.procs[m.ID]
			c.mu.Unlock()
			if !ok || c.onFailpoint == nil {
				c.proceed(m.ID)
				continue
			}
			c.onFailpoint(c, p, m.ID, m.Token)
		case worker.KindDone:
			c.mu.Lock()
			p := c.cur
			if p == nil || p.id != m.ID {
				c.mu.Unlock()
				continue
			}
			if p.awaited {
				p.awaited = false
				p.typ, p.value = m.Type, m.Value
				c.rec.Record(p.process, m.Type, p.f, m.Value)
			} else {
				c.rec.Record(p.process, history.Phase, history.PhaseLate,
					history.Late{Type: m.Type, Completion: m.Value})
			}
			c.cur = nil
			close(p.done)
			c.mu.Unlock()
		}
	}
}

// gaveUp reports whether the worker said it gave up waiting at its
// failpoint in operation id.
func (c *client) gaveUp(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gaveUpAt[id]
}

// proceed lets the worker go on from its failpoint in operation id; it
// reports whether the message was sent.
func (c *client) proceed(id int64) bool {
	return c.send(worker.Message{Kind: worker.KindProceed, ID: id}) == nil
}

// send sends m on the current connection.
func (c *client) send(m worker.Message) error {
	c.mu.Lock()
	cn := c.conn
	c.mu.Unlock()
	return cn.Send(m)
}

// errDead: the worker's connection ended.
var errDead = errors.New("worker connection ended")

// invoke records the invocation and sends the operation.
func (c *client) invoke(p history.Process, id int64, f string, value any, override *workloads.Config) (*pending, error) {
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", errDead, c.dead)
	}
	if c.cur != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("harness: worker %s is still busy with op %d", c.name, c.cur.id)
	}
	pend := &pending{id: id, f: f, invoke: raw, process: p, awaited: true, done: make(chan struct{})}
	c.cur = pend
	c.procs[id] = p
	c.rec.Record(p, history.Invoke, f, json.RawMessage(raw))
	c.mu.Unlock()
	if err := c.send(worker.Message{Kind: worker.KindOp, ID: id, Process: p, F: f, Value: raw, Override: override}); err != nil {
		// The worker may or may not have it: the outcome is unknown.
		c.giveUp(pend, "send: "+err.Error())
		return pend, nil
	}
	return pend, nil
}

// giveUp records the operation as info if its completion is not recorded
// yet, and reports whether it did.
func (c *client) giveUp(p *pending, reason string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !p.awaited {
		return false
	}
	p.awaited = false
	p.typ = history.Info
	e := c.rec.Record(p.process, history.Info, p.f, c.workload.Unknown(p.invoke, reason))
	p.value = e.Value
	return true
}

// await waits for the operation's completion for at most timeout (or until
// ctx ends), records info if none came, and returns the completion type.
// After an info the worker may still be running the operation; finished
// tells when it is done with it.
func (c *client) await(ctx context.Context, p *pending, timeout time.Duration) history.Type {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		c.giveUp(p, "worker connection ended")
	case <-t.C:
		c.giveUp(p, "timeout")
	case <-ctx.Done():
		c.giveUp(p, "interrupted")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return p.typ
}

// finished waits until the worker is done with p (its late result came, or
// the connection ended) or ctx ends.
func (c *client) finished(ctx context.Context, p *pending) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isDead reports whether the worker's connection ended.
func (c *client) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead != nil
}

// close ends the connection and waits until its reader is done; the
// worker cancels what it runs. The client is dead until revive.
func (c *client) close() {
	c.mu.Lock()
	cn, gone := c.conn, c.gone
	c.mu.Unlock()
	cn.Close()
	<-gone
}

// revive gives a dead client a new connection to its worker (restarted);
// awaitUp returns from then on. It closes cn when the client is not dead
// (a connection is up already).
func (c *client) revive(cn *worker.Conn) {
	c.mu.Lock()
	if c.dead == nil {
		c.mu.Unlock()
		cn.Close()
		return
	}
	gone := make(chan struct{})
	up := c.up
	c.conn, c.dead, c.gone = cn, nil, gone
	c.mu.Unlock()
	go c.read(cn, gone)
	close(up)
}

// awaitUp waits until the client is connected (at once if it is), and
// reports whether it is; false when ctx ends first.
func (c *client) awaitUp(ctx context.Context) bool {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	select {
	case <-up:
		return true
	case <-ctx.Done():
		return false
	}
}

// ProgramInit is the init request the cluster's workers send their client
// program (client-check sends the same).
func (c *Cluster) ProgramInit() clientproto.Init { return worker.ProgramInit(c.setup) }
