// Command spin is a tool of the fault tests (faults_integration_test.go),
// written for them: they copy it into a worker container, whose image
// (FROM scratch) has no shell, and run it there with the Engine's exec.
//
//	spin start     starts a busy loop (one core, 60 s at most) in the
//	               background, detached, and prints its pid
//	spin kill PID  stops it
//	spin cpustat   prints the container's cgroup cpu.stat (cgroup v2's
//	               own cgroup, or v1's cpu controller)
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "spin:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: spin start | kill PID | cpustat")
	}
	switch args[0] {
	case "start":
		// Its output goes nowhere: the exec that started it ends when
		// this process does, not when the loop does.
		cmd := exec.Command("/proc/self/exe", "loop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		fmt.Println(cmd.Process.Pid)
		return nil
	case "loop":
		for start := time.Now(); time.Since(start) < time.Minute; {
		}
		return nil
	case "kill":
		if len(args) != 2 {
			return fmt.Errorf("usage: spin kill PID")
		}
		pid, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		return syscall.Kill(pid, syscall.SIGKILL)
	case "cpustat":
		return cpuStat()
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// cpuStat prints the first cpu.stat with nr_throttled among the places
// the container's cgroup may show it: cgroup v2's path of this process
// (/proc/self/cgroup's 0:: line, with the host's cgroup namespace), v2's
// root (the container's own namespace), v1's cpu controller.
func cpuStat() error {
	var own string
	if f, err := os.Open("/proc/self/cgroup"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
				own = "/sys/fs/cgroup" + p + "/cpu.stat"
			}
		}
		f.Close()
	}
	for _, p := range []string{own, "/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/cpu/cpu.stat", "/sys/fs/cgroup/cpu,cpuacct/cpu.stat"} {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "nr_throttled ") {
			_, err := os.Stdout.Write(b)
			return err
		}
	}
	return fmt.Errorf("no cpu.stat with nr_throttled")
}
