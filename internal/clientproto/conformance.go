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
// first acquire (token and time left), remaining, mutual exclusion (a second
// process of the program must not get the lock while the first holds it),
// release, handover (the second process gets it, with a higher token), the
// resource access when implemented (write, read back, a stale token's write
// refused under token fencing), and an unknown request (it must be
// answered with an error). A check that cannot run because an earlier one
// failed is left out. Every process is retired at the end; report, if not
// nil, is told of each step as it ends.
func Conform(ctx context.Context, prog Program, init Init, o ConformOptions, log *slog.Logger, report func(Step)) []Step {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.AcquireTimeout <= 0 {
		o.AcquireTimeout = 5 * time.Second
	}
	ttl := time.Duration(init.TTLMS) * time.Millisecond
	var steps []Step
	add := func(name string, start time.Time, err error, detail string) bool {
		s := Step{Name: name, OK: err == nil, Detail: detail, Elapsed: time.Since(start).Round(time.Millisecond)}
		if err != nil {
			s.Detail = err.Error()
			var e *Error
			if errors.As(err, &e) {
				s.Line = e.Line
			}
		}
		s = ClipStep(s)
		steps = append(steps, s)
		if report != nil {
			report(s)
		}
		return err == nil
	}
	a := NewProcess(prog, init, log.With("process", "A"))
	b := NewProcess(prog, init, log.With("process", "B"))
	a.InitTimeout, b.InitTimeout = o.Timeout, o.Timeout
	defer a.Close()
	defer b.Close()

	// init
	t := time.Now()
	r, err := a.Start(ctx)
	if !add("init", t, err, fmt.Sprintf("%q implements %v, tokens %v", r.Name, r.Implements, r.Tokens != nil && *r.Tokens)) {
		return steps
	}
	tokens := *r.Tokens
	resource := slices.Contains(r.Implements, ImplResource)

	acquire := func(p *Process, wait time.Duration) (Reply, error) {
		r, err := p.Call(ctx, Request{Type: TypeAcquire, TimeoutMS: ms(wait)}, wait+o.Timeout)
		if err != nil {
			return r, err
		}
		switch {
		case tokens && r.Token == nil:
			return r, errors.New(`acquire_ok has no "token" although init_ok said "tokens": true`)
		case !tokens && r.Token != nil:
			return r, errors.New(`acquire_ok has a "token" although init_ok said "tokens": false`)
		case r.RemainingMS == nil:
			return r, errors.New(`acquire_ok has no "remaining_ms"`)
		case *r.RemainingMS <= 0 || time.Duration(*r.RemainingMS)*time.Millisecond > ttl+time.Second:
			return r, fmt.Errorf("remaining_ms %d is not within (0, TTL %s]", *r.RemainingMS, ttl)
		}
		return r, nil
	}
	tokenText := func(r Reply) string {
		if r.Token == nil {
			return "no token"
		}
		return fmt.Sprintf("token %d", *r.Token)
	}

	// acquire
	t = time.Now()
	first, err := acquire(a, o.AcquireTimeout)
	if !add("acquire", t, err, fmt.Sprintf("%s, remaining %d ms", tokenText(first), deref(first.RemainingMS))) {
		return steps
	}

	// remaining
	t = time.Now()
	r, err = a.Call(ctx, Request{Type: TypeRemaining}, o.Timeout)
	if err == nil {
		switch {
		case r.RemainingMS == nil:
			err = errors.New(`remaining_ok has no "remaining_ms"`)
		case *r.RemainingMS < 0 || time.Duration(*r.RemainingMS)*time.Millisecond > ttl+time.Second:
			err = fmt.Errorf("remaining_ms %d is not within [0, TTL %s]", *r.RemainingMS, ttl)
		}
	}
	add("remaining", t, err, fmt.Sprintf("%d ms", deref(r.RemainingMS)))

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
	add("exclusion", t, err, fmt.Sprintf("a second process was refused within %s", wait))

	// release
	t = time.Now()
	_, err = a.Call(ctx, Request{Type: TypeRelease}, o.Timeout)
	if !add("release", t, err, "") {
		return steps
	}

	// handover
	t = time.Now()
	second, err := acquire(b, o.AcquireTimeout)
	if err == nil && tokens && *second.Token <= *first.Token {
		err = fmt.Errorf("token %d after token %d: a fencing token must grow with every grant", *second.Token, *first.Token)
	}
	if !add("handover", t, err, fmt.Sprintf("the second process got the lock, %s", tokenText(second))) {
		return steps
	}

	if resource {
		t = time.Now()
		w := Request{Type: TypeWrite, Token: second.Token, Fencing: init.Fencing, Value: []int64{1, 2}}
		r, err = b.Call(ctx, w, o.Timeout)
		if err == nil && r.Result != "" && r.Result != ResultOK {
			err = fmt.Errorf("write with the holder's token: result %q (want ok)", r.Result)
		}
		add("write", t, err, "[1,2] written")
		t = time.Now()
		r, err = b.Call(ctx, Request{Type: TypeRead, Token: second.Token, Fencing: init.Fencing}, o.Timeout)
		if err == nil && !slices.Equal(r.Value, []int64{1, 2}) {
			err = fmt.Errorf("read back %v after writing [1,2]", r.Value)
		}
		add("read", t, err, fmt.Sprintf("%v", r.Value))
		if tokens && init.Fencing == "token" {
			t = time.Now()
			r, err = a.Call(ctx, Request{Type: TypeWrite, Token: first.Token, Fencing: init.Fencing, Value: []int64{9}}, o.Timeout)
			if err == nil && r.Result != ResultFenced {
				err = fmt.Errorf("a write with the old token %d was not refused (result %q)", *first.Token, r.Result)
			}
			add("stale write", t, err, fmt.Sprintf("token %d refused", *first.Token))
		}
	}

	t = time.Now()
	_, err = b.Call(ctx, Request{Type: TypeRelease}, o.Timeout)
	add("release", t, err, "the second process released")

	// unknown request: answered, with an error.
	t = time.Now()
	_, err = a.Call(ctx, Request{Type: "fencecheck-probe"}, o.Timeout)
	switch {
	case err == nil:
		err = errors.New(`an unknown request type was answered as a success (want an error reply)`)
	case errors.As(err, &e) && e.Cause == "reply":
		err = nil
	}
	add("unknown request", t, err, "answered with an error")
	return steps
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
func clipDetail(s string) string {
	if len(s) <= MaxDetail {
		return s
	}
	cut := MaxDetail
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:cut], len(s)-cut)
}
