package cli

// Integration tests of the consul target: the fencecheck binary, run as a
// user runs it, against real 3-server Consul clusters in Docker (see
// integration_test.go for the binary and the Docker requirement).

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

// Consul runs take the consul profile (no flag but --target, --fencing and
// the seed): TTL 10s (Consul's minimum) and lock-delay 0 make MaxLease
// 2 TTL + 0 + 1s = 21s, so each holder pause lasts 31.5s to 63s. With 2s
// between faults the first pause starts within a few seconds; by 45s, the
// profile's time limit, the paused holder's session has ended, another
// client has taken the lock and written, and the pause has ended or is
// healed by the time limit. A run takes about 55s of wall time; the three
// run at once.
const (
	consulTimeLimit = 45 * time.Second
	consulMaxLease  = 21 * time.Second
)

func TestConsulLockAppendFencingModes(t *testing.T) {
	suite.All(t, harnesstest.ConsulImage)
	requireDocker(t)
	t.Parallel()
	bin := fencecheckBinary(t)
	// Build the images first (the consul server compiles in about 3 minutes
	// from cold caches), so that the runs' wall times are the runs'.
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := &images.Builder{Engine: eng, Log: t.Logf}
	if _, err := b.EnsureConsul(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.EnsureWorker(ctx, bin); err != nil {
		t.Fatal(err)
	}
	eng.Close()

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
			// The three runs are mostly waiting out 30-60 s pauses: run
			// them at once.
			t.Parallel()
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--target", "consul", "--fencing", c.fencing, // the profile
				"--results", res, "--seed", "12", "--quiet")
			dir := filepath.Join(res, "latest")
			defer assertRunsGone(t, res)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d", r.code, c.code)
			}
			got := readResults(t, dir)
			for _, f := range []string{"test.json", "history.jsonl", "report.html", "logs/n1.log", "logs/n3.log", "logs/w1.log"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("run directory lacks %s", f)
				}
			}
			info := readTestInfo(t, dir)
			if info.Target != "consul" || !strings.HasPrefix(info.TargetVersion, "1.14.") || info.TTL != "10s" {
				t.Errorf("test.json: target %q version %q ttl %q, want consul 1.14.x, the profile's 10s", info.Target, info.TargetVersion, info.TTL)
			}
			if info.LockDelay != "0s" || info.TimeLimit != consulTimeLimit.String() || info.Interval != "2s" || !strings.Contains(info.Profile, "lock-delay 0") {
				t.Errorf("test.json: lock-delay %q, time limit %q, interval %q, profile %q: not consul's profile", info.LockDelay, info.TimeLimit, info.Interval, info.Profile)
			}
			// A pause landed and held longer than the lease (until the
			// time limit healed it, at the latest).
			landed := 0
			for _, f := range got.Faults {
				if f.Fault == "pause-holder" && f.Stop >= 0 && time.Duration(f.Stop-f.Start) > consulMaxLease {
					landed++
				}
			}
			if landed < 1 {
				t.Errorf("no pause outlasted the %s lease (faults: %+v)", consulMaxLease, got.Faults)
			}
			if c.fencing == "none" {
				if got.LostUpdates.Lost < 1 || got.Valid != false {
					t.Errorf("unfenced: lost %d, valid %v; want lost >= 1, invalid", got.LostUpdates.Lost, got.Valid)
				}
			} else if got.LostUpdates.Lost != 0 || got.FenceRejections < 1 || got.Valid != true {
				t.Errorf("%s: lost %d, rejections %d, valid %v; want 0, >= 1, valid",
					c.fencing, got.LostUpdates.Lost, got.FenceRejections, got.Valid)
			}
			t.Logf("%s: exit %d, lost %d of %d, fence rejections %d, %d faults, %s",
				c.fencing, r.code, got.LostUpdates.Lost, got.LostUpdates.Acknowledged, got.FenceRejections, len(got.Faults), r.elapsed.Round(time.Second))
			if r.elapsed > consulTimeLimit+runHangs {
				t.Errorf("a %s run took %s: hung", consulTimeLimit, r.elapsed)
			}
		})
	}
}

// Consul's session TTL is at least 10s: a --ttl of 2s is refused before any
// container starts.
func TestConsulBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "consul", "--ttl", "2s"}, "at least 10s"},
		{[]string{"run", "--target", "consul", "--ttl", "12500ms"}, "whole seconds"},
		{[]string{"run", "--target", "consul", "--ttl", "10s", "--lock-delay", "-1s"}, "--lock-delay -1s: at least 0s"},
		{[]string{"run", "--target", "consul", "--ttl", "10s", "--lock-delay", "2m"}, "60s"},
	} {
		r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, c.args...)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 254 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

type testInfoJSON struct {
	RunID         string            `json:"run_id"`
	Target        string            `json:"target"`
	TargetVersion string            `json:"target_version"`
	TTL           string            `json:"ttl"`
	Workload      string            `json:"workload"`
	ReadMode      string            `json:"read_mode"`
	LockDelay     string            `json:"lock_delay"`
	TimeLimit     string            `json:"time_limit"`
	Interval      string            `json:"nemesis_interval"`
	Profile       string            `json:"profile"`
	Images        map[string]string `json:"images"`
	ImageIDs      map[string]string `json:"image_ids"`
	Rerun         *struct{}         `json:"rerun"`
}

func readTestInfo(t *testing.T, dir string) testInfoJSON {
	t.Helper()
	var ti testInfoJSON
	b, err := os.ReadFile(filepath.Join(dir, "test.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ti); err != nil {
		t.Fatal(err)
	}
	return ti
}
