package cli

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var budgetExceeded = regexp.MustCompile(`memory budget 1\.0 KiB exceeded \(peak \d+\.\d [KMG]iB\) after checking 0 of \d+ operations`)

// --check-memory stops the check past its budget, in both forms of check:
// unknown (exit 2), saying why, even for a history that is not
// linearizable; 0 is no limit.
func TestCheckMemoryFlag(t *testing.T) {
	etcd := filepath.Join(jepsenTestdata(t), "jepsen-etcd", "etcd_000.log")
	code, stdout, stderr := runInProcess("check", "--check-memory", "1KiB", "--jepsen-history", etcd, "--model", "cas-register")
	if code != exitUnknown || !strings.HasPrefix(stdout, "unknown  "+etcd) || !budgetExceeded.MatchString(stdout) {
		t.Errorf("--check-memory 1KiB: exit %d, want %d and the budget's message\n%s%s", code, exitUnknown, stdout, stderr)
	}
	// etcd_000.log is not linearizable: without a budget, or with the
	// default one, the check says so.
	for _, args := range [][]string{{"--check-memory", "0"}, nil} {
		code, stdout, stderr = runInProcess(append(append([]string{"check"}, args...), "--jepsen-history", etcd, "--model", "cas-register")...)
		if code != exitInvalid || strings.Contains(stdout, "memory budget") {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, exitInvalid, stdout, stderr)
		}
	}
	code, _, stderr = runInProcess("check", "--check-memory", "lots", "--jepsen-history", etcd, "--model", "cas-register")
	if code != exitBadArgs || !strings.Contains(stderr, `size "lots"`) {
		t.Errorf("--check-memory lots: exit %d, want %d\n%s", code, exitBadArgs, stderr)
	}

	for _, run := range []string{"etcd-token-pause-holder", "consul-register-default-partition"} {
		dir := copyRun(t, filepath.Join("testdata", "runs", run))
		code, stdout, stderr := runInProcess("check", "--check-memory", "1KiB", dir)
		if code != exitUnknown {
			t.Errorf("%s with --check-memory 1KiB: exit %d, want %d\n%s%s", run, code, exitUnknown, stdout, stderr)
		}
		var res struct {
			Valid    any `json:"valid"`
			Checkers map[string]struct {
				Valid   any    `json:"valid"`
				Message string `json:"message"`
			} `json:"checkers"`
		}
		readJSONFile(t, filepath.Join(dir, "results.json"), &res)
		lin := res.Checkers["linearizable"]
		if res.Valid != "unknown" || lin.Valid != "unknown" || !budgetExceeded.MatchString(lin.Message) {
			t.Errorf("%s: results.json valid %v, linearizable %v: %q", run, res.Valid, lin.Valid, lin.Message)
		}
	}
}

// writeSequentialRegisterLog writes a Jepsen cas-register history of n
// operations as jepsen.util log lines: five processes take turns, one
// operation at a time (each completes before the next is invoked), reads,
// writes and cas of values 0 to 4 as in Jepsen's etcd test, linearizable
// by construction. One write or cas in a thousand times out (:info; half of
// those took effect) and its process is replaced, as in Jepsen.
func writeSequentialRegisterLog(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	procs := []int{0, 1, 2, 3, 4}
	next := len(procs)
	state, present := 0, false
	line := func(p int, typ, fn, v string) {
		fmt.Fprintf(w, "INFO  jepsen.util - %d\t:%s\t:%s\t%s\n", p, typ, fn, v)
	}
	for i := range n {
		slot := i % len(procs)
		p := procs[slot]
		v, old := rng.IntN(5), rng.IntN(5)
		switch r := rng.IntN(10); {
		case r < 5:
			line(p, "invoke", "read", "nil")
			if present {
				line(p, "ok", "read", fmt.Sprint(state))
			} else {
				line(p, "ok", "read", "nil")
			}
		case r < 8:
			line(p, "invoke", "write", fmt.Sprint(v))
			if rng.IntN(1000) == 0 {
				if rng.IntN(2) == 0 {
					state, present = v, true
				}
				line(p, "info", "write", ":timed-out")
				procs[slot], next = next, next+1
				continue
			}
			state, present = v, true
			line(p, "ok", "write", fmt.Sprint(v))
		default:
			arg := fmt.Sprintf("[%d %d]", old, v)
			line(p, "invoke", "cas", arg)
			if rng.IntN(1000) == 0 {
				if present && state == old && rng.IntN(2) == 0 {
					state = v
				}
				line(p, "info", "cas", ":timed-out")
				procs[slot], next = next, next+1
				continue
			}
			if present && state == old {
				state = v
				line(p, "ok", "cas", arg)
			} else {
				line(p, "fail", "cas", arg)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// The case: a 1M-operation sequential cas-register history, whose
// search would need about 125 GB (Porcupine keeps a 125 KB bitset for each
// state it reaches), ends within its time limit, unknown with the budget's
// reason, and the process's peak resident size stays under the budget.
func TestCheckMemory1MSequentialRegister(t *testing.T) {
	if testing.Short() {
		t.Skip("1M-operation history: skipped under -short")
	}
	t.Parallel() // a CPU for seconds (13 s beside other jobs on 2 cores)
	const budget = "1GiB"
	path := filepath.Join(t.TempDir(), "cas-register-1m.log")
	writeSequentialRegisterLog(t, path, 1_000_000)
	start := time.Now()
	// The check's time limit far past the seconds the budget takes to
	// reach: at load 20 those seconds can pass a minute, and a check cut
	// by its time limit first would be unknown for the wrong reason.
	r := runHostile(t, 12*time.Minute, "check", "--check-timeout", "10m", "--check-memory", budget, "--jepsen-history", path, "--model", "cas-register")
	took := time.Since(start)
	if r.code != exitUnknown && r.code != exitValid {
		t.Fatalf("exit %d, want %d (unknown) or %d (valid)", r.code, exitUnknown, exitValid)
	}
	if r.code == exitUnknown && !strings.Contains(r.stdout, "memory budget 1.0 GiB exceeded (peak ") {
		t.Errorf("unknown, but not for the memory budget:\n%s", r.stdout)
	}
	if r.maxRSS > 1<<30 {
		t.Errorf("peak resident size %d MiB, over the %s budget", r.maxRSS>>20, budget)
	}
	if took > 11*time.Minute { // reading the file, then at most the 10 min check
		t.Errorf("took %s", took)
	}
}
