package jepsen

import (
	"context"
	"fmt"
	"io"
	"regexp"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// opLine finds a jepsen.util log line: the match ends where the fields
// start. (No capture group: without one the match runs in linear time
// without the slower submatch engine, which matters on long lines.)
var opLine = regexp.MustCompile(`(?:^|\s)jepsen\.util\s+-(?:\s+|$)`)

// ReadRegisterLog reads the history of one compare-and-set register from a
// Jepsen log (see ParseRegisterLog).
func ReadRegisterLog(path string) ([]checkers.RegisterOp, error) {
	return ReadRegisterLogContext(context.Background(), path)
}

// ReadRegisterLogContext is ReadRegisterLog that ends when ctx does.
func ReadRegisterLogContext(ctx context.Context, path string) ([]checkers.RegisterOp, error) {
	return readFile(ctx, path, ParseRegisterLog)
}

// ParseRegisterLog reads the history of one compare-and-set register
// (Jepsen's cas-register model; key "") from the jepsen.util lines of a
// Jepsen log, named name in errors:
//
//	INFO  jepsen.util - 3	:invoke	:cas	[3 0]
//	INFO  jepsen.util - 3	:fail	:cas	[3 0]
//	INFO  jepsen.util - 1	:info	:write	:timed-out
//
// The fields, separated by white space, are the process, the type (:invoke,
// :ok, :fail, :info), the function (:read, :write, :cas) and the value (nil
// or an integer, or [old new] for a cas), then optionally an error. The value
// of a write or cas is its invocation's; an ok read's is what it returned.
// A failed read whose value is :timed-out has an unknown outcome
// (history.Info). Nemesis lines (process :nemesis) and lines that are not
// jepsen.util lines are skipped; a jepsen.util line that does not parse is
// an error.
func ParseRegisterLog(r io.Reader, name string) ([]checkers.RegisterOp, error) {
	p := newPairer(registerOp)
	err := eachLine(r, name, func(line string, n int) error {
		m := opLine.FindStringIndex(line)
		if m == nil {
			return nil
		}
		e, skip, err := logEvent(line, m[1], n)
		if err != nil || skip {
			return err
		}
		return p.add(e)
	})
	if err != nil {
		return nil, err
	}
	return p.done(name)
}

// logEvent parses the fields of a jepsen.util line, from byte from on.
func logEvent(text string, from, line int) (e event, skip bool, err error) {
	const want = "PROCESS TYPE F VALUE [ERROR]"
	r := &ednReader{s: text, pos: from}
	if r.done() {
		return e, false, fmt.Errorf("jepsen.util line with no fields, want %s", want)
	}
	// The process first: the rest of a nemesis line (what it did to which
	// nodes) need not be read.
	p, err := r.value()
	if err != nil {
		return e, false, fmt.Errorf("jepsen.util line: %w", err)
	}
	var nemesis bool
	if e.process, nemesis, err = process(p); err != nil || nemesis {
		return e, nemesis, err
	}
	var fields [5]ednValue // as many as a valid line has: no allocation
	vs := append(fields[:0], p)
	for !r.done() {
		v, err := r.value()
		if err != nil {
			return e, false, fmt.Errorf("jepsen.util line: %w", err)
		}
		vs = append(vs, v)
	}
	if len(vs) < 4 || len(vs) > 5 {
		return e, false, fmt.Errorf("jepsen.util line with %d fields, want 4 or 5: %s", len(vs), want)
	}
	e.line = line
	if e.typ, err = eventType(vs[1]); err != nil {
		return e, false, err
	}
	if e.f, err = function(vs[2], "read", "write", "cas"); err != nil {
		return e, false, err
	}
	e.value = vs[3]
	if len(vs) == 5 {
		e.err = vs[4]
	}
	// The values an operation needs are checked here, so that the error
	// names this line.
	switch {
	case e.typ == history.Invoke && e.f == "write":
		if e.value.kind != ednInt {
			return e, false, fmt.Errorf(":write of %s: want an integer", e.value.short())
		}
	case e.typ == history.Invoke && e.f == "cas":
		if _, _, ok := casArgs(e.value); !ok {
			return e, false, fmt.Errorf(":cas of %s: want [old new], two integers", e.value.short())
		}
	case e.typ == history.Ok && e.f == "read":
		if e.value.kind != ednInt && e.value.kind != ednNil {
			return e, false, fmt.Errorf(":read returned %s: want nil or an integer", e.value.short())
		}
	}
	return e, false, nil
}

func casArgs(v ednValue) (old, new int64, ok bool) {
	if v.kind != ednVector || len(v.list) != 2 || v.list[0].kind != ednInt || v.list[1].kind != ednInt {
		return 0, 0, false
	}
	return v.list[0].i, v.list[1].i, true
}

// lineError is an error about a line.
type lineError struct {
	line int
	err  error
}

// registerOp converts a paired operation.
func registerOp(o *op) (checkers.RegisterOp, *lineError) {
	inv := o.invoke
	out := checkers.RegisterOp{Process: inv.process, Type: o.outcome()}
	out.Call, out.Return = o.times()
	switch inv.f {
	case "read":
		out.F = checkers.RegisterRead
		if c := o.complete; c != nil {
			switch {
			case c.typ == history.Ok && c.value.kind == ednInt:
				out.Value = checkers.RegisterInt(c.value.i)
			case c.typ == history.Fail && (c.value.isKeyword("timed-out") || c.err.isKeyword("timed-out")):
				out.Type = history.Info
			}
		}
	case "write":
		out.F = checkers.RegisterWrite
		out.Value = checkers.RegisterInt(inv.value.i)
	case "cas":
		out.F = checkers.RegisterCAS
		old, new, _ := casArgs(inv.value)
		out.Old, out.Value = checkers.RegisterInt(old), checkers.RegisterInt(new)
	}
	if c := o.complete; c != nil && c.typ == history.Ok && inv.f != "read" && !c.value.isNil() && c.value.String() != inv.value.String() {
		return out, &lineError{c.line, fmt.Errorf(":ok :%s %s, but line %d invoked it with %s", inv.f, c.value.short(), inv.line, inv.value.short())}
	}
	return out, nil
}
