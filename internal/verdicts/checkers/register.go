package checkers

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Model names, as KeyedResult.Model and the CLI's --model spell them.
const (
	ModelCASRegister = "cas-register"
	ModelKV          = "kv"
)

// RegisterFunc is what a register operation does.
type RegisterFunc uint8

// Register operations. A read returns the key's value; a write sets it; a
// compare-and-set sets it to Value only if it is Old, and completes ok only
// if it did.
const (
	RegisterRead RegisterFunc = iota + 1
	RegisterWrite
	RegisterCAS
)

// String returns "read", "write" or "cas".
func (f RegisterFunc) String() string {
	switch f {
	case RegisterRead:
		return "read"
	case RegisterWrite:
		return "write"
	case RegisterCAS:
		return "cas"
	}
	return "RegisterFunc(" + strconv.Itoa(int(f)) + ")"
}

// RegisterValue is the value of a register key: an integer, or nil (the
// zero value) when the key is absent, as every key is before its first
// write.
type RegisterValue struct {
	Int     int64
	Present bool
}

// RegisterInt returns the register value v.
func RegisterInt(v int64) RegisterValue { return RegisterValue{Int: v, Present: true} }

// String returns "nil" or the integer.
func (v RegisterValue) String() string {
	if !v.Present {
		return "nil"
	}
	return strconv.FormatInt(v.Int, 10)
}

// RegisterOp is one operation on a multi-key compare-and-set register, as
// an importer or a register workload records it.
//
// Type is the outcome, in Jepsen's terms: history.Ok (it happened),
// history.Fail (it certainly did not: left out) or history.Info (unknown,
// and also what an operation that never completed is). An info write or cas
// may or may not take effect, at any time after its invocation ("maybe,
// returning at infinity"). A read whose outcome is unknown tells nothing and
// is left out.
//
// Call and Return are times on one clock, in any unit (nanoseconds, or the
// positions of the events in the history); Return is ignored unless Type is
// Ok.
type RegisterOp struct {
	Process int // the client, zero-indexed: Porcupine's lanes
	Key     string
	F       RegisterFunc
	Type    history.Type
	Call    int64
	Return  int64
	// Value is what an ok read returned, what a write wrote, or what a cas
	// sets when it succeeds.
	Value RegisterValue
	// Old is the value a cas expects.
	Old RegisterValue
}

// CheckRegister checks with Porcupine that ops are linearizable on a
// multi-key compare-and-set register whose keys start absent (nil). Each
// key is checked on its own (see KeyedResult), several at once.
//
// Ok operations are checked as they are; info writes and cas may or may not
// take effect, at any time after their call; failed operations and reads
// with an unknown outcome are left out (see RegisterOp). A history in which
// no operation completed ok shows nothing: Unknown.
//
// A key of frontierMinOps (10,000) operations or more is checked by the
// frontier search first (frontier.go): exact, with memory that grows with
// how many operations may take effect at once rather than with the key's
// length, so that a long key with few processes gets a verdict where
// Porcupine's search would outgrow the machine. A key too wide for it is
// left to Porcupine; KeyedResult.Method says which judged, and why.
//
// opts.Timeout bounds the whole check (0: no bound); past it the result is
// Unknown, never Valid, and says how many keys were checked.
// opts.MemoryBudget bounds the process's memory while it checks (0: no
// bound); past it the result is Unknown, never Valid nor Invalid unless a
// key checked to the end failed, and says why, with the peak measured and
// how many operations were checked. When the history is not linearizable
// and opts.VisualizationPath is set, Porcupine's visualization of the
// failing keys is written there.
func CheckRegister(ops []RegisterOp, opts Options) KeyedResult {
	return Protect(ModelCASRegister, func() KeyedResult { return checkRegister(ops, opts) })
}

func checkRegister(ops []RegisterOp, opts Options) KeyedResult {
	start := time.Now()
	g := startGuard(opts)
	defer g.stop()
	res := KeyedResult{Model: ModelCASRegister, Ops: len(ops)}
	keep, maybe, err := tally(&res, len(ops), func(i int) opView {
		o := &ops[i]
		return opView{t: o.Type, read: o.F == RegisterRead, known: o.F >= RegisterRead && o.F <= RegisterCAS, fn: uint8(o.F), process: o.Process, key: o.Key, call: o.Call, ret: o.Return}
	})
	if err != nil {
		return res
	}
	keys, parts := groupByKey(len(ops), func(i int) string { return ops[i].Key }, keep)
	if !res.observed(len(keys), start) {
		return res
	}
	c := keyedCheck{
		model: registerModelFor(opts.client),
		keys:  keys,
		build: func(p int, meta bool) []porcupine.Operation {
			return buildRegister(ops, parts[p], maybe, meta)
		},
		size:  func(p int) int { return len(parts[p]) },
		pos:   func(input any) int { return int(input.(*regStep).pos) },
		guard: g,
		frontier: func(p int, deadline time.Time, stop *atomic.Bool) frontierResult {
			return frontierRegister(ops, parts[p], maybe, deadline, g, stop)
		},
		describe: func(i int32) string { return describeRegisterOp(&ops[i], opts.client) },
	}
	c.run(&res, opts, start)
	res.Elapsed = time.Since(start)
	return res
}

// describeRegisterOp names an ok operation for a message, its client named
// by client (Options.client): "w2's read() -> 5 (called at 1234, returned
// at 1240)".
func describeRegisterOp(o *RegisterOp, client func(history.Process) string) string {
	var what string
	switch o.F {
	case RegisterRead:
		what = "read() -> " + o.Value.String()
	case RegisterWrite:
		what = "write(" + o.Value.String() + ")"
	default:
		what = "cas(" + o.Old.String() + ", " + o.Value.String() + ") -> ok"
	}
	return client(history.Process(o.Process)) + "'s " + what + " (called at " + strconv.FormatInt(o.Call, 10) + ", returned at " + strconv.FormatInt(o.Return, 10) + ")"
}
