package checkers

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// genSpec describes a synthetic register history.
type genSpec struct {
	seed        uint64
	keys        int     // how many keys
	opsPerKey   int     // operations on each key
	concurrency int     // processes per key at any time
	values      int     // writes and cas draw values from 0..values-1
	info        float64 // the share of writes and cas whose outcome is unknown
}

// genOp is an operation with the time it takes effect.
type genOp struct {
	RegisterOp
	at     int64
	effect bool // an info write or cas that took effect (at at)
}

// genRegister builds a history that is linearizable by construction: each
// key's processes run operations one after another, each taking effect at a
// random point between its invocation and its completion, and what reads
// return and whether a cas succeeds is computed by applying the operations
// in the order of those points. Of the writes and cas, the share spec.info
// completes info: half of those take effect, possibly after the info was
// recorded, half never; the process is then retired, as in Jepsen. Keys are
// "k0000", "k0001", ...; operations come out in invocation order.
func genRegister(spec genSpec) []RegisterOp {
	rng := rand.New(rand.NewPCG(spec.seed, 0x5eed))
	out := make([]RegisterOp, 0, spec.keys*spec.opsPerKey)
	nextProcess := 0
	ops := make([]genOp, 0, spec.opsPerKey)
	for k := range spec.keys {
		key := fmt.Sprintf("k%04d", k)
		ops = ops[:0]
		clock := make([]int64, spec.concurrency)
		procs := make([]int, spec.concurrency)
		for p := range procs {
			procs[p] = nextProcess
			nextProcess++
			clock[p] = rng.Int64N(50)
		}
		for i := range spec.opsPerKey {
			p := i % spec.concurrency
			call := clock[p] + rng.Int64N(20)
			at := call + 1 + rng.Int64N(100)
			ret := at + 1 + rng.Int64N(100)
			o := genOp{RegisterOp: RegisterOp{Process: procs[p], Key: key, Type: history.Ok, Call: call, Return: ret}, at: at}
			switch r := rng.IntN(10); {
			case r < 5:
				o.F = RegisterRead
			case r < 8:
				o.F = RegisterWrite
				o.Value = RegisterInt(rng.Int64N(int64(spec.values)))
			default:
				o.F = RegisterCAS
				o.Old = RegisterInt(rng.Int64N(int64(spec.values)))
				o.Value = RegisterInt(rng.Int64N(int64(spec.values)))
			}
			if o.F != RegisterRead && rng.Float64() < spec.info {
				o.Type = history.Info
				if o.effect = rng.IntN(2) == 0; o.effect {
					o.at = call + 1 + rng.Int64N(1000) // maybe long after the info
				}
				procs[p] = nextProcess
				nextProcess++
			}
			clock[p] = ret
			ops = append(ops, o)
		}
		slices.SortStableFunc(ops, func(a, b genOp) int { return cmp.Compare(a.at, b.at) })
		var state RegisterValue
		for i := range ops {
			o := &ops[i]
			if o.Type == history.Info && !o.effect {
				continue
			}
			switch o.F {
			case RegisterRead:
				o.Value = state
			case RegisterWrite:
				state = o.Value
			case RegisterCAS:
				switch {
				case state == o.Old:
					state = o.Value
				case o.Type == history.Ok:
					o.Type = history.Fail
				}
			}
		}
		for _, o := range ops {
			out = append(out, o.RegisterOp)
		}
	}
	slices.SortStableFunc(out, func(a, b RegisterOp) int { return cmp.Compare(a.Call, b.Call) })
	return out
}

// staleRead adds to key's history, at the given fraction of its duration,
// by a process of its own: a write of a value no other operation writes, a
// second write, and then a read that returns the first value. No order
// explains that stale read.
func staleRead(ops []RegisterOp, key string, at float64) []RegisterOp {
	var end int64
	p := 0
	for _, o := range ops {
		if o.Key == key {
			end = max(end, o.Call, o.Return)
		}
		p = max(p, o.Process+1)
	}
	t := int64(float64(end) * at)
	return append(slices.Clip(ops),
		RegisterOp{Process: p, Key: key, F: RegisterWrite, Type: history.Ok, Call: t + 1, Return: t + 2, Value: RegisterInt(1_000_001)},
		RegisterOp{Process: p, Key: key, F: RegisterWrite, Type: history.Ok, Call: t + 3, Return: t + 4, Value: RegisterInt(1_000_002)},
		RegisterOp{Process: p, Key: key, F: RegisterRead, Type: history.Ok, Call: t + 5, Return: t + 6, Value: RegisterInt(1_000_001)},
	)
}

func sortByAt(ops []genOp) {
	slices.SortStableFunc(ops, func(a, b genOp) int { return cmp.Compare(a.at, b.at) })
}

// dumpRegister writes ops one a line, for failure messages.
func dumpRegister(ops []RegisterOp) string {
	var b []byte
	for i, o := range ops {
		b = fmt.Appendf(b, "%3d  p%-2d %s %-5s %-4s [%d, %d] value %s old %s\n", i, o.Process, o.Key, o.F, o.Type, o.Call, o.Return, o.Value, o.Old)
	}
	return string(b)
}
