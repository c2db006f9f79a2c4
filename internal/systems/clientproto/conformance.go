package clientproto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"
)

// Step is one check of the conformance run: its name, whether it passed,
// what was seen, and the offending line of a malformed reply. Detail and
// Line hold at most MaxDetail bytes each (a longer one is cut, saying how
// much was left out), so that a program's megabyte of error text cannot
// make the step's report too long to read.
type Step struct {
	Name    string        `json:"name"`
	OK      bool          `json:"ok"`
	Detail  string        `json:"detail"`
	Line    string        `json:"line,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
}

// ConformOptions bounds a conformance run.
type ConformOptions struct {
	// Timeout bounds each reply (acquires wait for the lock up to
	// AcquireTimeout besides).
	Timeout        time.Duration
	AcquireTimeout time.Duration
}

// Conform runs a client program through the protocol against a real lock
// service (init's endpoints) and returns each check, in order: init, a
// first acquire (token and time left), remaining, held when the program
// implements it (true of the lock just granted), mutual exclusion (a second
// process of the program must not get the lock while the first holds it),
// release, handover (the second process gets it, with a higher token), the
// resource access when implemented (write, read back, a stale token's write
// refused under token fencing), and an unknown request (it must be
// answered with an error). A check that cannot run because an earlier one
// failed is left out: a request of a lease goes only to the process that
// took the lease (CallHeld), never to a fresh one that holds nothing, and
// the resource's read and stale write only follow a write that passed.
// Every process is retired at the end; report, if not nil, is told of
// each step as it ends.
func Conform(ctx context.Context, prog Program, init Init, o ConformOptions, log *slog.Logger, report func(Step)) []Step {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.AcquireTimeout <= 0 {
		o.AcquireTimeout = 5 * time.Second
	}
	ttl := time.Duration(init.TTLMS) * time.Millisecond
	// The most time a lease may have left, TTL and a second: compared in
	// milliseconds, as the program says it, before any conversion.
	maxLeftMS := init.TTLMS + time.Second.Milliseconds()
	c := &conformance{ctx: ctx, init: init, o: o, ttl: ttl, maxLeftMS: maxLeftMS, report: report}
	a := NewProcess(prog, init, log.With("process", "A"))
	b := NewProcess(prog, init, log.With("process", "B"))
	a.InitTimeout, b.InitTimeout = o.Timeout, o.Timeout
	defer a.Close()
	defer b.Close()

	// init
	t := time.Now()
	r, err := a.Start(ctx)
	if !c.add("init", t, err, fmt.Sprintf("%q implements %v, tokens %v", r.Name, r.Implements, r.Tokens != nil && *r.Tokens)) {
		return c.steps
	}
	c.tokens = *r.Tokens
	resource := slices.Contains(r.Implements, ImplResource)
	believes := slices.Contains(r.Implements, ImplHeld)

	// acquire
	t = time.Now()
	first, genA, err := c.acquire(a, o.AcquireTimeout)
	if !c.add("acquire", t, err, fmt.Sprintf("%s, remaining %d ms", tokenText(first), deref(first.RemainingMS))) {
		return c.steps
	}

	// remaining
	t = time.Now()
	r, ran, err := c.held(a, genA, Request{Type: TypeRemaining})
	if err == nil {
		switch {
		case r.RemainingMS == nil:
			err = errors.New(`remaining_ok has no "remaining_ms"`)
		case *r.RemainingMS < 0 || *r.RemainingMS > maxLeftMS:
			err = fmt.Errorf("remaining_ms %d is not within [0, TTL %s]", *r.RemainingMS, ttl)
		}
	}
	if ran {
		c.add("remaining", t, err, fmt.Sprintf("%d ms", deref(r.RemainingMS)))
	}

	// held (when implemented): the library believes it holds the lock it
	// was just granted.
	if believes && a.runs(genA) {
		t = time.Now()
		r, ran, err = c.held(a, genA, Request{Type: TypeHeld})
		if err == nil {
			switch {
			case r.Held == nil:
				err = errors.New(`held_ok has no "held"`)
			case !*r.Held:
				err = errors.New(`the library says "held": false of the lock it was just granted`)
			}
		}
		if ran {
			c.add("held", t, err, fmt.Sprintf("held %v", r.Held != nil && *r.Held))
		}
	}
	if !a.runs(genA) {
		// A was retired (a malformed reply): whether it holds the lock is
		// unknown, so exclusion, release and what follows cannot run.
		return c.steps
	}

	// exclusion: B must not get the lock while A holds it.
	t = time.Now()
	wait := min(time.Second, ttl/2)
	r, err = b.Call(ctx, Request{Type: TypeAcquire, TimeoutMS: ms(wait)}, wait+o.Timeout)
	var e *Error
	switch {
	case err == nil:
		err = fmt.Errorf("a second process got the lock (%s) while the first held it", tokenText(r))
	case errors.As(err, &e) && e.Cause == "reply":
		err = nil // refused, as it should be
	}
	c.add("exclusion", t, err, fmt.Sprintf("a second process was refused within %s", wait))

	// release: not when A was retired (its lock stays until the lease
	// ends), and then nothing after it can run either.
	t = time.Now()
	_, ran, err = c.held(a, genA, Request{Type: TypeRelease})
	if !ran || !c.add("release", t, err, "") {
		return c.steps
	}

	// handover
	t = time.Now()
	second, genB, err := c.acquire(b, o.AcquireTimeout)
	if err == nil && c.tokens && *second.Token <= *first.Token {
		err = fmt.Errorf("token %d after token %d: a fencing token must grow with every grant", *second.Token, *first.Token)
	}
	if !c.add("handover", t, err, fmt.Sprintf("the second process got the lock, %s", tokenText(second))) {
		return c.steps
	}

	if resource {
		c.resource(a, b, first, second, genB)
	}

	t = time.Now()
	if _, ran, err = c.held(b, genB, Request{Type: TypeRelease}); ran {
		c.add("release", t, err, "the second process released")
	}

	// unknown request: answered, with an error.
	t = time.Now()
	_, err = a.Call(ctx, Request{Type: "fencecheck-probe"}, o.Timeout)
	switch {
	case err == nil:
		err = errors.New(`an unknown request type was answered as a success (want an error reply)`)
	case errors.As(err, &e) && e.Cause == "reply":
		err = nil
	}
	c.add("unknown request", t, err, "answered with an error")
	return c.steps
}

// conformance is one run of Conform: what the checks share, and the steps
// so far.
type conformance struct {
	ctx  context.Context
	init Init
	o    ConformOptions
	ttl  time.Duration
	// maxLeftMS is the most time a lease may have left.
	maxLeftMS int64
	// tokens is whether the program said it gives tokens.
	tokens bool
	steps  []Step
	report func(Step)
}

// add records a step that began at start and failed with err (if not nil),
// and tells whether it passed.
func (c *conformance) add(name string, start time.Time, err error, detail string) bool {
	s := Step{Name: name, OK: err == nil, Detail: detail, Elapsed: time.Since(start).Round(time.Millisecond)}
	if err != nil {
		s.Detail = err.Error()
		var e *Error
		if errors.As(err, &e) {
			s.Line = e.Line
		}
	}
	s = ClipStep(s)
	c.steps = append(c.steps, s)
	if c.report != nil {
		c.report(s)
	}
	return err == nil
}

// acquire asks p for the lock, waiting up to wait, and checks the grant; it
// also returns the generation of the process that took the lock, for held.
func (c *conformance) acquire(p *Process, wait time.Duration) (Reply, int, error) {
	r, gen, err := p.callGen(c.ctx, Request{Type: TypeAcquire, TimeoutMS: ms(wait)}, wait+c.o.Timeout)
	if err != nil {
		return r, gen, err
	}
	err = checkAcquired(r, c.tokens, c.maxLeftMS, c.ttl)
	return r, gen, err
}

// held sends a request of the lease that process gen of p took; ran is
// false when that process was retired: nothing was sent, and the check
// cannot run.
func (c *conformance) held(p *Process, gen int, req Request) (r Reply, ran bool, err error) {
	r, err = p.CallHeld(c.ctx, gen, req, c.o.Timeout)
	var e *Error
	if errors.As(err, &e) && e.Cause == "lost" {
		return r, false, nil
	}
	return r, true, err
}

// tokenText describes an acquire_ok's token.
func tokenText(r Reply) string {
	if r.Token == nil {
		return "no token"
	}
	return fmt.Sprintf("token %d", *r.Token)
}

// resource checks the resource access of a program that implements it: b
// (generation genB, granted second) writes and reads back, and under token
// fencing a's write with first's token is refused.
func (c *conformance) resource(a, b *Process, first, second Reply, genB int) {
	t := time.Now()
	w := Request{Type: TypeWrite, Token: second.Token, Fencing: c.init.Fencing, Value: []int64{1, 2}}
	r, ran, err := c.held(b, genB, w)
	if err == nil && r.Result != "" && r.Result != ResultOK {
		err = fmt.Errorf("write with the holder's token: result %q (want ok)", r.Result)
	}
	wrote := ran && c.add("write", t, err, "[1,2] written")
	t = time.Now()
	if wrote {
		r, ran, err = c.held(b, genB, Request{Type: TypeRead, Token: second.Token, Fencing: c.init.Fencing})
		if err == nil && !slices.Equal(r.Value, []int64{1, 2}) {
			err = fmt.Errorf("read back %v after writing [1,2]", r.Value)
		}
		if ran {
			c.add("read", t, err, fmt.Sprintf("%v", r.Value))
		}
	}
	if wrote && c.tokens && c.init.Fencing == "token" {
		t = time.Now()
		r, err = a.Call(c.ctx, Request{Type: TypeWrite, Token: first.Token, Fencing: c.init.Fencing, Value: []int64{9}}, c.o.Timeout)
		if err == nil && r.Result != ResultFenced {
			err = fmt.Errorf("a write with the old token %d was not refused (result %q)", *first.Token, r.Result)
		}
		c.add("stale write", t, err, fmt.Sprintf("token %d refused", *first.Token))
	}
}

// checkAcquired checks an acquire_ok: a token exactly when init_ok said
// "tokens", and a time left within (0, maxLeftMS], compared in
// milliseconds (ttl is for the message).
func checkAcquired(r Reply, tokens bool, maxLeftMS int64, ttl time.Duration) error {
	switch {
	case tokens && r.Token == nil:
		return errors.New(`acquire_ok has no "token" although init_ok said "tokens": true`)
	case !tokens && r.Token != nil:
		return errors.New(`acquire_ok has a "token" although init_ok said "tokens": false`)
	case r.RemainingMS == nil:
		return errors.New(`acquire_ok has no "remaining_ms"`)
	case *r.RemainingMS <= 0 || *r.RemainingMS > maxLeftMS:
		return fmt.Errorf("remaining_ms %d is not within (0, TTL %s]", *r.RemainingMS, ttl)
	}
	return nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// MaxDetail bounds a Step's Detail and Line, in bytes.
const MaxDetail = 4 << 10

// ClipStep returns s with its Detail and Line cut to MaxDetail bytes.
func ClipStep(s Step) Step {
	s.Detail, s.Line = clipDetail(s.Detail), clipDetail(s.Line)
	return s
}

// clipDetail cuts s to MaxDetail bytes (on a rune boundary), saying how
// many bytes were left out.
func clipDetail(s string) string { return clipTo(s, MaxDetail) }

// clipTo cuts s to n bytes (on a rune boundary), saying how many bytes
// were left out.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:cut], len(s)-cut)
}
