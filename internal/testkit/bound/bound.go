// Package bound holds what a test may bound in place of the machine's
// speed (CONTRIBUTING.md, "How long the tests take"): CPU time, and wall
// time only as a hang limit.
//
// A loaded machine stretches how long work takes, not how much CPU it
// needs, so a bound on CPU time catches a check that ignores its deadline
// or a refusal that first did real work, and holds on a CI runner shared
// with twenty others. Wall time is bounded only by HangLimit: a call that
// must return, and has not after five minutes, is hung, not slow.
// scripts/wallclock refuses any other wall-clock bound in a test.
package bound

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// HangLimit is the shortest wall-clock bound a test may assert: past it a
// call is hung, however loaded the machine.
const HangLimit = 5 * time.Minute

// SelfCPU is the CPU time, user and system, this process has used so far.
// It counts the whole test process: a test that bounds it runs without
// t.Parallel (Go runs a package's sequential tests alone), so only its
// own work, the runtime's and the garbage collector's count.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic("getrusage: " + err.Error()) // cannot fail for RUSAGE_SELF
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ChildCPU is the CPU time, user and system, an exited child used (0 for
// a nil state, as of a process that never started).
func ChildCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// Returns runs fn and fails the test (Fatal, naming what) when fn has not
// returned within HangLimit: for a call whose returning at all is the
// property (it heeds a deadline, it does not wait for a FIFO's writer that
// never comes). fn keeps running after such a failure; it must not call
// t.Fatal itself.
func Returns(t testing.TB, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(HangLimit):
		t.Fatalf("%s: still running after %s: hung", what, HangLimit)
	}
}
