// Package jepsen imports histories recorded by Jepsen, as typed operations
// for the checkers:
//
//   - ReadRegisterLog reads jepsen.util log lines of a single
//     compare-and-set register (Jepsen's etcd test, model cas-register);
//   - ReadKV reads EDN operation maps of a string key-value store with get,
//     put and append (Jepsen's "kv" model).
//
// Invocations are paired with completions by process, as Jepsen does: a
// process has at most one operation outstanding, and an operation that
// never completed has an unknown outcome (history.Info). Operation times are
// the line numbers of the invocation and the completion.
//
// Every error about the input is a *ParseError, which names the file and the
// line: "FILE:LINE: ...". Input is bounded: a line may hold at most 1 MiB
// (maxLine) and nest vectors and maps at most 64 deep (maxDepth); beyond
// either the line is an error, so that a hostile line costs time and memory
// bounded by the limits, whatever its length.
package jepsen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// ParseError is an error about a history file: what is wrong, and where.
type ParseError struct {
	File string
	Line int // from 1; 0 when the error is about the file as a whole
	Err  error
}

// Error returns "FILE:LINE: message".
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// maxLine bounds a line's length: 1 MiB, far more than any Jepsen
// operation needs (the longest line of the histories in testdata/jepsen has
// a few hundred bytes). A longer line is an error naming it, read no
// further than the limit, so that a hostile file costs at most that much
// memory for its line (and the values on it: see maxDepth).
const maxLine = 1 << 20

// eachLine calls fn with every line of r (without its line ending) and its
// number, from 1; errors are returned as ParseErrors of name.
func eachLine(r io.Reader, name string, fn func(line string, n int) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(strings.TrimSuffix(sc.Text(), "\r"), n); err != nil {
			return &ParseError{File: name, Line: n, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &ParseError{File: name, Line: n + 1, Err: fmt.Errorf("line longer than %d bytes (1 MiB), the limit", maxLine)}
		}
		return &ParseError{File: name, Err: err}
	}
	return nil
}

// readFile opens path and calls parse on it; reading ends when ctx does
// (history.OpenContext), with an error wrapping ctx's cause.
func readFile[O any](ctx context.Context, path string, parse func(io.Reader, string) ([]O, error)) ([]O, error) {
	f, err := history.OpenContext(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f, path)
}

// event is one line of a Jepsen history: an invocation or a completion.
type event struct {
	line    int
	process int
	typ     history.Type
	f       string   // without the ':'
	key     ednValue // EDN maps' :key, else nil
	value   ednValue
	err     ednValue // log lines' optional error field, else nil
}

// op is an invocation and its completion (nil: it never completed).
type op struct {
	invoke   event
	complete *event
}

// pairer pairs events into operations by process, and converts each
// operation (conv) as soon as it is complete, or, for one that never
// completes, at the end (done): only outstanding operations keep their
// events, so that a long history is held once, as conv's output, in
// invocation order.
type pairer[O any] struct {
	out  []O
	open map[int]openOp // process -> its outstanding operation
	conv func(o *op) (O, *lineError)
	// err is the conversion error of the earliest operation (by
	// invocation, at errAt in out) that could not be converted.
	err   *lineError
	errAt int
	// cur and comp are the operation being converted and its completion,
	// kept here so that converting allocates nothing.
	cur  op
	comp event
}

// openOp is an outstanding operation: its invocation, and its place in out.
type openOp struct {
	at     int
	invoke event
}

func newPairer[O any](conv func(o *op) (O, *lineError)) *pairer[O] {
	return &pairer[O]{open: map[int]openOp{}, conv: conv}
}

// add adds an event: an invocation opens an operation of its process, a
// completion closes it and converts it.
func (p *pairer[O]) add(e event) error {
	o, outstanding := p.open[e.process]
	if e.typ == history.Invoke {
		if outstanding {
			return fmt.Errorf("process %d invokes :%s while its :%s of line %d is outstanding", e.process, e.f, o.invoke.f, o.invoke.line)
		}
		p.open[e.process] = openOp{at: len(p.out), invoke: e}
		var zero O
		p.out = append(p.out, zero)
		return nil
	}
	if !outstanding {
		return fmt.Errorf("process %d completes :%s (:%s) with nothing outstanding", e.process, e.f, e.typ)
	}
	if o.invoke.f != e.f {
		return fmt.Errorf("process %d completes :%s, but it invoked :%s on line %d", e.process, e.f, o.invoke.f, o.invoke.line)
	}
	delete(p.open, e.process)
	p.comp = e
	p.convert(o.at, o.invoke, &p.comp)
	return nil
}

// convert converts the operation at in out.
func (p *pairer[O]) convert(at int, invoke event, complete *event) {
	p.cur = op{invoke: invoke, complete: complete}
	v, err := p.conv(&p.cur)
	p.cur = op{}
	if err != nil {
		if p.err == nil || at < p.errAt {
			p.err, p.errAt = err, at
		}
		return
	}
	p.out[at] = v
}

// done converts the operations that never completed, and returns every
// operation in invocation order, or the error of the earliest that could
// not be converted, as a ParseError of name.
func (p *pairer[O]) done(name string) ([]O, error) {
	for _, o := range p.open {
		p.convert(o.at, o.invoke, nil)
	}
	clear(p.open)
	if p.err != nil {
		return nil, &ParseError{File: name, Line: p.err.line, Err: p.err.err}
	}
	return p.out, nil
}

// outcome is the operation's type: its completion's, or Info when it never
// completed.
func (o *op) outcome() history.Type {
	if o.complete == nil {
		return history.Info
	}
	return o.complete.typ
}

// times returns the operation's call and return times: line numbers.
func (o *op) times() (call, ret int64) {
	call = int64(o.invoke.line)
	if o.complete != nil {
		ret = int64(o.complete.line)
	}
	return call, ret
}

// eventType reads a :type keyword.
func eventType(v ednValue) (history.Type, error) {
	if v.kind == ednKeyword {
		switch t := history.Type(v.s); t {
		case history.Invoke, history.Ok, history.Fail, history.Info:
			return t, nil
		}
	}
	return "", fmt.Errorf("type %s: want :invoke, :ok, :fail or :info", v.short())
}

// process reads a process: a number from 0, or :nemesis (nemesis is true).
func process(v ednValue) (p int, nemesis bool, err error) {
	switch {
	case v.isKeyword("nemesis"):
		return 0, true, nil
	case v.kind == ednInt && v.i >= 0 && v.i <= 1<<31:
		return int(v.i), false, nil
	}
	return 0, false, fmt.Errorf("process %s: want a number >= 0 or :nemesis", v.short())
}

// function reads an :f keyword that must be one of fs.
func function(v ednValue, fs ...string) (string, error) {
	if v.kind == ednKeyword {
		for _, f := range fs {
			if v.s == f {
				return f, nil
			}
		}
	}
	return "", fmt.Errorf("function %s: want :%s", v.short(), strings.Join(fs, ", :"))
}
