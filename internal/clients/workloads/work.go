package workloads

import (
	"context"
	"crypto/sha256"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// DoWork is a critical section's work between its lease check and its
// write: cfg.Work of waiting, or with cfg.WorkCPU of computing, until the
// calling thread has used that much CPU time (so a CPU throttle stretches
// it, as it stretches a real computation, where a wait would not notice).
// It returns ctx's error if ctx ends first.
func DoWork(ctx context.Context, cfg Config) error {
	if cfg.Work <= 0 {
		return nil
	}
	if !cfg.WorkCPU {
		t := time.NewTimer(cfg.Work)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := threadCPU()
	if err != nil {
		return err
	}
	var sum [32]byte
	for {
		for range 1000 { // about 0.2 ms of hashing between looks at the clock
			sum = sha256.Sum256(sum[:])
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		now, err := threadCPU()
		if err != nil {
			return err
		}
		if now-start >= cfg.Work {
			return nil
		}
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
