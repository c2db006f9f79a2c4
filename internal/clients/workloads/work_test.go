package workloads

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
)

// DoWork's waiting uses no CPU; its computing uses the work's CPU time, at
// least, and both take at least the work's wall time; a cancelled context
// ends either early.
func TestDoWork(t *testing.T) {
	cpu := func(f func()) (time.Duration, time.Duration) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, _ := threadCPU()
		w0 := time.Now()
		f()
		c1, _ := threadCPU()
		return c1 - c0, time.Since(w0)
	}
	work := 80 * time.Millisecond
	used, took := cpu(func() {
		if err := DoWork(context.Background(), Config{WorkerKnobs: spec.WorkerKnobs{Work: work}}); err != nil {
			t.Fatal(err)
		}
	})
	if took < work || used > 20*time.Millisecond {
		t.Errorf("waiting: %s of CPU in %s", used, took)
	}
	used, took = cpu(func() {
		if err := DoWork(context.Background(), Config{WorkerKnobs: spec.WorkerKnobs{Work: work, WorkCPU: true}}); err != nil {
			t.Fatal(err)
		}
	})
	if took < work || used < work {
		t.Errorf("computing: %s of CPU in %s, want at least %s of each", used, took, work)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	// Cancelled, not a minute's computation: this thread's CPU time (the
	// loop computes on it alone) stays far below the minute.
	var err error
	used, _ = cpu(func() { err = DoWork(ctx, Config{WorkerKnobs: spec.WorkerKnobs{Work: time.Minute, WorkCPU: true}}) })
	if err == nil || used > 5*time.Second {
		t.Errorf("a cancelled computation: %v after %s of CPU", err, used)
	}
}
