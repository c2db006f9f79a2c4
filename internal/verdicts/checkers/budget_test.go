package checkers

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// budgetMessage is the message of a check the memory budget stopped.
var budgetMessage = regexp.MustCompile(`^memory budget (\d+\.\d [KMGT]iB) exceeded \(peak (\d+ B|\d+\.\d [KMGT]iB)\) after checking (\d+) of (\d+) operations`)

// budgetCut checks that msg is budgetMessage for a budget of want, and
// returns how many operations it says were checked, and of how many.
func budgetCut(t *testing.T, msg, want string) (checked, of int) {
	t.Helper()
	m := budgetMessage.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("message %q: want %s", msg, budgetMessage)
	}
	if m[1] != want {
		t.Errorf("message %q: budget %s, want %s", msg, m[1], want)
	}
	checked, _ = strconv.Atoi(m[3])
	of, _ = strconv.Atoi(m[4])
	return checked, of
}

// legalRegister is a linearizable register history of one key with
// concurrent operations and a few info ones: its search takes thousands of
// steps.
func legalRegister() []RegisterOp {
	return genRegister(genSpec{seed: 7, keys: 1, opsPerKey: 400, concurrency: 6, values: 5, info: 0.03})
}

// Porcupine's search cut short by failing steps says Illegal: that is what
// the checkers must never report as Invalid.
func TestAbortedSearchIsIllegalToPorcupine(t *testing.T) {
	ops := legalRegister()
	res := KeyedResult{}
	keep, maybe, err := tally(&res, len(ops), func(i int) opView {
		o := &ops[i]
		return opView{t: o.Type, read: o.F == RegisterRead, known: true, process: o.Process, key: o.Key, call: o.Call, ret: o.Return}
	})
	if err != nil {
		t.Fatal(err)
	}
	_, parts := groupByKey(len(ops), func(i int) string { return ops[i].Key }, keep)
	pops := buildRegister(ops, parts[0], maybe, false)
	if r := porcupine.CheckOperationsTimeout(registerModel, pops, 10*time.Second); r != porcupine.Ok {
		t.Fatalf("the whole search: %s, want Ok", r)
	}
	steps := 0
	m := registerModel
	m.Step = func(s, in, out any) (bool, any) {
		if steps++; steps > 100 {
			return false, s
		}
		return regStepFunc(s, in, out)
	}
	if r := porcupine.CheckOperationsTimeout(m, pops, 10*time.Second); r != porcupine.Illegal {
		t.Fatalf("the search cut short: %s, want Illegal", r)
	}
}

// A legal history whose search the budget stops half-way is Unknown, never
// Invalid, on every model, and says how far it got.
func TestBudgetAbortsLegalHistoryAsUnknown(t *testing.T) {
	opts := Options{MemoryBudget: 1 << 30, memSample: func() uint64 { return 0 }, tripAfter: 100}
	t.Run("register", func(t *testing.T) {
		ops := legalRegister()
		if r := CheckRegister(ops, Options{}); r.Valid != Valid {
			t.Fatalf("without a budget: %s: %s", r.Valid, r.Message)
		}
		r := CheckRegister(ops, opts)
		if r.Valid != Unknown || r.KeysChecked != 0 || r.FailingKeys != 0 {
			t.Fatalf("%s, %d keys checked, %d failing: %s", r.Valid, r.KeysChecked, r.FailingKeys, r.Message)
		}
		checked, of := budgetCut(t, r.Message, "1.0 GiB")
		if checked <= 0 || checked >= of || of != r.Checked {
			t.Errorf("checked %d of %d, want some of %d: %s", checked, of, r.Checked, r.Message)
		}
	})
	t.Run("register, several keys", func(t *testing.T) {
		ops := genRegister(genSpec{seed: 3, keys: 8, opsPerKey: 200, concurrency: 5, values: 5, info: 0.02})
		o := opts
		o.tripAfter = 2000
		r := CheckRegister(ops, o)
		if r.Valid != Unknown || r.FailingKeys != 0 || r.KeysChecked == r.Keys {
			t.Fatalf("%s, %d of %d keys checked, %d failing: %s", r.Valid, r.KeysChecked, r.Keys, r.FailingKeys, r.Message)
		}
		budgetCut(t, r.Message, "1.0 GiB")
		if want := fmt.Sprintf("; %d of 8 keys checked to the end, none failing;", r.KeysChecked); !strings.Contains(r.Message, want) {
			t.Errorf("message %q: want %q", r.Message, want)
		}
	})
	t.Run("kv", func(t *testing.T) {
		var ops []KVOp
		for i := range 60 {
			p := i % 4
			v := strconv.Itoa(i)
			ops = append(ops,
				KVOp{Process: p, Key: "k", F: KVAppend, Type: history.Ok, Call: int64(10 * i), Return: int64(10*i + 25), Value: v})
		}
		if r := CheckKV(ops, Options{}); r.Valid != Valid {
			t.Fatalf("without a budget: %s: %s", r.Valid, r.Message)
		}
		o := opts
		o.tripAfter = 20
		r := CheckKV(ops, o)
		if r.Valid != Unknown {
			t.Fatalf("%s: %s", r.Valid, r.Message)
		}
		budgetCut(t, r.Message, "1.0 GiB")
	})
	t.Run("lock-append", func(t *testing.T) {
		h := newHist(t)
		var l []int64
		for e := int64(1); e <= 40; e++ {
			p := history.Process(e % 3)
			h.Invoke(p, e).Read(p, l...)
			h.Ok(p, e, e, l...)
			l = append(l, e)
		}
		h.FinalRead(9, l...)
		ops, err := history.Pair(h.Events)
		if err != nil {
			t.Fatal(err)
		}
		if r := parseHist(t, ops).Linearizable(Options{}); r.Valid != Valid {
			t.Fatalf("without a budget: %s: %s", r.Valid, r.Message)
		}
		o := opts
		o.tripAfter = 10
		r := parseHist(t, ops).Linearizable(o)
		if r.Valid != Unknown {
			t.Fatalf("%s: %s", r.Valid, r.Message)
		}
		if checked, of := budgetCut(t, r.Message, "1.0 GiB"); checked >= of || of != r.Ops {
			t.Errorf("checked %d of %d, want fewer of %d", checked, of, r.Ops)
		}
		parsed, err := parseAppends(ops)
		if err != nil {
			t.Fatal(err)
		}
		if lin := parsed.Linearizable(o); lin.Valid != Unknown || Compose(lin.Valid, Valid) != Unknown {
			t.Errorf("the parsed history's linearizable: %s: %s", lin.Valid, lin.Message)
		}
	})
}

// hardRegister is a small history that Porcupine cannot settle in any
// reasonable time: 20 concurrent writes with an unknown outcome, then reads
// of 1, 2, 1, which no order of the writes explains (each writes once), so
// the search tries every subset of them.
func hardRegister() []RegisterOp {
	var ops []RegisterOp
	for v := range 20 {
		ops = append(ops, RegisterOp{Process: v, Key: "k", F: RegisterWrite, Type: history.Info, Call: int64(v), Value: RegisterInt(int64(v + 1))})
	}
	for i, v := range []int64{1, 2, 1} {
		t := int64(100 + 10*i)
		ops = append(ops, RegisterOp{Process: 20, Key: "k", F: RegisterRead, Type: history.Ok, Call: t, Return: t + 5, Value: RegisterInt(v)})
	}
	return ops
}

// A tiny budget stops the check of a hard history at once: Unknown, with
// the budget and the peak measured, and the runtime's memory limit is as it
// was.
func TestTinyBudgetStopsHardHistory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	start := bound.SelfCPU()
	r := CheckRegister(hardRegister(), Options{Timeout: time.Minute, MemoryBudget: 1 << 20})
	if r.Valid != Unknown || r.FailingKeys != 0 {
		t.Fatalf("%s: %s", r.Valid, r.Message)
	}
	if checked, of := budgetCut(t, r.Message, "1.0 MiB"); checked != 0 || of != 23 {
		t.Errorf("checked %d of %d, want 0 of 23: %s", checked, of, r.Message)
	}
	// Stopped by the budget, not by the minute's timeout: CPU time, which
	// a loaded machine does not stretch, is a fraction of a second.
	if used := bound.SelfCPU() - start; used > 10*time.Second {
		t.Errorf("used %s of CPU time", used)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("memory limit %d after the check, %d before", after, before)
	}
}

// A budget the search reaches, measured for real, stops it half-way; the
// memory limit is restored.
func TestBudgetStopsGrowingSearch(t *testing.T) {
	if raceEnabled {
		t.Skip("the search is too slow under the race detector to reach the budget soon")
	}
	before := debug.SetMemoryLimit(-1)
	budget := newInUse()() + 8<<20
	start := bound.SelfCPU()
	r := CheckRegister(hardRegister(), Options{Timeout: 30 * time.Second, MemoryBudget: budget})
	used := bound.SelfCPU() - start
	t.Logf("%s in %s of CPU time: %s", r.Valid, used.Round(time.Millisecond), r.Message)
	if r.Valid != Unknown {
		t.Fatalf("%s: %s", r.Valid, r.Message)
	}
	if checked, of := budgetCut(t, r.Message, FormatBytes(budget)); checked >= of {
		t.Errorf("checked %d of %d", checked, of)
	}
	// Stopped by the budget, not by the 30 s timeout: the search is
	// CPU-bound, so one that ran to its timeout would use about 30 s of
	// CPU per core busy, whatever the load.
	if used > 20*time.Second {
		t.Errorf("used %s of CPU time", used)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("memory limit %d after the check, %d before", after, before)
	}
}

// A generous budget changes no verdict, nor any message.
func TestGenerousBudgetChangesNothing(t *testing.T) {
	generous := Options{Timeout: time.Minute, MemoryBudget: DefaultMemoryBudget()}
	none := Options{Timeout: time.Minute}
	small := genSpec{seed: 5, keys: 6, opsPerKey: 300, concurrency: 5, values: 5, info: 0.01}
	for _, c := range []struct {
		name string
		ops  []RegisterOp
		want Validity
	}{
		{"register valid", genRegister(small), Valid},
		{"register stale read", staleRead(genRegister(small), "k0003", 0.5), Invalid},
	} {
		// (Which keys an invalid history's check got to before it stopped
		// at the failing one varies from run to run.)
		a, b := CheckRegister(c.ops, none), CheckRegister(c.ops, generous)
		if a.Valid != c.want || b.Valid != c.want || a.FailingKey != b.FailingKey || c.want == Valid && a.Message != b.Message {
			t.Errorf("%s: without a budget %s (%s), with %s (%s)", c.name, a.Valid, a.Message, b.Valid, b.Message)
		}
	}
	legal, illegal := newHist(t), newHist(t)
	for _, h := range []*hist{legal, illegal} {
		h.Invoke(0, 1).Read(0).Ok(0, 1, 1)
		h.Invoke(1, 2).Read(1, 1).Ok(1, 2, 2, 1)
	}
	legal.FinalRead(9, 1, 2)
	illegal.FinalRead(9, 2)
	for _, c := range []struct {
		name string
		h    *hist
		want Validity
	}{{"lock-append legal", legal, Valid}, {"lock-append illegal", illegal, Invalid}} {
		parsed, err := parseAppends(pair(t, c.h.Events))
		if err != nil {
			t.Fatal(err)
		}
		la, lb := parsed.Linearizable(none), parsed.Linearizable(generous)
		if la.Valid != c.want || lb.Valid != c.want || la.Message != lb.Message {
			t.Errorf("%s: without a budget %s (%s), with %s (%s)", c.name, la.Valid, la.Message, lb.Valid, lb.Message)
		}
	}
}

func TestDefaultMemoryBudget(t *testing.T) {
	b := DefaultMemoryBudget()
	if total := memTotal(); total > 0 && b > total/4 {
		t.Errorf("default budget %s: more than a quarter of MemTotal %s", FormatBytes(b), FormatBytes(total))
	}
	if b == 0 {
		t.Error("default budget 0")
	}
	t.Logf("default budget %s (MemTotal %s, cgroup limit %d)", FormatBytes(b), FormatBytes(memTotal()), cgroupLimit())
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 6 << 30: "6.0 GiB",
		6<<30 + 100<<20: "6.1 GiB", 1 << 40: "1.0 TiB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// LowerMemoryLimit and the guards share the runtime's soft limit: the
// smallest holds, a release puts the next smallest back, and the last one
// the limit set before the first, whatever the order of the releases.
func TestLowerMemoryLimitNests(t *testing.T) {
	orig := debug.SetMemoryLimit(8 << 30)
	defer debug.SetMemoryLimit(orig)
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	a := LowerMemoryLimit(4 << 30)
	b := LowerMemoryLimit(6 << 30)
	if got := limit(); got != 4<<30 {
		t.Fatalf("limit %d, want the smaller 4 GiB", got)
	}
	a()
	a() // once
	if got := limit(); got != 6<<30 {
		t.Fatalf("after the first release: limit %d, want 6 GiB", got)
	}
	c := LowerMemoryLimit(16 << 30) // above the one set before: changes nothing
	if got := limit(); got != 6<<30 {
		t.Fatalf("limit %d, want 6 GiB still", got)
	}
	b()
	c()
	if got := limit(); got != 8<<30 {
		t.Fatalf("after the last release: limit %d, want the 8 GiB set before", got)
	}
}
