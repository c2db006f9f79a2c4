package jepsen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// ReadKV reads the history of a string key-value store from a file of
// Jepsen operation maps (see ParseKV).
func ReadKV(path string) ([]checkers.KVOp, error) {
	return ReadKVContext(context.Background(), path)
}

// ReadKVContext is ReadKV that ends when ctx does.
func ReadKVContext(ctx context.Context, path string) ([]checkers.KVOp, error) {
	return readFile(ctx, path, ParseKV)
}

// ParseKV reads the history of a string key-value store (Jepsen's "kv"
// model) from Jepsen operation maps in EDN, one a line, named name in
// errors:
//
//	{:process 0, :type :invoke, :f :append, :key "4", :value "x 0 1 y"}
//	{:process 1, :type :ok, :f :get, :key "9", :value "x 1 3 y"}
//
// :process is a number (maps of process :nemesis are skipped), :type one of
// :invoke, :ok, :fail, :info, :f one of :get, :put, :append, :key a string
// (an integer is taken as its decimal string). The :value of a put or append
// invocation is a string; an ok get's is the string it returned (nil is
// read as "", the value of a key never written). Other entries (:time,
// :index, :error ...) are ignored. Blank lines and lines holding only a
// comment are skipped; every other line must be one such map.
func ParseKV(r io.Reader, name string) ([]checkers.KVOp, error) {
	p := newPairer(kvOp)
	err := eachLine(r, name, func(line string, n int) error {
		if t := strings.TrimSpace(line); t == "" || t[0] == ';' {
			return nil
		}
		e, skip, err := mapEvent(line, n)
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

// kvOp converts a paired operation.
func kvOp(o *op) (checkers.KVOp, *lineError) {
	inv := o.invoke
	kop := checkers.KVOp{Process: inv.process, Key: keyString(inv.key), Type: o.outcome(), Value: inv.value.s}
	kop.Call, kop.Return = o.times()
	switch inv.f {
	case "get":
		kop.F, kop.Value = checkers.KVGet, ""
		if c := o.complete; c != nil && c.typ == history.Ok {
			kop.Value = c.value.s
		}
	case "put":
		kop.F = checkers.KVPut
	case "append":
		kop.F = checkers.KVAppend
	}
	if c := o.complete; c != nil && keyString(c.key) != kop.Key {
		return kop, &lineError{c.line, fmt.Errorf("process %d completes :%s on key %s, but it invoked it on key %s on line %d",
			inv.process, inv.f, c.key.short(), inv.key.short(), inv.line)}
	}
	return kop, nil
}

// mapEvent parses a line holding one operation map.
func mapEvent(line string, n int) (e event, skip bool, err error) {
	const want = "want one operation map {:process ..., :type ..., :f ..., :key ..., :value ...} on the line"
	if !strings.HasPrefix(strings.TrimSpace(line), "{") {
		return e, false, errors.New(want)
	}
	vs, err := parseEDN(line, 0)
	if err != nil {
		return e, false, err
	}
	if len(vs) != 1 || vs[0].kind != ednMap {
		return e, false, errors.New(want)
	}
	m := vs[0]
	field := func(name string) (ednValue, error) {
		v, ok := m.get(name)
		if !ok {
			return v, fmt.Errorf("operation map without :%s", name)
		}
		return v, nil
	}
	e.line = n
	v, err := field("process")
	if err != nil {
		return e, false, err
	}
	var nemesis bool
	if e.process, nemesis, err = process(v); err != nil || nemesis {
		return e, nemesis, err
	}
	if v, err = field("type"); err != nil {
		return e, false, err
	}
	if e.typ, err = eventType(v); err != nil {
		return e, false, err
	}
	if v, err = field("f"); err != nil {
		return e, false, err
	}
	if e.f, err = function(v, "get", "put", "append"); err != nil {
		return e, false, err
	}
	if e.key, err = field("key"); err != nil {
		return e, false, err
	}
	if e.key.kind != ednString && e.key.kind != ednInt {
		return e, false, fmt.Errorf(":key %s: want a string or an integer", e.key.short())
	}
	e.value, _ = m.get("value")
	switch {
	case e.typ == history.Invoke && e.f != "get" && e.value.kind != ednString:
		return e, false, fmt.Errorf(":%s of %s: want a string", e.f, e.value.short())
	case e.typ == history.Ok && e.f == "get" && e.value.kind != ednString && !e.value.isNil():
		return e, false, fmt.Errorf(":get returned %s: want a string or nil", e.value.short())
	}
	return e, false, nil
}

// keyString is a key as the checkers take it: a string's contents, an
// integer's decimal digits.
func keyString(v ednValue) string {
	if v.kind == ednInt {
		return strconv.FormatInt(v.i, 10)
	}
	return v.s
}
