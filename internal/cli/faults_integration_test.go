package cli

// The fault library end to end, through the CLI, on real etcd clusters.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

// A lock holder cut off from every server for longer than its lease: its
// request lands when the network heals. Unfenced that is a lost update;
// fenced, the write is rejected.
func TestPartitionClient(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	for _, c := range []struct {
		fencing string
		code    int
	}{{"none", exitInvalid}, {"token", exitValid}, {"cas", exitValid}} {
		t.Run(c.fencing, func(t *testing.T) {
			t.Parallel()
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--fencing", c.fencing, "--nemesis", "partition-client",
				"--nemesis-interval", "2s", "--time-limit", "20s", "--results", res, "--seed", "3")
			if r.code != c.code {
				t.Fatalf("exit %d, want %d", r.code, c.code)
			}
			got := readResults(t, filepath.Join(res, "latest"))
			if c.fencing == "none" && got.LostUpdates.Lost < 1 {
				t.Errorf("unfenced: no lost update")
			}
			if c.fencing != "none" && (got.LostUpdates.Lost != 0 || got.FenceRejections < 1) {
				t.Errorf("%s: lost %d, rejections %d", c.fencing, got.LostUpdates.Lost, got.FenceRejections)
			}
			assertRunsGone(t, res)
		})
	}
}

// Server faults with token fencing: valid, and the cluster survives them
// (the final read after healing succeeds, so lost-updates is not unknown).
func TestServerFaultsWithTokenFencing(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--fencing", "token", "--nemesis", "pause-server,kill,partition",
		"--nemesis-interval", "1s", "--time-limit", "25s", "--results", res, "--seed", "5")
	if r.code != exitValid {
		t.Fatalf("exit %d, want 0", r.code)
	}
	got := readResults(t, filepath.Join(res, "latest"))
	if len(got.Faults) < 2 {
		t.Errorf("only %d faults in 25s", len(got.Faults))
	}
	for _, f := range got.Faults {
		if f.Stop < 0 || len(f.Nodes) == 0 || f.Error != "" {
			t.Errorf("fault %s: nodes %v, start %d, stop %d, error %q", f.Fault, f.Nodes, f.Start, f.Stop, f.Error)
		}
		if after := f.Health; after.After == 0 || after.AfterError != "" {
			t.Errorf("fault %s: cluster not healthy after it: %q", f.Fault, after)
		}
	}
	assertRunsGone(t, res)
}

// faultsToStop lists one --nemesis value per fault, for the Ctrl-C and
// crash tests.
var faultsToStop = []string{
	"pause-holder", "kill-holder", "pause-client", "pause-server:majority", "kill:one", "partition:halves",
	"partition-client", "clock-skew:server", "clock-skew:client", "netem:delay", "netem:loss",
}

// everyLanding runs the subtest of fault nem under make test only if it is
// one of landing's (one fault per mechanism: a SIGSTOP, a kill and its
// restart, iptables rules, a tc queue, a patched clock); the rest run in
// make test-all, each a run of a cluster of its own.
func everyLanding(t *testing.T, nem string, landing ...string) {
	t.Helper()
	if !slices.Contains(landing, nem) {
		suite.All(t, "the same test of another fault of the same mechanism (one fault per mechanism runs in make test)")
	}
}

// faultsEveryLanding: one of faultsToStop per mechanism.
var faultsEveryLanding = []string{"pause-holder", "kill:one", "partition-client", "netem:delay", "clock-skew:server"}

func startRunWith(t *testing.T, results, nemesis string) *bgRun {
	t.Helper()
	cmd, out := startRunNemesis(t, results, nemesis)
	return &bgRun{cmd: cmd, out: out}
}

// Ctrl-C in the middle of each fault heals it, tears everything down and
// records the fault's stop.
func TestInterruptDuringEachFault(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	for _, nem := range faultsToStop {
		t.Run(nem, func(t *testing.T) {
			everyLanding(t, nem, faultsEveryLanding...)
			t.Parallel()
			res := t.TempDir()
			run := startRunWith(t, res, nem)
			// Set-up and the first fault (at most faultWait, a hang
			// limit: a loaded machine takes minutes).
			if !waitForFaults(res, func(fs []history.Fault) bool { return len(fs) > 0 && fs[len(fs)-1].Stop < 0 }) {
				run.cmd.Process.Signal(os.Interrupt)
				run.cmd.Wait()
				t.Fatalf("no fault became active within %s:\n%s", faultWait, lastLines(run.out.String(), 25))
			}
			start := time.Now()
			err := interruptRun(t, run.cmd, run.out)
			t.Logf("Ctrl-C during %s: exit after %s (%v)", nem, time.Since(start).Round(time.Millisecond), err)
			got := readResults(t, filepath.Join(res, "latest"))
			if !got.Interrupted {
				t.Errorf("not marked interrupted")
			}
			if len(got.Faults) == 0 {
				t.Fatalf("no fault recorded:\n%s", lastLines(run.out.String(), 20))
			}
			for _, f := range got.Faults {
				if f.Stop < 0 {
					t.Errorf("fault %s on %v never stopped", f.Fault, f.Nodes)
				}
				if f.Error != "" {
					t.Errorf("fault %s not recovered: %s", f.Fault, f.Error)
				}
			}
			assertRunsGone(t, res)
		})
	}
}

// A harness killed with SIGKILL during each fault leaves the fault in
// place; `fencecheck clean` resumes and removes everything.
func TestCleanAfterCrashDuringEachFault(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	for _, nem := range faultsToStop {
		t.Run(nem, func(t *testing.T) {
			everyLanding(t, nem, faultsEveryLanding...)
			t.Parallel()
			res := t.TempDir()
			run := startRunWith(t, res, nem)
			waitForActiveFault(t, res)
			run.cmd.Process.Signal(syscall.SIGKILL)
			run.cmd.Wait()
			// Only this run's: other tests may run their own clusters now.
			ids := runIDs(t, res)
			r := runCLI(t, nil, "clean", "--run", ids[0])
			if r.code != 0 || !strings.Contains(r.stdout, "removed") {
				t.Fatalf("clean: exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			assertRunsGone(t, res)
		})
	}
}

// The register workload on etcd with linearizable reads stays valid under
// client pauses and partitions.
func TestRegisterOnEtcdUnderFaults(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--workload", "register", "--read-mode", "linearizable",
		"--nemesis", "pause-holder,partition", "--nemesis-interval", "1s", "--time-limit", "20s", "--results", res, "--seed", "9")
	if r.code != exitValid {
		t.Fatalf("exit %d, want 0", r.code)
	}
	var got struct {
		Workload string `json:"workload"`
		Checkers struct {
			Linearizable struct {
				Keys, Checked int
			}
		}
		Faults []struct{ Fault string }
	}
	b, err := os.ReadFile(filepath.Join(res, "latest", "results.json"))
	if err != nil || json.Unmarshal(b, &got) != nil {
		t.Fatalf("results.json: %v", err)
	}
	if got.Workload != "register" || got.Checkers.Linearizable.Keys != 8 || got.Checkers.Linearizable.Checked < 100 {
		t.Errorf("results: %+v", got)
	}
	kinds := map[string]bool{}
	for _, f := range got.Faults {
		kinds[strings.SplitN(f.Fault, ":", 2)[0]] = true
	}
	if !kinds["pause-holder"] && !kinds["partition"] {
		t.Errorf("no fault hit the run: %v", got.Faults)
	}
	assertRunsGone(t, res)
}
