package clientproto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// Client is a client program as the lock service's client of a worker
// (targets.Client): Acquire, the lease's Remaining and Release are requests
// to the program.
type Client struct {
	p   *Process
	rpc time.Duration
	// init's reply
	resource bool
	believes bool // implements held
	tokens   bool
	name     string
}

// Dial starts the program, sends init and checks its reply against the
// run: a program whose leases carry no token cannot run with a fencing
// mode other than none unless it implements the resource access itself;
// cas fencing needs the program's own resource access (only the lock's own
// client can tie a write to its lock). Errors wrap targets.ErrBadConfig when
// the program cannot run with this configuration.
func Dial(ctx context.Context, prog Program, init Init, log *slog.Logger) (*Client, error) {
	p := NewProcess(prog, init, log)
	r, err := p.Start(ctx)
	if err != nil {
		return nil, err
	}
	c := &Client{p: p, rpc: time.Duration(init.RPCTimeoutMS) * time.Millisecond, tokens: *r.Tokens, name: clipTo(r.Name, MaxName)}
	for _, s := range r.Implements {
		switch s {
		case ImplResource:
			c.resource = true
		case ImplHeld:
			c.believes = true
		}
	}
	if err := c.Fits(init.Fencing); err != nil {
		p.Close()
		return nil, err
	}
	return c, nil
}

// Fits checks that the program can run with fencing mode f at a resource
// (every resource of the run must be checked). Errors wrap
// targets.ErrBadConfig.
func (c *Client) Fits(f string) error {
	if c.resource {
		return nil
	}
	switch targets.Fencing(f).Applied() {
	case targets.FencingNone:
		return nil
	case targets.FencingCAS:
		return fmt.Errorf("%w: cas fencing ties a write to the lock's own state, which a client program that implements only the lock cannot offer (implement \"resource\" in the program, or use --fencing token)", targets.ErrBadConfig)
	}
	if !c.tokens {
		return fmt.Errorf("%w: the client program's leases carry no fencing token (init_ok: \"tokens\": false), so it cannot run with --fencing %s", targets.ErrBadConfig, f)
	}
	return nil
}

// MaxName bounds the program's name for itself, in bytes: it goes into
// test.json, the report and the zoo's page.
const MaxName = 256

// Name is the program's name for itself (init_ok's, cut to MaxName bytes),
// or its command line.
func (c *Client) Name() string {
	if c.name != "" {
		return c.name
	}
	return c.p.prog.String()
}

// Process is the program's process handle.
func (c *Client) Process() *Process { return c.p }

// ImplementsResource reports whether the program reads and writes the
// resource itself.
func (c *Client) ImplementsResource() bool { return c.resource }

// Acquire asks the program for the lock; the program may wait until ctx's
// deadline (its timeout_ms).
func (c *Client) Acquire(ctx context.Context) (targets.Lease, error) {
	wait := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if wait <= 0 {
		return nil, context.DeadlineExceeded
	}
	r, gen, err := c.p.callGen(ctx, Request{Type: TypeAcquire, TimeoutMS: max(1, ms(wait))}, wait)
	if err != nil {
		return nil, err
	}
	l := &lease{c: c, gen: gen, acquired: time.Now()}
	if r.Token != nil {
		l.token = *r.Token
	} else if c.tokens {
		return nil, c.p.malformed(TypeAcquire, `acquire_ok has no "token" although init_ok said "tokens": true`)
	}
	if r.RemainingMS != nil {
		l.remaining = time.Duration(*r.RemainingMS) * time.Millisecond
	}
	if c.believes {
		return believingLease{l}, nil
	}
	return l, nil
}

// Believes reports whether the program answers held (init_ok's implements).
func (c *Client) Believes() bool { return c.believes }

// Close ends the program.
func (c *Client) Close() error { return c.p.Close() }

// rpcTimeout bounds a request other than acquire.
func (c *Client) rpcTimeout() time.Duration {
	if c.rpc > 0 {
		return c.rpc
	}
	return 10 * time.Second
}

// lease is a lock the program said it holds. It belongs to one process:
// once that process is retired, the lease is lost (Remaining 0, Release an
// error).
type lease struct {
	c         *Client
	gen       int
	token     int64
	acquired  time.Time
	remaining time.Duration // at acquire, as the program said
}

func (l *lease) Token() int64 { return l.token }

// lost reports whether the process that took the lease is gone.
func (l *lease) lost() bool { return !l.c.p.runs(l.gen) }

// Remaining asks the program. Any failure (the program's error, no reply, a
// lost process) is 0: a careful client does not write on a lease it cannot
// vouch for.
func (l *lease) Remaining() time.Duration {
	if l.lost() {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.c.rpcTimeout())
	defer cancel()
	r, err := l.c.p.CallHeld(ctx, l.gen, Request{Type: TypeRemaining}, l.c.rpcTimeout())
	if err != nil || r.RemainingMS == nil || l.lost() {
		return 0
	}
	return time.Duration(*r.RemainingMS) * time.Millisecond
}

// believingLease is the lease of a program that answers held: a
// targets.Believer.
type believingLease struct{ *lease }

// programLease is l as a lease of a client program's, whether it answers
// held or not.
func programLease(l targets.Lease) (*lease, bool) {
	switch l := l.(type) {
	case *lease:
		return l, true
	case believingLease:
		return l.lease, true
	}
	return nil, false
}

// Held asks the program whether its library still believes it holds the
// lock. A retired process holds nothing: false, without asking. The
// question waits for the request in flight (one at a time); if ctx ended
// meanwhile, it is not sent (ctx's error: no answer). Once sent, its reply
// is awaited for the RPC timeout whatever ctx does, so that a belief
// sampler's bound never retires the program: an answer that comes late is
// taken late. The program's error, or a held_ok without "held", is no
// answer (the latter retires the process, as any malformed reply).
func (l believingLease) Held(ctx context.Context) (bool, error) {
	if l.lost() {
		return false, nil
	}
	r, err := l.c.p.callHeldIfLive(ctx, l.gen, Request{Type: TypeHeld}, l.c.rpcTimeout())
	if err != nil {
		return false, err
	}
	if r.Held == nil {
		return false, l.c.p.malformed(TypeHeld, `held_ok has no "held"`)
	}
	return *r.Held, nil
}

func (l *lease) Release(ctx context.Context) error {
	if l.lost() {
		return errors.New("client program: release: the process that held the lock was retired")
	}
	_, err := l.c.p.CallHeld(ctx, l.gen, Request{Type: TypeRelease}, l.c.rpcTimeout())
	return err
}

// Access wraps a resource's store so that the program reads and writes it
// (a program that implements "resource"); Reset and Close stay the store's.
func (c *Client) Access(s resources.Store) resources.Store {
	return access{Store: s, c: c}
}

type access struct {
	resources.Store
	c *Client
}

func (a access) request(typ string, ac resources.Access) Request {
	req := Request{Type: typ, Fencing: string(ac.Fencing.Applied())}
	if ac.Lease != nil {
		if l, ok := programLease(ac.Lease); !ok || l.c.tokens {
			t := ac.Lease.Token()
			req.Token = &t
		}
	}
	return req
}

// call sends a resource request: one made under a lease of the program's
// goes only to the process that took it.
func (a access) call(ctx context.Context, req Request, ac resources.Access) (Reply, error) {
	if l, ok := programLease(ac.Lease); ok {
		return a.c.p.CallHeld(ctx, l.gen, req, a.c.rpcTimeout())
	}
	return a.c.p.Call(ctx, req, a.c.rpcTimeout())
}

func (a access) Read(ctx context.Context, ac resources.Access) (resources.State, error) {
	r, err := a.call(ctx, a.request(TypeRead, ac), ac)
	if err != nil {
		return resources.State{}, err
	}
	switch r.Result {
	case "", ResultOK:
	case ResultFenced:
		return resources.State{}, fmt.Errorf("%w: the client program's read was fenced", resources.ErrFenced)
	default:
		return resources.State{}, &Error{Request: TypeRead, Kind: KindInfo, Cause: "reply", Message: fmt.Sprintf("result %q", r.Result)}
	}
	if r.Value == nil {
		// Not an empty list ([] is one): writing on it would wipe the list.
		return resources.State{}, a.c.p.malformed(TypeRead, `read_ok has no "value"`)
	}
	return resources.State{List: r.Value}, nil
}

func (a access) Write(ctx context.Context, ac resources.Access, _ resources.State, list []int64) (int64, error) {
	req := a.request(TypeWrite, ac)
	req.Value = list
	if req.Value == nil {
		req.Value = []int64{}
	}
	r, err := a.call(ctx, req, ac)
	if err != nil {
		// The Store contract knows fenced and unknown; a plain failure is
		// reported as unknown, which is always sound.
		return 0, err
	}
	switch r.Result {
	case "", ResultOK:
		return r.Rev, nil
	case ResultFenced:
		return 0, fmt.Errorf("%w: the client program's write was fenced", resources.ErrFenced)
	}
	return 0, &Error{Request: TypeWrite, Kind: KindInfo, Cause: "reply", Message: fmt.Sprintf("result %q", r.Result)}
}
