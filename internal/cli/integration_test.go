package cli

// Integration tests: the fencecheck binary, run as a user runs it, against
// real etcd clusters in Docker. They need a Docker Engine; without one they
// fail (they skip only under -short, or with FENCECHECK_SKIP_DOCKER=1 set
// explicitly). The binary comes from FENCECHECK_BIN (make test sets it) or
// is built here.
//
// Each test that runs clusters is parallel (t.Parallel at its top, and in
// its subtests): each run has its own containers, network and results
// directory, and a test looks only at its own runs' (assertRunsGone,
// stoppedRunProcesses), so other tests' runs, of this package or another
// one, may run beside it. The exceptions run first, one at a time:
// TestImagesBuildNamed (the images every other test uses) and
// TestImageNotInEngine (it bounds its own time); and TestCleanAfterHarnessKilled,
// which removes every fencecheck container, runs only alone (requireAlone).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/belief"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/kept"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/leaders"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// fencecheckBinary returns the binary under test.
func fencecheckBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("FENCECHECK_BIN"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "fencecheck-test-bin-")
		if err != nil {
			binErr = err
			return
		}
		// Both binaries, as make build: the worker images are built from
		// the worker binary beside fencecheck.
		binPath = filepath.Join(dir, "fencecheck")
		for _, c := range [][]string{
			{"build", "-trimpath", "-o", binPath, "../../cmd/fencecheck"},
			{"build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, harness.WorkerBinaryName), "../../cmd/fencecheck-worker"},
		} {
			cmd := exec.Command("go", c...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = errors.New(string(out))
				return
			}
		}
	})
	if binErr != nil {
		t.Fatalf("building fencecheck: %v", binErr)
	}
	return binPath
}

// requireDocker fails the test when the Engine does not answer.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	if os.Getenv("FENCECHECK_SKIP_DOCKER") == "1" {
		t.Skip("integration test: FENCECHECK_SKIP_DOCKER=1")
	}
	eng, err := docker.Connect(context.Background())
	if err != nil {
		t.Fatalf("integration tests need a Docker Engine: %v", err)
	}
	eng.Close()
}

type cliResult struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration // wall time: logged, never bounded below runHangs
	cpu            time.Duration // the child's CPU time, user and system
}

func runCLI(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(fencecheckBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start), cpu: bound.ChildCPU(cmd.ProcessState)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("fencecheck %v: %v", args, err)
	}
	t.Logf("fencecheck %s: exit %d in %s\n%s%s", strings.Join(args, " "), r.code, r.elapsed.Round(time.Millisecond), r.stdout, lastLines(r.stderr, 15))
	return r
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// assertNoLeftovers checks that no fencecheck container or network remains
// and that no process on the machine is stopped inside a container.
func assertNoLeftovers(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	managed := runtime.LabelManaged + "=1"
	cs, err := eng.LabelledContainers(ctx, managed)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		t.Errorf("container left behind: %s %s (%s)", c.ID[:12], c.Name, c.State)
	}
	ns, err := eng.LabelledNetworks(ctx, managed)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		leftNetwork(t, eng, n, "")
	}
	for _, pid := range stoppedContainerProcesses(t) {
		t.Errorf("process %d is stopped (state T) in a container", pid)
	}
}

// leftNetwork fails the test for a fencecheck network still listed, unless
// the Engine will not remove it though nothing is attached to it
// (runtime.ErrStuckNetwork: an Engine fault that only a dockerd restart
// mends), which is logged.
func leftNetwork(t *testing.T, eng *docker.Engine, n docker.Object, what string) {
	t.Helper()
	id, err := runtime.ParseRunID(n.Labels[runtime.LabelRun]) // a label read back is parsed as any run id
	if err != nil {
		t.Errorf("network %s: label %s: %v", n.Name, runtime.LabelRun, err)
		return
	}
	done, err := eng.CleanRun(context.Background(), id)
	if err == nil && done.Containers == 0 && slices.Contains(done.Stuck, n.Name) {
		t.Logf("network %s left by the Engine: %v", strings.TrimSpace(n.Name+" "+what), runtime.ErrStuckNetwork)
		return
	}
	t.Errorf("network %s left behind (clean: %+v, %v)", strings.TrimSpace(n.Name+" "+what), done, err)
}

// runIDs returns the run ids of every run stored under a results directory.
func runIDs(t *testing.T, results string) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(results, "*", "*", "test.json"))
	var ids []string
	for _, p := range paths {
		var v struct {
			RunID string `json:"run_id"`
		}
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &v) != nil || v.RunID == "" {
			t.Fatalf("%s: no run id", p)
		}
		ids = append(ids, v.RunID)
	}
	if len(ids) == 0 {
		t.Fatalf("no run under %s", results)
	}
	return ids
}

// assertRunsGone checks that no container or network of the runs stored
// under a results directory remains (their processes, rules, qdiscs and
// skewed clocks went with them). Unlike assertNoLeftovers it ignores what
// other tests running at the same time own.
func assertRunsGone(t *testing.T, results string) {
	t.Helper()
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, id := range runIDs(t, results) {
		cs, err := eng.LabelledContainers(ctx, runtime.LabelRun+"="+id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			t.Errorf("container of run %s left behind: %s (%s)", id, c.Name, c.State)
		}
		ns, err := eng.LabelledNetworks(ctx, runtime.LabelRun+"="+id)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			leftNetwork(t, eng, n, "of run "+id)
		}
	}
}

// stoppedContainerProcesses lists host processes in state T whose cgroup is
// a Docker container's, any container's: only a test that runs alone
// (requireAlone) may count them.
func stoppedContainerProcesses(t *testing.T) []int {
	t.Helper()
	return stoppedProcessesIn(t, "docker")
}

// stoppedRunProcesses lists host processes in state T inside the containers
// of the runs stored under a results directory, and no other test's.
func stoppedRunProcesses(t *testing.T, results string) []int {
	t.Helper()
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var ids []string
	for _, id := range runIDs(t, results) {
		cs, err := eng.LabelledContainers(ctx, runtime.LabelRun+"="+id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		t.Fatalf("no container of the runs under %s", results)
	}
	return stoppedProcessesIn(t, ids...)
}

// stoppedProcessesIn lists host processes in state T whose cgroup path
// contains one of marks (a full container id is in its container's
// cgroup path, whichever the Engine's cgroup driver).
func stoppedProcessesIn(t *testing.T, marks ...string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := docker.ProcState(pid)
		if err != nil || st != "T" {
			continue
		}
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if slices.ContainsFunc(marks, func(m string) bool { return bytes.Contains(cg, []byte(m)) }) {
			out = append(out, pid)
		}
	}
	return out
}

// resultsJSON is the part of results.json the tests read.
type resultsJSON struct {
	Valid       any `json:"valid"`
	LostUpdates struct {
		Acknowledged int `json:"acknowledged"`
		Lost         int `json:"lost"`
	} `json:"lost_updates"`
	FenceRejections   int             `json:"fence_rejections"`
	Overlaps          int             `json:"overlaps"`
	Interrupted       bool            `json:"interrupted"`
	FirstLostUpdateNS *int64          `json:"first_lost_update_ns"`
	Faults            []history.Fault `json:"faults"`
	KeptData          *kept.Data      `json:"kept_data"`
	Leaders           leaders.Leaders `json:"leaders"`
	Belief            *belief.Belief  `json:"belief"`
}

// runHangs is how long a run whose time limit is under a minute may take
// before a test calls it hung: its set-up, the operations in flight at the
// limit (--op-timeout), the check and the teardown (2 minutes at most), on
// a machine shared with parallel tests. It is no speed check: a loaded
// runner took 85 s for a 20 s run; bench measures the wall time.
const runHangs = 5 * time.Minute

func readResults(t *testing.T, dir string) resultsJSON {
	t.Helper()
	var r resultsJSON
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	// Every run also leaves junit.xml, red exactly when the run is not valid,
	// and history.txt.
	checkJUnit(t, dir, r.Valid != true)
	checkHistoryText(t, dir)
	return r
}

// checkHistoryText checks a run's history.txt against its history.jsonl:
// one line for each event that is not a phase, in order, with its index,
// and each line naming its client as the report does, by its worker
// (history.Process.Client of test.json's concurrency), never by its process
// number.
func checkHistoryText(t *testing.T, dir string) {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var test struct {
		Concurrency int `json:"concurrency"`
	}
	readJSONFile(t, filepath.Join(dir, "test.json"), &test)
	b, err := os.ReadFile(filepath.Join(dir, "history.txt"))
	if err != nil {
		t.Fatalf("the run has no history.txt: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	i := 0
	for _, e := range events {
		if e.Type == history.Phase {
			continue
		}
		if i >= len(lines) {
			t.Fatalf("history.txt has %d lines, history.jsonl more events", len(lines))
		}
		cols := strings.Split(lines[i], "\t")
		if len(cols) != 7 || cols[0] != strconv.Itoa(e.Index) || strings.TrimSpace(cols[4]) != string(e.Type) || cols[5] != e.F {
			t.Fatalf("history.txt line %d %q: want event %d, %s %s, in 7 columns", i+1, lines[i], e.Index, e.Type, e.F)
		}
		if want := e.Process.Client(test.Concurrency); cols[3] != want {
			t.Errorf("history.txt line %d names %q, want %q: %q", i+1, cols[3], want, lines[i])
		}
		i++
	}
	if i != len(lines) {
		t.Errorf("history.txt has %d lines, history.jsonl %d events that are not phases", len(lines), i)
	}
}

func TestLockAppendFencingModes(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	cases := []struct {
		fencing string
		code    int
	}{
		{"none", exitInvalid},
		{"token", exitValid},
		{"cas", exitValid},
	}
	for _, c := range cases {
		t.Run(c.fencing, func(t *testing.T) {
			t.Parallel() // each run has its own cluster and network
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--target", "etcd", "--workload", "lock-append", "--fencing", c.fencing,
				"--nemesis", "pause-holder", "--nemesis-interval", "2s", "--time-limit", "20s", "--results", res, "--seed", "7")
			if r.code != c.code {
				t.Fatalf("exit %d, want %d", r.code, c.code)
			}
			dir := filepath.Join(res, "latest")
			got := readResults(t, dir)
			for _, f := range []string{"test.json", "history.jsonl", "history.txt", "report.html", "logs/n1.log", "logs/w1.log"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("run directory lacks %s", f)
				}
			}
			if len(got.Faults) == 0 {
				t.Errorf("no fault recorded")
			}
			if c.fencing == "none" {
				if got.LostUpdates.Lost < 1 || got.Valid != false {
					t.Errorf("unfenced: lost %d, valid %v; want lost >= 1, invalid", got.LostUpdates.Lost, got.Valid)
				}
				if got.FirstLostUpdateNS == nil {
					t.Errorf("unfenced: no first_lost_update_ns")
				}
				// The summary names the clients by their workers, as the
				// report does, the eraser first.
				if !regexp.MustCompile(`w[1-5]'s (stale )?write \(token [0-9]+\) erased w[1-5]'s acknowledged element [0-9]+`).MatchString(r.stdout) {
					t.Errorf("the summary names no eraser by its worker:\n%s", r.stdout)
				}
				if _, err := os.Stat(filepath.Join(dir, "linearizability.html")); err != nil {
					t.Errorf("invalid run has no linearizability.html")
				}
				// Re-checking the stored run gives the same verdict.
				rc := runCLI(t, nil, "check", dir)
				if rc.code != exitInvalid {
					t.Errorf("check of the stored run: exit %d, want 1", rc.code)
				}
				if again := readResults(t, dir); again.LostUpdates.Lost != got.LostUpdates.Lost {
					t.Errorf("check: lost %d, run said %d", again.LostUpdates.Lost, got.LostUpdates.Lost)
				}
			} else if got.LostUpdates.Lost != 0 || got.FenceRejections < 1 || got.Valid != true {
				t.Errorf("%s: lost %d, rejections %d, valid %v; want 0, >= 1, valid",
					c.fencing, got.LostUpdates.Lost, got.FenceRejections, got.Valid)
			}
			// bench measures the wall time; here only a hung run fails.
			if r.elapsed > runHangs {
				t.Errorf("a 20s run took %s: hung", r.elapsed)
			}
			assertRunsGone(t, res)
		})
	}
}

func TestDemo(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "demo", "--results", res)
	if r.code != 0 {
		t.Fatalf("demo exit %d, want 0", r.code)
	}
	for _, want := range []string{"SIGSTOP", "refused", "ACCEPTED", "is LOST", "REJECTED by the fence", "B's update survived",
		"etcd    grants the lock to B while A is still frozen", "the checkers say invalid: as expected", "the checkers say valid: as expected"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	assertRunsGone(t, res)
}

// faultWait bounds the wait for a run's faults: a hang limit, never a
// speed bound (a loaded machine takes minutes to start a cluster and find a
// first holder); the run's own time limit ends it sooner.
const faultWait = 5 * time.Minute

// waitForActiveFault polls a run's history until a fault has started and
// not yet stopped (at most faultWait).
func waitForActiveFault(t *testing.T, results string) {
	t.Helper()
	if !waitForFaults(results, func(fs []history.Fault) bool { return len(fs) > 0 && fs[len(fs)-1].Stop < 0 }) {
		t.Fatalf("no fault became active within %s", faultWait)
	}
}

// waitForFaults polls the runs' histories under results until the fault
// windows of one satisfy ok, and reports whether one did within faultWait.
func waitForFaults(results string, ok func([]history.Fault) bool) bool {
	deadline := time.Now().Add(faultWait)
	for time.Now().Before(deadline) {
		paths, _ := filepath.Glob(filepath.Join(results, "*", "*", "history.jsonl"))
		for _, p := range paths {
			events, err := history.ReadFile(p)
			if err != nil {
				continue
			}
			if faults, err := history.Faults(events); err == nil && ok(faults) {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func startRun(t *testing.T, results string) (*exec.Cmd, *bytes.Buffer) {
	return startRunNemesis(t, results, "pause-holder")
}

// interruptRun sends Ctrl-C to a run started in the background and waits
// for it to end; a run still going after runHangs is killed and fails the
// test (a hang, not a slow machine). It returns cmd.Wait's error. That the
// interrupt ended the run is for the caller to check in what the run
// recorded (results.json's interrupted, the fault's stop), not on the
// test's clock: the history's own clock cannot tell it either, since the
// workers' connection, before the time limit starts, takes tens of
// seconds on a loaded machine.
func interruptRun(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer) error {
	t.Helper()
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(runHangs):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running %s after Ctrl-C: hung; killed\n%s", runHangs, lastLines(out.String(), 20))
		return nil
	}
}

// bgRun is a fencecheck run started in the background.
type bgRun struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

// startRunNemesis starts an unfenced 60 s run with the given faults, one a
// second, in the background.
func startRunNemesis(t *testing.T, results, nemesis string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(fencecheckBinary(t), "run", "--fencing", "none", "--nemesis", nemesis,
		"--nemesis-interval", "1s", "--time-limit", "60s", "--results", results)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// images build KIND... builds (or finds) only the named images, and the
// base only for one that stands on it: make demo builds the etcd and worker
// images, both FROM scratch, and nothing else (no debootstrap).
func TestImagesBuildNamed(t *testing.T) {
	requireDocker(t)
	r := runCLI(t, nil, "images", "build", "etcd", "worker")
	if r.code != exitValid {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	refs := strings.Fields(r.stdout)
	if len(refs) != 2 || !strings.HasPrefix(refs[0], "fencecheck/etcd:") || !strings.HasPrefix(refs[1], "fencecheck/worker:") {
		t.Errorf("built %q, want the etcd and worker images only", refs)
	}
	if strings.Contains(r.stderr, "debootstrap") {
		t.Errorf("building etcd and the worker ran debootstrap: %s", r.stderr)
	}
}

func TestInterruptDuringPause(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	cmd, out := startRun(t, res)
	waitForActiveFault(t, res) // the cluster's start and a first holder: slow on a loaded machine
	if n := len(stoppedRunProcesses(t, res)); n < 1 {
		t.Errorf("no stopped process during pause-holder")
	}
	start := time.Now()
	err := interruptRun(t, cmd, out)
	t.Logf("exit after Ctrl-C in %s: %v\n%s", time.Since(start), err, lastLines(out.String(), 15))
	r := readResults(t, filepath.Join(res, "latest"))
	if !r.Interrupted {
		t.Errorf("results.json does not say interrupted")
	}
	for _, f := range r.Faults {
		if f.Stop < 0 {
			t.Errorf("fault %s on %v has no stop event", f.Fault, f.Nodes)
		}
	}
	assertRunsGone(t, res)
}

// requireAlone skips, saying why, a test that removes every fencecheck
// container on the Engine (clean without --run) or counts every one, unless
// FENCECHECK_CLEAN_ALL=1 says that nothing else runs: make test runs such
// tests so, in a step of their own after every other package's tests.
func requireAlone(t *testing.T) {
	t.Helper()
	requireDocker(t)
	if os.Getenv("FENCECHECK_CLEAN_ALL") != "1" {
		t.Skip("removes every fencecheck container: runs alone, in make test's last step (FENCECHECK_CLEAN_ALL=1)")
	}
}

// A harness killed during a pause leaves its worker stopped; clean without
// --run resumes and removes everything of every run. It runs alone
// (requireAlone).
func TestCleanAfterHarnessKilled(t *testing.T) {
	requireAlone(t)
	res := t.TempDir()
	cmd, _ := startRun(t, res)
	waitForActiveFault(t, res) // the cluster's start and a first holder: slow on a loaded machine
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(stoppedRunProcesses(t, res)) == 0 {
		t.Fatalf("expected the killed harness to leave a paused worker behind")
	}
	r := runCLI(t, nil, "clean")
	if r.code != 0 || !strings.Contains(r.stdout, "removed") {
		t.Fatalf("clean: exit %d: %s", r.code, r.stdout)
	}
	assertNoLeftovers(t)
}

func TestClusterNeverReady(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--ready-timeout", "1ms", "--time-limit", "5s", "--results", res)
	if r.code != exitHarness {
		t.Fatalf("exit %d, want 255", r.code)
	}
	if !strings.Contains(r.stderr, "never became ready") {
		t.Errorf("no reason given: %s", r.stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(res, "latest", "logs", "n*.log"))
	if len(logs) != 3 {
		t.Errorf("node logs saved: %v, want 3", logs)
	}
	assertRunsGone(t, res)
}

func TestDockerUnreachable(t *testing.T) {
	r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "run", "--time-limit", "5s", "--results", t.TempDir())
	if r.code != exitHarness {
		t.Fatalf("exit %d, want 255", r.code)
	}
	if !strings.Contains(r.stderr, "docker engine unreachable") {
		t.Errorf("reason not given: %s", r.stderr)
	}
}
