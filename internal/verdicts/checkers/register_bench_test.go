package checkers

import (
	"runtime"
	"testing"
	"time"
)

// bigSpec is the checker's performance target: a 1M-operation register
// history, 1000 keys with 10 processes each, half reads, 30% writes, 20%
// cas (about a third of them failing), values 0 to 4 as in Jepsen's
// register tests, 1% of the writes and cas info.
var bigSpec = genSpec{seed: 1, keys: 1000, opsPerKey: 1000, concurrency: 10, values: 5, info: 0.01}

// bigLimit is the target: under 30 s on 2 cores, which the check (its keys
// on GOMAXPROCS goroutines) keeps busy: 60 s of CPU time.
const bigLimit = 30 * time.Second

// bigCPU is the target as CPU time, which the tests bound: a loaded machine
// stretches the wall time, not the CPU time the check needs.
const bigCPU = 2 * bigLimit

// bigTimeout is the check's own time limit in the tests: far past the
// target, so that a loaded machine's slow wall clock does not turn the
// verdict Unknown (the CPU time bounds the check's speed).
const bigTimeout = 20 * bigLimit

// BenchmarkCheckRegister1M checks the 1M-operation history (generated
// once, outside the timing).
func BenchmarkCheckRegister1M(b *testing.B) {
	ops := genRegister(bigSpec)
	b.ReportAllocs()
	for b.Loop() {
		if r := CheckRegister(ops, Options{}); r.Valid != Valid {
			b.Fatalf("%s: %s", r.Valid, r.Message)
		}
	}
}

// BenchmarkCheckRegister1MStale checks it with a stale read in the middle
// of the last key's history: every key is checked before it.
func BenchmarkCheckRegister1MStale(b *testing.B) {
	ops := staleRead(genRegister(bigSpec), "k0999", 0.5)
	for b.Loop() {
		if r := CheckRegister(ops, Options{}); r.Valid != Invalid {
			b.Fatalf("%s: %s", r.Valid, r.Message)
		}
	}
}

// TestCheckRegister1M checks the 1M-operation history, and the same with a
// stale read in the middle of its last key's history, each within 60 s of
// CPU time (30 s on 2 cores; the limit is not asserted under the race
// detector).
func TestCheckRegister1M(t *testing.T) {
	if testing.Short() {
		t.Skip("1M-operation check: skipped under -short")
	}
	ops := genRegister(bigSpec)
	if len(ops) != 1_000_000 {
		t.Fatalf("generated %d operations, want 1000000", len(ops))
	}
	t.Run("valid", func(t *testing.T) {
		start := cpuTime(t)
		r := CheckRegister(ops, Options{Timeout: bigTimeout})
		cpu := cpuTime(t) - start
		t.Logf("%s in %s (%s of CPU) on %d cores: %s", r.Valid, r.Elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), runtime.GOMAXPROCS(0), r.Message)
		if r.Valid != Valid || r.Keys != 1000 || r.KeysChecked != 1000 || r.Ops != len(ops) {
			t.Fatalf("%s, %d of %d keys checked: %s", r.Valid, r.KeysChecked, r.Keys, r.Message)
		}
		if cpu > bigCPU && !raceEnabled {
			t.Errorf("took %s of CPU time, want under %s (%s on 2 cores)", cpu, bigCPU, bigLimit)
		}
	})
	t.Run("stale read", func(t *testing.T) {
		stale := staleRead(ops, "k0999", 0.5)
		start := cpuTime(t)
		r := CheckRegister(stale, Options{Timeout: bigTimeout})
		cpu := cpuTime(t) - start
		t.Logf("%s in %s (%s of CPU): %s", r.Valid, r.Elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), r.Message)
		if r.Valid != Invalid || r.FailingKey != "k0999" {
			t.Fatalf("%s, failing key %q: %s", r.Valid, r.FailingKey, r.Message)
		}
		if cpu > bigCPU && !raceEnabled {
			t.Errorf("took %s of CPU time, want under %s (%s on 2 cores)", cpu, bigCPU, bigLimit)
		}
	})
}
