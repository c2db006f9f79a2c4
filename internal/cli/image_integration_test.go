package cli

// A user's own server image (--image target=REF), end to end: a FROM-scratch
// image with nothing but the static etcd binary, under every fault.

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

var scratchMu sync.Mutex

// scratchEtcd builds the scratch image with `fencecheck images scratch` and
// returns its tag.
func scratchEtcd(t *testing.T) string {
	t.Helper()
	// Two tests want it at once; the second finds the first's build.
	scratchMu.Lock()
	defer scratchMu.Unlock()
	r := runCLI(t, nil, "images", "scratch", "etcd")
	ref := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(ref, "fencecheck/etcd-scratch:") {
		t.Fatalf("images scratch etcd: exit %d, %q: %s", r.code, r.stdout, r.stderr)
	}
	return ref
}

// Each fault on servers run from the scratch image: one window heals by
// itself (the cluster is healthy after it), then Ctrl-C during the next
// heals it too, and nothing of the run is left behind, its network helpers
// included.
func TestScratchImageEveryFault(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ref := scratchEtcd(t)
	for _, nem := range []string{"pause-server", "kill", "partition", "partition-client", "clock-skew:server", "netem:delay", "netem:loss"} {
		t.Run(nem, func(t *testing.T) {
			// make test: the faults whose mechanism acts inside the
			// server's image (its restart, its network namespace's rules
			// and queue, its patched clock); a SIGSTOP and the client's
			// cut do not depend on the image.
			everyLanding(t, nem, "kill", "partition", "clock-skew:server", "netem:delay")
			t.Parallel()
			res := t.TempDir()
			cmd := exec.Command(fencecheckBinary(t), "run", "--image", "target="+ref, "--fencing", "none",
				"--nemesis", nem, "--nemesis-interval", "1s", "--time-limit", "90s", "--results", res)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitForHealedThenActive(t, res, &out)
			start := time.Now()
			err := interruptRun(t, cmd, &out)
			t.Logf("Ctrl-C during the second %s: exit after %s (%v)", nem, time.Since(start).Round(time.Millisecond), err)
			got := readResults(t, filepath.Join(res, "latest"))
			if !got.Interrupted || len(got.Faults) < 2 {
				t.Fatalf("interrupted %v, %d faults:\n%s", got.Interrupted, len(got.Faults), lastLines(out.String(), 20))
			}
			for i, f := range got.Faults {
				if f.Stop < 0 || f.Error != "" {
					t.Errorf("fault %s on %v: stop %d, error %q", f.Fault, f.Nodes, f.Stop, f.Error)
				}
				if after := f.Health; i == 0 && (after.After == 0 || after.AfterError != "") {
					t.Errorf("fault %s: cluster not healthy after it: %q", f.Fault, after)
				}
			}
			test := readTestInfo(t, filepath.Join(res, "latest"))
			if test.Images["target"] != ref || test.TargetVersion != images.EtcdVersion() {
				t.Errorf("test.json: images %v, target_version %q; want target %s running %s", test.Images, test.TargetVersion, ref, images.EtcdVersion())
			}
			assertRunsGone(t, res)
		})
	}
}

// waitForHealedThenActive waits until the run's first fault has stopped and
// a second one is in effect.
func waitForHealedThenActive(t *testing.T, results string, out *bytes.Buffer) {
	t.Helper()
	if !waitForFaults(results, func(fs []history.Fault) bool {
		return len(fs) >= 2 && fs[0].Stop >= 0 && fs[len(fs)-1].Stop < 0
	}) {
		t.Fatalf("no second fault within %s:\n%s", faultWait, lastLines(out.String(), 20))
	}
}

// A user's image that is not in the local Engine, or that has no server
// binary: exit 254 at once, naming it; nothing is left.
func TestImageNotInEngine(t *testing.T) {
	requireDocker(t)
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--image", "target=fencecheck-test/no-such-etcd:0.0", "--results", res, "--quiet")
	if r.code != exitBadArgs || !strings.Contains(r.stderr, "fencecheck-test/no-such-etcd:0.0: no such image in the local Docker Engine") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if r.cpu > refuseCPU {
		t.Errorf("used %s of CPU time to refuse, want under %s", r.cpu, refuseCPU)
	}
	// An image without the server binary (fencecheck's base has no etcd):
	// also the user's configuration, exit 254, saying so.
	r = runCLI(t, nil, "run", "--image", "target="+images.BaseRef(), "--results", res, "--quiet")
	if r.code != exitBadArgs || !strings.Contains(r.stderr, "the etcd server does not start from it") {
		t.Errorf("an image without etcd: exit %d: %s", r.code, lastLines(r.stderr, 5))
	}
	assertRunsGone(t, res)
}

// A rerun of a run made with --image uses the same image, and the
// etcd-11456 scenario runs on it too (3.6.16, fixed: exit 0).
func TestScratchImageRerun(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ref := scratchEtcd(t)
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--image", "target="+ref, "--nemesis", "pause-holder", "--time-limit", "10s", "--results", res, "--seed", "4", "--quiet")
	if r.code != exitInvalid && r.code != exitValid {
		t.Fatalf("run: exit %d: %s", r.code, lastLines(r.stderr, 10))
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(res, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	rr := runCLI(t, nil, "rerun", dir, "--runs", "1", "--results", res)
	if rr.code != exitInvalid && rr.code != exitValid {
		t.Fatalf("rerun: exit %d: %s", rr.code, lastLines(rr.stderr, 10))
	}
	orig, again := readTestInfo(t, dir), readTestInfo(t, filepath.Join(res, "latest"))
	id := orig.ImageIDs["target"]
	if orig.Images["target"] != ref || !strings.HasPrefix(id, "sha256:") {
		t.Fatalf("the run's test.json: images %v, image ids %v", orig.Images, orig.ImageIDs)
	}
	// The rerun runs the very build: the recorded id, not the tag.
	if again.Rerun == nil || again.Images["target"] != id || again.ImageIDs["target"] != id {
		t.Errorf("the rerun's test.json: rerun %v, images %v, image ids %v; want a rerun on %s", again.Rerun != nil, again.Images, again.ImageIDs, id)
	}
	sc := runCLI(t, nil, "run", "--scenario", "etcd-11456", "--image", "target="+ref, "--results", res)
	if sc.code != exitValid || !strings.Contains(sc.stderr+sc.stdout, ref+" runs etcd "+images.EtcdVersion()) {
		t.Errorf("scenario on %s: exit %d:\n%s", ref, sc.code, lastLines(sc.stderr+sc.stdout, 15))
	}
	assertRunsGone(t, res)
}

// Consul from a FROM-scratch image (the static consul binary only), under
// server faults with token fencing: valid, every fault healed, the version
// the agents report recorded.
func TestScratchImageConsul(t *testing.T) {
	suite.All(t, harnesstest.ConsulImage)
	requireDocker(t)
	t.Parallel()
	r := runCLI(t, nil, "images", "scratch", "consul")
	ref := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(ref, "fencecheck/consul-scratch:") {
		t.Fatalf("images scratch consul: exit %d, %q: %s", r.code, r.stdout, r.stderr)
	}
	res := t.TempDir()
	run := runCLI(t, nil, "run", "--target", "consul", "--image", "target="+ref, "--fencing", "token",
		"--nemesis", "pause-server,kill,partition", "--time-limit", "30s", "--results", res, "--seed", "2", "--quiet")
	if run.code != exitValid {
		t.Fatalf("exit %d, want 0: %s", run.code, lastLines(run.stderr, 15))
	}
	got := readResults(t, filepath.Join(res, "latest"))
	if len(got.Faults) == 0 {
		t.Errorf("no fault in 30s")
	}
	for _, f := range got.Faults {
		if f.Stop < 0 || f.Error != "" {
			t.Errorf("fault %s on %v: stop %d, error %q", f.Fault, f.Nodes, f.Stop, f.Error)
		}
	}
	test := readTestInfo(t, filepath.Join(res, "latest"))
	if test.Images["target"] != ref || test.TargetVersion != images.ConsulVersion() {
		t.Errorf("test.json: images %v, target_version %q; want target %s running %s", test.Images, test.TargetVersion, ref, images.ConsulVersion())
	}
	assertRunsGone(t, res)
}
