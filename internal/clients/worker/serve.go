package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// Catalog finds the parts of a run by name: in a worker, the built-in
// tables (internal/clients/tables) and a Go API user's recipes; in the harness, the
// run's own parts.
type Catalog struct {
	Target   func(name string) (targets.Target, error)
	Workload func(name string) (workloads.Workload, error)
	Resource func(name string) (resources.Resource, error)
}

// Serve is the worker side of the protocol: `fencecheck worker` in a
// worker container. It serves one harness connection at a time until ctx
// ends.
func Serve(ctx context.Context, ln net.Listener, cat Catalog, log *slog.Logger) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker: accept: %w", err)
		}
		log.Info("harness connected", "from", c.RemoteAddr())
		err = serveConn(ctx, NewConn(c), cat, log)
		c.Close()
		log.Info("harness gone", "err", err)
	}
}

// DialClients dials the lock service and the resources of a setup (the
// worker's, or the harness's own for resets and final reads). In a worker
// (log not nil) with a client program, the program is the lock client; the
// target's own client still serves the resources that live in the lock
// service. On error everything dialled is closed.
func DialClients(ctx context.Context, cat Catalog, s Setup, log *slog.Logger) (c workloads.Clients, closeAll func(), err error) {
	var closers []func() error
	closeDialled := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	// Not closeAll, which an error's return sets to nil.
	defer func() {
		if err != nil {
			closeDialled()
		}
	}()
	c.OfLock = s.Config.Lock
	t, err := cat.Target(s.Target)
	if err != nil {
		return c, nil, err
	}
	c.Lock, err = t.Dial(ctx, s.Client)
	if err != nil {
		return c, nil, err
	}
	closers = append(closers, c.Lock.Close)
	own := c.Lock // the target's client: the lock-store's
	var prog *clientproto.Client
	if s.Program != nil && log != nil {
		prog, err = clientproto.Dial(ctx, *s.Program, ProgramInit(s), log.With("client", "program"))
		if err != nil {
			return c, nil, err
		}
		closers = append(closers, prog.Close)
		c.Lock = prog
		for _, rs := range s.Resources {
			if err := prog.Fits(string(rs.Fencing)); err != nil {
				return c, nil, fmt.Errorf("resource %s: %w", rs.Name, err)
			}
		}
		if prog.ImplementsResource() && len(s.Resources) > 1 {
			return c, nil, fmt.Errorf("%w: a client program that implements the resource access runs with one resource, not %d", targets.ErrBadConfig, len(s.Resources))
		}
	}
	for _, rs := range s.Resources {
		r, err := cat.Resource(rs.Name)
		if err != nil {
			return c, nil, err
		}
		st, err := r.Dial(ctx, rs.Config, own)
		if err != nil {
			return c, nil, fmt.Errorf("resource %s: %w", rs.Name, err)
		}
		closers = append(closers, st.Close)
		if prog != nil && prog.ImplementsResource() {
			st = prog.Access(st)
		}
		c.Resources = append(c.Resources, workloads.Resource{Name: rs.Name, Fencing: rs.Fencing, Store: st})
	}
	if s.Audit != nil {
		r, err := cat.Resource(s.Audit.Name)
		if err != nil {
			return c, nil, err
		}
		al, ok := r.(resources.AuditLogger)
		if !ok {
			return c, nil, fmt.Errorf("%w: resource %s keeps no audit log", targets.ErrBadConfig, s.Audit.Name)
		}
		c.Audit, err = al.DialAuditLog(ctx, s.Audit.Config)
		if err != nil {
			return c, nil, fmt.Errorf("audit log: %w", err)
		}
		closers = append(closers, c.Audit.Close)
	}
	return c, closeDialled, nil
}

// ProgramInit is the init request a worker's client program gets
// (client-check's probe sends the same).
func ProgramInit(s Setup) clientproto.Init {
	in := clientproto.Init{Target: s.Target, Endpoints: s.Client.Endpoints, TTLMS: s.Client.TTL.Milliseconds(),
		Prefix: s.Client.Prefix, RPCTimeoutMS: s.Client.RPCTimeout.Milliseconds(), Fencing: string(targets.FencingNone),
		Credentials: s.Client.Credentials}
	if s.Client.LockDelay != nil {
		d := s.Client.LockDelay.Milliseconds()
		in.LockDelayMS = &d
	}
	if len(s.Resources) > 0 {
		r := s.Resources[0]
		in.Fencing = string(r.Fencing)
		in.Resource = &clientproto.ResourceInfo{Name: r.Name, Endpoints: r.Config.Endpoints, Prefix: r.Config.Prefix}
	}
	return in
}

// serveConn serves one harness connection: its setup (setUp), then its
// operations, one at a time, in order, until the connection ends.
func serveConn(ctx context.Context, c *Conn, cat Catalog, log *slog.Logger) error {
	setup, w, clients, closeAll, err := setUp(ctx, c, cat, log)
	if err != nil || w == nil {
		return err // the harness was told, or cannot be
	}
	defer closeAll()

	// Operations run one at a time, in order; the connection is read all the
	// while so that a closed connection cancels the running operation.
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	sess := &session{c: c, log: log, proceed: make(chan int64, 16), bound: setup.FailpointTimeout}
	if sess.bound <= 0 {
		sess.bound = time.Minute
	}
	ops := make(chan Message, 64)
	readErr := make(chan error, 1)
	go func() {
		readErr <- sess.read(ops)
		stop()
	}()
	for m := range ops {
		cfg := setup.Config
		if m.Override != nil {
			cfg = *m.Override
		}
		id := m.ID
		report := sess.reporter(id)
		env := workloads.Env{Process: m.Process, Report: report, Failpoint: sess.failpoint(id, report),
			Skew: func() time.Duration { return time.Duration(sess.skew.Load()) }}
		typ, done := w.Execute(cctx, clients, cfg, m.F, m.Value, env)
		raw, _ := json.Marshal(done)
		log.Info("op", "id", id, "f", m.F, "invoke", string(m.Value), "type", typ, "done", string(raw))
		if err := c.Send(Message{Kind: KindDone, ID: id, Type: typ, Value: raw}); err != nil {
			return err
		}
	}
	err = <-readErr
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// setUp reads the harness's setup, checks its protocol, finds its
// workload, dials its clients and answers ready. When the setup cannot be
// served it tells the harness why and returns a nil workload (and the
// error of telling it).
func setUp(ctx context.Context, c *Conn, cat Catalog, log *slog.Logger) (setup Setup, w workloads.Workload, clients workloads.Clients, closeAll func(), err error) {
	m, err := c.Recv()
	if err != nil {
		return setup, nil, clients, nil, err
	}
	refuse := func(m Message) (Setup, workloads.Workload, workloads.Clients, func(), error) {
		m.Kind = KindError
		return setup, nil, clients, nil, c.Send(m)
	}
	if m.Kind != KindSetup || m.Setup == nil {
		return refuse(Message{Error: "first message must be setup"})
	}
	if m.Protocol != Protocol {
		return refuse(Message{Error: fmt.Sprintf("this worker binary speaks protocol %d, the harness %d: "+
			"build both from the same source (make build builds bin/fencecheck and bin/fencecheck-worker)", Protocol, m.Protocol)})
	}
	setup = *m.Setup
	if w, err = cat.Workload(setup.Workload); err != nil {
		return refuse(Message{Error: err.Error()})
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	clients, closeAll, err = DialClients(dctx, cat, setup, log)
	cancel()
	if err != nil {
		return refuse(Message{Error: err.Error(), BadConfig: errors.Is(err, targets.ErrBadConfig)})
	}
	log.Info("set up", "target", setup.Target, "endpoints", setup.Client.Endpoints, "workload", setup.Workload,
		"resources", setup.Resources, "config", setup.Config)
	ready := Message{Kind: KindReady}
	if p, ok := clients.Lock.(*clientproto.Client); ok {
		ready.Client = p.Name()
	}
	if err := c.Send(ready); err != nil {
		closeAll()
		return setup, nil, clients, nil, err
	}
	return setup, w, clients, closeAll, nil
}

// session is a set-up connection's state besides its operations: the
// harness's proceeds, the lease clock's offset, the failpoint's bound.
type session struct {
	c       *Conn
	log     *slog.Logger
	proceed chan int64
	skew    atomic.Int64 // the lease clock's offset, set by clock-skew:client
	bound   time.Duration
}

// read reads the connection until it ends: skews and proceeds are taken
// at once, operations queued on ops (closed when read returns). It
// returns why it ended.
func (s *session) read(ops chan<- Message) error {
	defer close(ops)
	for {
		m, err := s.c.Recv()
		if err != nil {
			return err
		}
		switch m.Kind {
		case KindSkew:
			s.skew.Store(int64(m.Skew))
			s.log.Info("lease clock skewed", "offset", m.Skew)
		case KindProceed:
			select {
			case s.proceed <- m.ID:
			default:
				s.log.Warn("proceed dropped", "op", m.ID)
			}
		case KindOp:
			ops <- m
		default:
			return fmt.Errorf("unexpected %q message", m.Kind)
		}
	}
}

// reporter sends operation id's phases to the harness.
func (s *session) reporter(id int64) func(phase string, v any) {
	return func(phase string, v any) {
		var raw json.RawMessage
		if v != nil {
			raw, _ = json.Marshal(v)
		}
		if err := s.c.Send(Message{Kind: KindPhase, ID: id, Phase: phase, Value: raw}); err != nil {
			s.log.Warn("phase not sent", "op", id, "phase", phase, "err", err)
		}
	}
}

// failpoint is operation id's failpoint (workloads.Env.Failpoint): it
// tells the harness, and waits for its proceed, at most the bound.
func (s *session) failpoint(id int64, report func(string, any)) func(ctx context.Context, token int64) bool {
	return func(ctx context.Context, token int64) bool {
		if err := s.c.Send(Message{Kind: KindFailpoint, ID: id, Token: token}); err != nil {
			return false
		}
		t := time.NewTimer(s.bound)
		defer t.Stop()
		for {
			select {
			case got := <-s.proceed:
				if got == id {
					return true
				}
			case <-t.C:
				// A proceed that came while the worker was frozen is
				// read now: give it a moment before giving up.
				select {
				case got := <-s.proceed:
					if got == id {
						return true
					}
				case <-time.After(time.Second):
				}
				// The harness never answered: go on, and say so.
				report(history.PhaseFailpointTimeout, nil)
				s.log.Warn("failpoint: no proceed", "op", id, "after", s.bound)
				return false
			case <-ctx.Done():
				return false
			}
		}
	}
}
