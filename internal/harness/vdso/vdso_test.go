package vdso

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the process to skew: with this variable set it
// prints its wall clock (seconds) and its monotonic clock every 20 ms.
const childEnv = "FENCECHECK_VDSO_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		start := time.Now()
		for {
			fmt.Printf("%d %d\n", time.Now().Unix(), time.Since(start).Milliseconds())
			time.Sleep(20 * time.Millisecond)
		}
	}
	os.Exit(m.Run())
}

type clockLine struct{ wall, monoMS int64 }

func TestSkewAndResetAGoProcess(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("writing another process's memory needs root")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan clockLine, 1000)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			w, _ := strconv.ParseInt(f[0], 10, 64)
			m, _ := strconv.ParseInt(f[1], 10, 64)
			lines <- clockLine{w, m}
		}
		close(lines)
	}()
	// latest drains what the child printed and returns its newest line,
	// waiting for one printed after now.
	latest := func() clockLine {
		time.Sleep(100 * time.Millisecond)
		var l clockLine
		for {
			select {
			case l = <-lines:
			default:
				if l.wall != 0 {
					return l
				}
				// Nothing printed yet (a busy machine): wait for a line.
				select {
				case l = <-lines:
				case <-time.After(10 * time.Second):
					t.Fatal("the child printed nothing for 10s")
				}
			}
		}
	}
	before := latest()
	if d := before.wall - time.Now().Unix(); d < -1 || d > 1 {
		t.Fatalf("child clock off by %ds before any skew", d)
	}
	pid := cmd.Process.Pid
	if err := SetOffset(pid, time.Hour); err != nil {
		t.Fatal(err)
	}
	ahead := latest()
	if d := ahead.wall - time.Now().Unix(); d < 3599 || d > 3601 {
		t.Errorf("after +1h the child's clock is %ds ahead", d)
	}
	if off, err := Offset(pid); err != nil || off != time.Hour {
		t.Errorf("Offset = %s, %v", off, err)
	}
	// A second call only changes the offset.
	if err := SetOffset(pid, -30*time.Second); err != nil {
		t.Fatal(err)
	}
	behind := latest()
	if d := behind.wall - time.Now().Unix(); d < -31 || d > -29 {
		t.Errorf("after -30s the child's clock is %ds off", d)
	}
	// The monotonic clock never moved.
	if behind.monoMS < ahead.monoMS || ahead.monoMS < before.monoMS {
		t.Errorf("monotonic clock went back: %d %d %d", before.monoMS, ahead.monoMS, behind.monoMS)
	}
	if err := Reset(pid); err != nil {
		t.Fatal(err)
	}
	after := latest()
	if d := after.wall - time.Now().Unix(); d < -1 || d > 1 {
		t.Errorf("after Reset the child's clock is %ds off", d)
	}
	if off, _ := Offset(pid); off != 0 {
		t.Errorf("Offset after Reset = %s", off)
	}
	// Reset of a clean process does nothing; the process still runs.
	if err := Reset(pid); err != nil {
		t.Fatal(err)
	}
	if st, _ := isStopped(pid); st {
		t.Errorf("the process was left stopped")
	}
	if l := latest(); l.monoMS <= after.monoMS {
		t.Errorf("the child stopped printing")
	}
}
