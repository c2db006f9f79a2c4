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

	"github.com/fencecheck/fencecheck/internal/harness/docker"
	"github.com/fencecheck/fencecheck/internal/images"
)

// Consul runs: TTL 10s (Consul's minimum) and lock-delay 0 make MaxLease
// 2 TTL + 0 + 1s = 21s, so each holder pause lasts 31.5s to 63s. With 2s
// between faults, a 100s time limit lands at least two pauses that outlast
// the lease even if both drew the longest hold (2 + 63 + 2 + 2 + 21 < 100);
// with seed 12 they hold about 37s and 36s and a third starts near 80s. A
// run takes about 110s of wall time; the three run at once.
const (
	consulTimeLimit = 100 * time.Second
	consulMaxLease  = 21 * time.Second
)

func TestConsulLockAppendFencingModes(t *testing.T) {
	requireDocker(t)
	bin := fencecheckBinary(t)
	// Build the images first (the consul server compiles in about 3 minutes
	// from cold caches), so that the runs' wall times are the runs'.
	ctx := context.Background()
	cli, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := &images.Builder{Docker: cli, Log: t.Logf}
	if _, err := b.EnsureConsul(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.EnsureWorker(ctx, bin); err != nil {
		t.Fatal(err)
	}
	cli.Close()

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
			r := runCLI(t, nil, "run", "--target", "consul", "--workload", "lock-append", "--fencing", c.fencing,
				"--nemesis", "pause-holder", "--lock-delay", "0", // --ttl: Consul's default, 10s
				"--nemesis-interval", "2s", "--time-limit", consulTimeLimit.String(),
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
			if info := readTestInfo(t, dir); info.Target != "consul" || !strings.HasPrefix(info.TargetVersion, "1.14.") || info.TTL != "10s" {
				t.Errorf("test.json: target %q version %q ttl %q, want consul 1.14.x, the default 10s", info.Target, info.TargetVersion, info.TTL)
			}
			// At least two pauses landed: each held longer than the lease.
			landed := 0
			for _, f := range got.Faults {
				if f.Fault == "pause-holder" && f.Stop >= 0 && time.Duration(f.Stop-f.Start) > consulMaxLease {
					landed++
				}
			}
			if landed < 2 {
				t.Errorf("%d pauses outlasted the %s lease, want at least 2 (faults: %+v)", landed, consulMaxLease, got.Faults)
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
			if r.elapsed > consulTimeLimit+60*time.Second {
				t.Errorf("a %s run took %s", consulTimeLimit, r.elapsed)
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
		{[]string{"run", "--target", "consul", "--ttl", "10s", "--lock-delay", "-1s"}, "negative"},
		{[]string{"run", "--target", "consul", "--ttl", "10s", "--lock-delay", "2m"}, "60s"},
	} {
		r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, c.args...)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 254 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

type testInfoJSON struct {
	RunID         string `json:"run_id"`
	Target        string `json:"target"`
	TargetVersion string `json:"target_version"`
	TTL           string `json:"ttl"`
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
