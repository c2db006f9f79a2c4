package checkers

import (
	"fmt"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// KVFunc is what a key-value operation does.
type KVFunc uint8

// Key-value operations, as Jepsen's "kv" model has them: a get returns the
// key's string, a put sets it, an append concatenates onto it.
const (
	KVGet KVFunc = iota + 1
	KVPut
	KVAppend
)

// String returns "get", "put" or "append".
func (f KVFunc) String() string {
	switch f {
	case KVGet:
		return "get"
	case KVPut:
		return "put"
	case KVAppend:
		return "append"
	}
	return "KVFunc(" + strconv.Itoa(int(f)) + ")"
}

// KVOp is one operation on a string key-value store whose keys all start
// as the empty string. Type, Call and Return mean what they mean in a
// RegisterOp: an info put or append may or may not take effect, a get with
// an unknown outcome and every failed operation are left out.
type KVOp struct {
	Process int // the client, zero-indexed: Porcupine's lanes
	Key     string
	F       KVFunc
	Type    history.Type
	Call    int64
	Return  int64
	// Value is what an ok get returned, what a put wrote, or what an
	// append appended.
	Value string
}

// kvState is a key's string as Porcupine's state, interned per key like
// regState; kvEmpty is every key's "".
type kvState struct {
	id int32
	s  string
}

var kvEmpty = &kvState{}

// kvTable interns one key's strings. Porcupine checks a key in one
// goroutine, so the table needs no lock.
type kvTable struct {
	ids map[string]*kvState
	// appended memoizes appends: (state id, step index) -> state.
	appended map[[2]int32]*kvState
}

func (t *kvTable) intern(s string) *kvState {
	st, ok := t.ids[s]
	if !ok {
		st = &kvState{id: int32(len(t.ids)), s: s}
		t.ids[s] = st
	}
	return st
}

// kvStep is a Porcupine operation's input on the key-value model.
type kvStep struct {
	f     KVFunc
	maybe bool
	state *kvState // get: the string read; put: the string written
	index int32    // in the key's steps, the memo's key
	tab   *kvTable
	op    *KVOp
	opIdx int // in the checked slice, for descriptions
}

func kvStepFunc(state, input, _ any) (bool, any) {
	s, in := state.(*kvState), input.(*kvStep)
	switch in.f {
	case KVGet:
		return s == in.state, state
	case KVPut:
		return true, in.state
	default:
		k := [2]int32{s.id, in.index}
		next, ok := in.tab.appended[k]
		if !ok {
			next = in.tab.intern(s.s + in.op.Value)
			in.tab.appended[k] = next
		}
		return true, next
	}
}

// kvModel is the model of one key. The initial state is "".
var kvModel = porcupine.Model{
	Init: func() any { return kvEmpty },
	Step: kvStepFunc,
	Hash: func(s any) uint64 { return mix(uint64(s.(*kvState).id)) },
	DescribeOperation: func(input, _ any) string {
		in := input.(*kvStep)
		o := in.op
		if o.F == KVGet {
			return fmt.Sprintf("get(%q) -> %q", o.Key, o.Value)
		}
		s := fmt.Sprintf("%s(%q, %q)", o.F, o.Key, o.Value)
		if in.maybe {
			s += " (unknown outcome)"
		}
		return s
	},
	DescribeState: func(s any) string { return strconv.Quote(s.(*kvState).s) },
	DescribeOperationMetadata: func(m any) string {
		if m == nil {
			return ""
		}
		in := m.(*kvStep)
		return fmt.Sprintf("process %d, operation %d", in.op.Process, in.opIdx)
	},
}

// CheckKV checks with Porcupine that ops are linearizable on a string
// key-value store with get, put and append, whose keys start as "". Each
// key is checked on its own (see KeyedResult), several at once; ops are
// treated as in CheckRegister, and so are opts (time limit, memory budget,
// visualization).
func CheckKV(ops []KVOp, opts Options) KeyedResult {
	return Protect(ModelKV, func() KeyedResult { return checkKV(ops, opts) })
}

func checkKV(ops []KVOp, opts Options) KeyedResult {
	start := time.Now()
	g := startGuard(opts)
	defer g.stop()
	res := KeyedResult{Model: ModelKV, Ops: len(ops)}
	keep, maybe, err := tally(&res, len(ops), func(i int) opView {
		o := &ops[i]
		return opView{t: o.Type, read: o.F == KVGet, known: o.F >= KVGet && o.F <= KVAppend, fn: uint8(o.F), process: o.Process, key: o.Key, call: o.Call, ret: o.Return}
	})
	if err != nil {
		return res
	}
	keys, parts := groupByKey(len(ops), func(i int) string { return ops[i].Key }, keep)
	if !res.observed(len(keys), start) {
		return res
	}
	c := keyedCheck{
		model: kvModel,
		keys:  keys,
		build: func(p int, meta bool) []porcupine.Operation {
			return buildKV(ops, parts[p], maybe, meta)
		},
		size:  func(p int) int { return len(parts[p]) },
		pos:   func(input any) int { return int(input.(*kvStep).index) },
		guard: g,
	}
	c.run(&res, opts, start)
	res.Elapsed = time.Since(start)
	return res
}

// buildKV returns the Porcupine operations of one key's ops (idx).
func buildKV(ops []KVOp, idx []int32, maybe []bool, meta bool) []porcupine.Operation {
	tab := &kvTable{ids: map[string]*kvState{"": kvEmpty}, appended: map[[2]int32]*kvState{}}
	var last int64
	for _, i := range idx {
		last = max(last, ops[i].Call)
		if !maybe[i] {
			last = max(last, ops[i].Return)
		}
	}
	steps := make([]kvStep, len(idx))
	out := make([]porcupine.Operation, len(idx))
	for j, i := range idx {
		o := &ops[i]
		s := &steps[j]
		*s = kvStep{f: o.F, maybe: maybe[i], index: int32(j), tab: tab, op: o, opIdx: int(i)}
		if o.F != KVAppend {
			s.state = tab.intern(o.Value)
		}
		ret := o.Return
		if s.maybe {
			ret = last + 1
		}
		out[j] = porcupine.Operation{ClientId: max(o.Process, 0), Input: s, Call: o.Call, Return: ret}
		if meta {
			out[j].Metadata = s
		}
	}
	return out
}
