package cli

// Integration tests of the kubernetes target: the fencecheck binary against
// a real control plane (three etcd nodes, two kube-apiservers) in Docker,
// with client-go's leader election in the workers.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

// kubernetesImage is what the Kubernetes tests need that make test does
// not build.
const kubernetesImage = "the Kubernetes image (kube-apiserver compiles for 20 minutes of CPU)"

// electionJSON is what these tests read of an election run's results.json.
type electionJSON struct {
	Valid       any `json:"valid"`
	Leaderships int `json:"leaderships"`
	LostUpdates struct {
		Acknowledged int `json:"acknowledged"`
		Lost         int `json:"lost"`
	} `json:"lost_updates"`
	FenceRejections int             `json:"fence_rejections"`
	Forks           int             `json:"forks"`
	SplitBrain      int             `json:"split_brain"`
	Faults          []history.Fault `json:"faults"`
}

// electionRun runs an election on kubernetes and reads its results.json.
// The run's directory is the third result.
func electionRun(t *testing.T, args ...string) (cliResult, electionJSON, string) {
	t.Helper()
	suite.All(t, kubernetesImage)
	res := t.TempDir()
	args = append([]string{"run", "--target", "kubernetes", "--workload", "election", "--results", res, "--quiet"}, args...)
	r := runCLI(t, nil, args...)
	t.Cleanup(func() { assertRunsGone(t, res) })
	if r.code != exitValid && r.code != exitInvalid {
		t.Fatalf("exit %d: %s", r.code, lastLines(r.stderr, 30))
	}
	dir := filepath.Join(res, "latest")
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got electionJSON
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	checkJUnit(t, dir, got.Valid != true)
	t.Logf("exit %d: %d leaderships, lost %d of %d, forks %d, refused %d, split brain %d, %d faults, %s",
		r.code, got.Leaderships, got.LostUpdates.Lost, got.LostUpdates.Acknowledged, got.Forks, got.FenceRejections, got.SplitBrain, len(got.Faults), r.elapsed.Round(time.Second))
	if len(got.Faults) == 0 {
		t.Errorf("no fault recorded")
	}
	return r, got, dir
}

// A leader paused inside its term past its lease: with no fencing, two
// leaders act and an acknowledged entry is lost or the log forks (invalid);
// with term fencing (the Lease's leaseTransitions), the deposed leader's
// entry is refused and the run is valid. One seed each; bench has five.
func TestKubernetesElectionPauseHolder(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, fencing := range []string{"none", "term"} {
		t.Run(fencing, func(t *testing.T) {
			r, got, dir := electionRun(t, "--fencing", fencing, "--nemesis", "pause-holder", "--time-limit", "20s",
				"--nemesis-interval", "2s", "--seed", "7")
			if fencing == "none" {
				if r.code != exitInvalid || got.Valid != false || got.LostUpdates.Lost+got.Forks < 1 {
					t.Errorf("exit %d, valid %v, lost %d, forks %d: want 1, invalid, a lost entry or a fork", r.code, got.Valid, got.LostUpdates.Lost, got.Forks)
				}
			} else if r.code != exitValid || got.Valid != true || got.LostUpdates.Lost != 0 || got.FenceRejections < 1 {
				t.Errorf("exit %d, valid %v, lost %d, refused %d: want 0, valid, 0, >= 1", r.code, got.Valid, got.LostUpdates.Lost, got.FenceRejections)
			}
			tj, err := os.ReadFile(filepath.Join(dir, "test.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(tj), `"tier": "etcd"`) {
				t.Errorf("test.json names no etcd tier")
			}
			if strings.Contains(string(tj), "BEGIN CERTIFICATE") || strings.Contains(string(tj), "credentials") {
				t.Errorf("test.json holds the run's credentials")
			}
		})
	}
}

// What a kubernetes run cannot do is refused before anything starts: a TTL
// that a Lease cannot hold, a leader fault of the apiservers' tier (the
// leader is etcd's), a tier it does not have. (A client program is no
// longer refused: the protocol's init carries the run's credentials;
// TestClientCheck/client-go-cle runs one.)
func TestKubernetesRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"--ttl", "1500ms"}, "leaseDurationSeconds"},
		{[]string{"--nemesis", "kill:leader@apiserver"}, "is a server of tier etcd"},
		{[]string{"--nemesis", "pause-server:one@zookeeper"}, `no tier "zookeeper"`},
	} {
		res := t.TempDir()
		args := append([]string{"run", "--target", "kubernetes", "--results", res}, c.args...)
		r := runCLI(t, nil, args...)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, c.why) || r.cpu > refuseCPU {
			t.Errorf("%v: exit %d after %s of CPU: %s; want 254 at once (under %s of CPU) naming %q", c.args, r.code, r.cpu, lastLines(r.stderr, 5), refuseCPU, c.why)
		}
		noRunWritten(t, res)
	}
}

// kubernetes#125761 reported a split brain of two seconds or more after a
// leader's wall clock jumped an hour forward. On client-go v0.37.2 a jump
// of the holder's whole process clock (clock-skew:wall: its vDSO, as a
// step of its machine's clock) by an hour either way leaves the election
// valid, unfenced: client-go times the lease on Go's monotonic clock, which
// the jump does not move. A fault records the offset the holder's own log
// showed, which proves the jump took.
func TestKubernetesWallClockJump(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	r, got, _ := electionRun(t, "--fencing", "none", "--nemesis", "clock-skew:wall:+1h", "--time-limit", "20s",
		"--nemesis-interval", "2s", "--seed", "7")
	// Valid: no entry lost, no log forked. A split brain (a leadership
	// that went on after another was elected) is logged, not failed: one
	// was seen once in CI with seed 7 on a loaded machine, valid, and is
	// not yet told apart from a late renewal under load (an open question
	// in the stop's note).
	if r.code != exitValid || got.Valid != true {
		t.Errorf("exit %d, valid %v: want 0, valid (kubernetes#125761 does not reproduce)", r.code, got.Valid)
	}
	if got.SplitBrain != 0 {
		t.Logf("split brain %d: a leadership went on after another was elected", got.SplitBrain)
	}
	// A leader that logged nothing during its jump (its log has a line per
	// term) shows nothing: some fault must show the hour, and none another
	// offset.
	observed := 0
	for _, f := range got.Faults {
		var rec nemesis.ClockSkewRecord
		if err := f.DecodeFigures(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.ObservedOffset == nil {
			continue
		}
		observed++
		if off := rec.ObservedOffset.D(); (off - time.Hour).Abs() > 2*time.Second {
			t.Errorf("%s on %+v: observed offset %s, want 1h", f.Fault, f.Holder, off)
		}
	}
	if observed == 0 {
		t.Errorf("no fault's jump showed in the leader's log")
	}
}

// A holder whose clock runs at a tenth of true speed renews its Lease ten
// times too late and believes its lease lasts ten times too long: another
// candidate takes the Lease while it still acts, and with no fencing an
// acknowledged entry is lost or the log forks. Each fault records the rate
// the holder's own log showed. (bench -clock-rate draws the rate at which
// this starts.)
func TestKubernetesSlowHolderClock(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	r, got, _ := electionRun(t, "--fencing", "none", "--nemesis", "clock-rate:client:x0.1", "--time-limit", "20s",
		"--nemesis-interval", "2s", "--seed", "7")
	if r.code != exitInvalid || got.SplitBrain < 1 || got.LostUpdates.Lost+got.Forks < 1 {
		t.Errorf("exit %d, split brain %d, lost %d, forks %d: want 1, two leaders acting, a lost entry or a fork", r.code, got.SplitBrain, got.LostUpdates.Lost, got.Forks)
	}
	for _, f := range got.Faults {
		var rec nemesis.ClockRateRecord
		if err := f.DecodeFigures(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.Rate != 0.1 {
			t.Errorf("%s: rate %v", f.Fault, rec.Rate)
		}
		if obs := rec.ObservedRate; obs != nil && (*obs < 0.08 || *obs > 0.12) {
			t.Errorf("%s: observed rate %v, want 0.1", f.Fault, *obs)
		}
	}
}
