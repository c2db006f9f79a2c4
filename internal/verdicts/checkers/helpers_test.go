package checkers

import (
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/histtest"
)

// The tests' lock-append histories (histtest).
type hist = histtest.Hist

const (
	ms          = histtest.MS
	raceEnabled = histtest.RaceEnabled
)

var (
	newHist   = histtest.New
	list      = histtest.List
	seq       = histtest.Seq
	pair      = histtest.Pair
	synthetic = histtest.Synthetic
)

// parseAppends decodes a lock-append history as the lock-append workload
// does (its ParseHistory). That workload's package imports this one, so
// only an external test can import it: appends_ext_test.go sets this
// through export_test.go's ParseAppends before any test runs.
var parseAppends func([]history.Op) (*AppendHistory, error)

// parseHist is parseAppends for a history that must decode.
func parseHist(t testing.TB, ops []history.Op) *AppendHistory {
	t.Helper()
	h, err := parseAppends(ops)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// cpuTime is the CPU time (user and system) this process has used so far.
// A check's performance is bounded in CPU time, not wall time: on a busy
// machine the wall clock measures the other work too, while a check that
// got slower (a quadratic step) takes more CPU however idle or loaded the
// machine. The package's tests run one at a time, so the process's CPU
// time is the check's (its garbage collection included).
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
