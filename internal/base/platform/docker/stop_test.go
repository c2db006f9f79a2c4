package docker

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
)

// busyChild is a multi-threaded Go process (this test binary, re-run with
// FENCECHECK_BUSY_CHILD=1): goroutines that wake every millisecond and a
// listener, as a worker has.
func busyChild(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBusyChild$")
	cmd.Env = append(os.Environ(), "FENCECHECK_BUSY_CHILD=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	time.Sleep(300 * time.Millisecond)
	return cmd
}

// TestBusyChild is busyChild's body; it does nothing in a test run.
func TestBusyChild(t *testing.T) {
	if os.Getenv("FENCECHECK_BUSY_CHILD") != "1" {
		t.Skip("the child process of TestWaitStopped")
	}
	for i := 0; i < 4; i++ {
		go func() {
			for {
				time.Sleep(time.Millisecond)
			}
		}()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		go ln.Accept()
	}
	time.Sleep(time.Hour)
}

// kill(2) returns before a SIGSTOP has stopped every thread: a caller that
// lets the process go on right after it races the stop (the cause of
// TestProxyRestartUnderAStaleHolder's failure in CI). WaitStopped returns
// only once every thread is stopped.
func TestWaitStopped(t *testing.T) {
	cmd := busyChild(t)
	pid := cmd.Process.Pid
	const rounds = 100
	early := 0
	for i := 0; i < rounds; i++ {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if tid, _ := runningThread(pid); tid != 0 {
			early++
		}
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		err := WaitStopped(ctx, pid)
		cancel()
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if tid, st := runningThread(pid); tid != 0 {
			t.Fatalf("round %d: WaitStopped returned with thread %d in state %s", i, tid, st)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("a thread still ran right after kill(SIGSTOP) returned in %d of %d rounds", early, rounds)
}

func TestWaitStoppedTimesOutOnARunningProcess(t *testing.T) {
	cmd := busyChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	// The busy child never stops: only the deadline can end the wait,
	// so its returning at all (within the hang limit) is the property.
	var err error
	bound.Returns(t, "WaitStopped with a 100ms deadline on a running process", func() {
		err = WaitStopped(ctx, cmd.Process.Pid)
	})
	if !errors.Is(err, runtime.ErrNotStopped) {
		t.Fatalf("WaitStopped on a running process: %v, want ErrNotStopped", err)
	}
	t.Log(err)
}

func TestWaitStoppedOnAGoneProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := WaitStopped(context.Background(), cmd.Process.Pid); err != nil {
		t.Fatalf("a process that ended counts as stopped: %v", err)
	}
}
