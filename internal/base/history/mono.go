package history

import "golang.org/x/sys/unix"

// KernelMonotonic is the kernel's CLOCK_MONOTONIC in ns, read by a system
// call: one clock for the harness and every worker on the machine (their
// containers share its kernel), which the clock faults leave alone (they
// patch a process's vDSO, which this does not use), and which runs on
// while a process is paused. A worker stamps a held answer with it when
// the library gave the answer; test.json records it at the history's
// start; their difference places the answer on the history's clock even
// when the worker was paused, or starved of CPU, before it could send it.
// 0 if the clock cannot be read.
func KernelMonotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
