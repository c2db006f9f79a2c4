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
)

// electionJSON is what these tests read of an election run's results.json.
type electionJSON struct {
	Valid       any `json:"valid"`
	Leaderships int `json:"leaderships"`
	LostUpdates struct {
		Acknowledged int `json:"acknowledged"`
		Lost         int `json:"lost"`
	} `json:"lost_updates"`
	FenceRejections int `json:"fence_rejections"`
	Forks           int `json:"forks"`
	SplitBrain      int `json:"split_brain"`
	Faults          []struct {
		Fault string `json:"fault"`
	} `json:"faults"`
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
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--target", "kubernetes", "--workload", "election", "--fencing", fencing,
				"--nemesis", "pause-holder", "--time-limit", "20s", "--nemesis-interval", "2s",
				"--results", res, "--seed", "7", "--quiet")
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
// leader is etcd's), a client program (the protocol carries no
// credentials).
func TestKubernetesRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"--ttl", "1500ms"}, "leaseDurationSeconds"},
		{[]string{"--nemesis", "kill:leader@apiserver"}, "is a server of tier etcd"},
		{[]string{"--nemesis", "pause-server:one@zookeeper"}, `no tier "zookeeper"`},
		{[]string{"--client-dir", "../../examples/clients/sh-redis"}, "credentials"},
	} {
		args := append([]string{"run", "--target", "kubernetes", "--results", t.TempDir()}, c.args...)
		r := runCLI(t, nil, args...)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, c.why) || r.elapsed > 2*time.Second {
			t.Errorf("%v: exit %d after %s: %s; want 254 within a second naming %q", c.args, r.code, r.elapsed, lastLines(r.stderr, 5), c.why)
		}
	}
}
