package checkers

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
)

// oneKey returns what the check keeps of ops (all on one key), and which
// of those are maybe, as checkRegister does.
func oneKey(t testing.TB, ops []RegisterOp) (idx []int32, maybe []bool) {
	t.Helper()
	maybe = make([]bool, len(ops))
	for i, o := range ops {
		keep, m, err := classify(o.Type, o.F == RegisterRead)
		if err != nil {
			t.Fatal(err)
		}
		if keep {
			idx = append(idx, int32(i))
		}
		maybe[i] = m
	}
	return idx, maybe
}

// porcupineKey is Porcupine's verdict on one key's operations.
func porcupineKey(ops []RegisterOp, idx []int32, maybe []bool) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(registerModel, buildRegister(ops, idx, maybe, false), 0)
}

// frontierKey is the frontier search's verdict on one key's operations.
func frontierKey(t testing.TB, ops []RegisterOp) frontierResult {
	idx, maybe := oneKey(t, ops)
	return frontierRegister(ops, idx, maybe, time.Time{}, nil, nil)
}

// simSpec describes a simulated register history.
type simSpec struct {
	procs  int     // processes at once
	n      int     // operations
	values int     // writes and cas draw from 0..values-1; 0: each writes a new value
	cas    bool    // cas operations as well as reads and writes
	info   float64 // share of writes and cas that time out
}

// simulate runs spec.procs processes against a register: each operation
// is invoked, takes effect at some later step, and completes at a later
// one, the steps of the processes interleaved at random, so operations
// overlap as they do in a real run; results come from the order in which
// they took effect, so the history is linearizable. A write or cas that
// times out (info) took effect, at once or some steps later, or never; its
// process is replaced. Times are the steps.
func simulate(rng *rand.Rand, spec simSpec) []RegisterOp {
	type proc struct {
		id      int
		op      int // in out, or -1
		applied bool
	}
	var out []RegisterOp
	procs := make([]proc, spec.procs)
	for i := range procs {
		procs[i] = proc{id: i, op: -1}
	}
	nextID := spec.procs
	var state RegisterValue
	fresh := int64(0)
	value := func() RegisterValue {
		if spec.values == 0 {
			fresh++
			return RegisterInt(fresh)
		}
		return RegisterInt(rng.Int64N(int64(spec.values)))
	}
	apply := func(o *RegisterOp) {
		switch o.F {
		case RegisterRead:
			o.Value = state
		case RegisterWrite:
			state = o.Value
		case RegisterCAS:
			if state == o.Old {
				state = o.Value
			} else if o.Type == history.Ok {
				o.Type = history.Fail
			}
		}
	}
	type late struct {
		op int
		at int64
	}
	var lates []late // info operations that take effect later
	now := int64(0)
	invoked := 0
	for invoked < spec.n || func() bool {
		for _, p := range procs {
			if p.op >= 0 {
				return true
			}
		}
		return false
	}() {
		now++
		for i := 0; i < len(lates); i++ {
			if lates[i].at <= now {
				apply(&out[lates[i].op])
				lates = append(lates[:i], lates[i+1:]...)
				i--
			}
		}
		p := &procs[rng.IntN(len(procs))]
		switch {
		case p.op < 0 && invoked < spec.n:
			o := RegisterOp{Process: p.id, Type: history.Ok, Call: now}
			switch r := rng.IntN(10); {
			case r < 5:
				o.F = RegisterRead
			case r < 8 || !spec.cas:
				o.F, o.Value = RegisterWrite, value()
			default:
				o.F, o.Value = RegisterCAS, value()
				if rng.IntN(3) > 0 {
					o.Old = state // likely to succeed
				} else {
					o.Old = value()
				}
			}
			out = append(out, o)
			p.op, p.applied = len(out)-1, false
			invoked++
		case p.op < 0:
		case !p.applied:
			apply(&out[p.op])
			p.applied = true
		default:
			o := &out[p.op]
			o.Return = now
			if o.F != RegisterRead && rng.Float64() < spec.info {
				// Timed out: the effect stands (it was applied), unless
				// it is undone by being re-read below. Model "took
				// effect later or never" on a fresh operation instead.
				o.Type = history.Info
				p.id = nextID
				nextID++
			}
			p.op = -1
		}
		if spec.info > 0 && rng.Float64() < spec.info/4 && invoked < spec.n {
			// An info write that takes effect later, or never.
			o := RegisterOp{Process: nextID, Type: history.Info, F: RegisterWrite, Call: now, Value: value()}
			nextID++
			out = append(out, o)
			invoked++
			if rng.IntN(2) == 0 {
				lates = append(lates, late{len(out) - 1, now + 1 + rng.Int64N(20)})
			}
		}
	}
	return out
}

// perturb changes one ok read's value or makes a failed cas claim success,
// perhaps making the history not linearizable.
func perturb(rng *rand.Rand, ops []RegisterOp, values int) {
	for range 10 {
		o := &ops[rng.IntN(len(ops))]
		switch {
		case o.Type == history.Ok && o.F == RegisterRead:
			if values == 0 || rng.IntN(2) == 0 {
				// A value written before, or nil: stale.
				o.Value = RegisterValue{}
				for _, w := range ops {
					if w.F != RegisterRead && w.Call < o.Call && rng.IntN(3) == 0 {
						o.Value = w.Value
					}
				}
			} else {
				o.Value = RegisterInt(rng.Int64N(int64(values)))
			}
			return
		case o.Type == history.Fail:
			o.Type = history.Ok
			return
		}
	}
}

// The frontier search agrees with Porcupine on many small random
// histories, valid and invalid, with operations that overlap: three
// processes with few values (so values repeat), info writes and cas
// (randomRegister), and two or three processes with reads, writes and cas
// of new or repeated values and info operations that took effect late or
// never (simulate, perturbed half the time).
func TestFrontierAgreesWithPorcupine(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 3000
	}
	rng := rand.New(rand.NewPCG(11, 12))
	count := map[porcupine.CheckResult]int{}
	maxWidth := 0
	for i := range n {
		var ops []RegisterOp
		if i%2 == 0 {
			for _, o := range randomRegister(rng) {
				if o.Key == "a" {
					ops = append(ops, o)
				}
			}
		} else {
			spec := simSpec{procs: 2 + rng.IntN(2), n: 4 + rng.IntN(14), cas: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				spec.values = 1 + rng.IntN(3)
			}
			if rng.IntN(2) == 0 {
				spec.info = 0.2
			}
			ops = simulate(rng, spec)
			if rng.IntN(2) == 0 {
				perturb(rng, ops, spec.values)
			}
		}
		idx, maybe := oneKey(t, ops)
		want := porcupineKey(ops, idx, maybe)
		got := frontierRegister(ops, idx, maybe, time.Time{}, nil, nil)
		count[want]++
		maxWidth = max(maxWidth, got.width)
		if got.result != want {
			t.Fatalf("history %d: the frontier search says %q (%s), Porcupine %q\n%s", i, got.result, got.why, want, dumpRegister(ops))
		}
	}
	t.Logf("%d linearizable, %d not; at most %d operations could take effect at once", count[porcupine.Ok], count[porcupine.Illegal], maxWidth)
	if count[porcupine.Ok] < n/5 || count[porcupine.Illegal] < n/5 {
		t.Errorf("unbalanced: %d linearizable, %d not", count[porcupine.Ok], count[porcupine.Illegal])
	}
}

// Longer two-process histories, with many info operations: the frontier
// search agrees with Porcupine, and info operations whose value nothing
// reads any more stop taking slots.
func TestFrontierAgreesWithPorcupineLonger(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	count := map[porcupine.CheckResult]int{}
	for i := range 300 {
		spec := simSpec{procs: 2, n: 150, values: 0, cas: true, info: 0.03}
		if i%3 == 0 {
			spec.values = 50
		}
		ops := simulate(rng, spec)
		if i%2 == 0 {
			perturb(rng, ops, spec.values)
		}
		idx, maybe := oneKey(t, ops)
		want := porcupineKey(ops, idx, maybe)
		got := frontierRegister(ops, idx, maybe, time.Time{}, nil, nil)
		count[want]++
		if got.result != want {
			t.Fatalf("history %d: the frontier search says %q (%s), Porcupine %q\n%s", i, got.result, got.why, want, dumpRegister(ops))
		}
		if spec.values == 0 && got.width > 8 {
			t.Errorf("history %d: %d slots at once, with new values and two processes", i, got.width)
		}
	}
	t.Logf("%d linearizable, %d not", count[porcupine.Ok], count[porcupine.Illegal])
	if count[porcupine.Ok] < 50 || count[porcupine.Illegal] < 50 {
		t.Errorf("unbalanced: %d linearizable, %d not", count[porcupine.Ok], count[porcupine.Illegal])
	}
}

// Cases by hand, and the one Porcupine cannot settle (hardRegister).
func TestFrontierCases(t *testing.T) {
	infoW := func(p int, call int64, v int64) RegisterOp {
		return RegisterOp{Process: p, F: RegisterWrite, Type: history.Info, Call: call, Value: RegisterInt(v)}
	}
	for _, c := range []struct {
		name string
		ops  []RegisterOp
		want porcupine.CheckResult
	}{
		{"sequential", []RegisterOp{wr(0, 0, 1, 1), rd(1, 2, 3, one), wr(0, 4, 5, 2), rd(1, 6, 7, two)}, porcupine.Ok},
		{"stale read", []RegisterOp{wr(0, 0, 1, 1), wr(0, 2, 3, 2), rd(1, 4, 5, one)}, porcupine.Illegal},
		{"read of nil after a write", []RegisterOp{wr(0, 0, 1, 1), rd(1, 2, 3, nilv)}, porcupine.Illegal},
		{"concurrent read sees either", []RegisterOp{wr(0, 0, 1, 1), wr(0, 2, 6, 2), rd(1, 3, 4, one), rd(1, 5, 7, two)}, porcupine.Ok},
		{"read not explained in a concurrent order", []RegisterOp{wr(0, 0, 5, 1), rd(1, 1, 2, two), wr(1, 3, 4, 2)}, porcupine.Illegal},
		{"equal times overlap", []RegisterOp{wr(0, 0, 3, 1), rd(1, 3, 4, nilv)}, porcupine.Ok},
		{"info write read much later", []RegisterOp{infoW(0, 0, 1), wr(1, 1, 2, 2), rd(1, 3, 4, two), rd(1, 50, 51, one)}, porcupine.Ok},
		{"info write read before its call", []RegisterOp{rd(1, 0, 1, one), infoW(0, 2, 1)}, porcupine.Illegal},
		{"info write read twice around another write", []RegisterOp{infoW(0, 0, 1), rd(1, 1, 2, one), wr(1, 3, 4, 2), rd(1, 5, 6, one)}, porcupine.Illegal},
		{"info cas chain", []RegisterOp{
			infoW(0, 0, 1),
			{Process: 2, F: RegisterCAS, Type: history.Info, Call: 1, Old: one, Value: two},
			wr(1, 2, 3, 3), rd(1, 4, 5, three), rd(1, 6, 7, two),
		}, porcupine.Ok},
		{"cas", []RegisterOp{wr(0, 0, 1, 1), cas(1, 2, 3, 1, 2), rd(0, 4, 5, two), cas(1, 6, 7, 1, 3)}, porcupine.Illegal},
		{"hard for Porcupine", hardRegister(), porcupine.Illegal},
	} {
		idx, maybe := oneKey(t, c.ops)
		got := frontierRegister(c.ops, idx, maybe, time.Time{}, nil, nil)
		if got.result != c.want {
			t.Errorf("%s: %q (%s), want %q", c.name, got.result, got.why, c.want)
		}
		if c.name != "hard for Porcupine" {
			if p := porcupineKey(c.ops, idx, maybe); p != c.want {
				t.Errorf("%s: Porcupine says %q, the case %q", c.name, p, c.want)
			}
		}
	}
}

// More operations at once than the search takes: it says so, and
// CheckRegister leaves such a key to Porcupine, saying why.
func TestFrontierPrecondition(t *testing.T) {
	var ops []RegisterOp
	for p := range 30 {
		ops = append(ops, rd(p, int64(p), 1000, nilv))
	}
	r := frontierKey(t, ops)
	if r.result != "" || !strings.Contains(r.why, "more than 24 operations could take effect at once") {
		t.Fatalf("%q: %s", r.result, r.why)
	}
	// A key long enough for the frontier search, made too wide by 30
	// overlapping reads at its start.
	for i := range frontierMinOps {
		t0 := int64(2000 + 2*i)
		ops = append(ops, rd(31, t0, t0+1, nilv))
	}
	res := CheckRegister(ops, Options{Timeout: time.Minute})
	if res.Valid != Valid || !strings.HasPrefix(res.Method, `Porcupine (the frontier search left key "" to Porcupine: more than 24 operations`) {
		t.Errorf("%s (%s), method %q", res.Valid, res.Message, res.Method)
	}
}

// twoProcessKey is a long two-process history of one key: reads, writes
// and cas of new values, a write in a thousand timing out.
func twoProcessKey(seed uint64, n int) []RegisterOp {
	return simulate(rand.New(rand.NewPCG(seed, 3)), simSpec{procs: 2, n: n, cas: true, info: 0.001})
}

// A long two-process key goes to the frontier search: valid, and invalid
// with a stale read planted at its end, the message naming the read. Both
// in little CPU time and without Porcupine's memory.
func TestCheckRegisterLongKeyByFrontier(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	ops := twoProcessKey(1, n)
	start := bound.SelfCPU()
	r := CheckRegister(ops, Options{Timeout: time.Minute, MemoryBudget: DefaultMemoryBudget()})
	if r.Valid != Valid || r.Method != MethodFrontier || r.KeysChecked != 1 {
		t.Fatalf("%s: %s; method %q", r.Valid, r.Message, r.Method)
	}
	end := ops[len(ops)-1].Return + 10
	stale := append(ops, wr(7, end, end+1, -1), wr(7, end+2, end+3, -2), rd(7, end+4, end+5, RegisterInt(-1)))
	r = CheckRegister(stale, Options{Timeout: time.Minute, MemoryBudget: DefaultMemoryBudget()})
	want := fmt.Sprintf("none explains the operations up to the return of process 7's read() -> -1 (called at %d, returned at %d)", end+4, end+5)
	if r.Valid != Invalid || r.Method != MethodFrontier || !strings.HasSuffix(r.Message, want) {
		t.Fatalf("%s: %s; method %q", r.Valid, r.Message, r.Method)
	}
	if used := bound.SelfCPU() - start; used > 30*time.Second {
		t.Errorf("%d operations twice: %s of CPU time", n, used)
	}
}

// The frontier search stops at the time limit and at the memory budget,
// unknown, like Porcupine.
func TestFrontierLimits(t *testing.T) {
	ops := twoProcessKey(2, 2*frontierMinOps)
	idx, maybe := oneKey(t, ops)
	r := frontierRegister(ops, idx, maybe, time.Now().Add(-time.Second), nil, nil)
	if r.result != porcupine.Unknown || r.memory {
		t.Errorf("past its deadline: %q, memory %v", r.result, r.memory)
	}
	res := CheckRegister(ops, Options{MemoryBudget: 1 << 10})
	if res.Valid != Unknown || !strings.Contains(res.Message, "memory budget 1.0 KiB exceeded") || res.Method != "" && res.Method != MethodFrontier {
		t.Errorf("1 KiB budget: %s (%s), method %q", res.Valid, res.Message, res.Method)
	}
}
