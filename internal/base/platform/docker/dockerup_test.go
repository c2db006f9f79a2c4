package docker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
)

// dockerUpInNamespace runs scripts/docker-up.sh, and then script, in
// private mount, pid and network namespaces with empty /run, /var/lib/docker
// and /var/log: a machine whose engine is installed but not running, without
// touching the machine's own engine. Everything started there ends with the
// namespace.
func dockerUpInNamespace(t *testing.T, script string) (string, error) {
	t.Helper()
	harnesstest.RequireDocker(t)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root; these tests need it")
		}
		t.Skip("needs root (namespaces, dockerd)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal(err)
	}
	// The test runs in its package's directory (not runtime.Caller, whose
	// file names -trimpath makes relative to the module).
	up, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "scripts", "docker-up.sh"))
	if err != nil {
		t.Fatal(err)
	}
	setup := "set -u; mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /var/lib/docker && " +
		"mkdir -p /var/lib/containerd && mount -t tmpfs tmpfs /var/lib/containerd && mount -t tmpfs tmpfs /var/log || exit 99\n" +
		"unset CI DOCKER_HOST\n"
	cmd := exec.Command("timeout", "240", "unshare", "--mount", "--pid", "--net", "--fork", "--mount-proc",
		"bash", "-c", setup+"UP="+up+"\n"+script)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	return string(out), err
}

// An engine that is installed but not running is started, and answers.
func TestDockerUpStartsAStoppedEngine(t *testing.T) {
	start := time.Now()
	out, err := dockerUpInNamespace(t, `docker info >/dev/null 2>&1 && { echo "engine answers before the start"; exit 98; }
$UP || exit 1
docker info --format 'answers: {{.ServerVersion}}'`)
	if err != nil || !strings.Contains(out, "starting it") || !strings.Contains(out, "answers: ") {
		t.Fatalf("docker-up: %v", err)
	}
	t.Logf("started and answered in %s", time.Since(start).Round(time.Millisecond))
}

// A dockerd that runs but does not answer (here: stopped with SIGSTOP) is
// not restarted outside CI without DOCKER_UP_RESTART=1: the script fails and
// says how, and the engine is left alone.
func TestDockerUpLeavesAHungEngineAloneOutsideCI(t *testing.T) {
	out, err := dockerUpInNamespace(t, `$UP || exit 1
pid=$(pgrep -x dockerd); kill -STOP $pid
DOCKER_UP_WAIT=2 DOCKER_UP_PROBE=2 $UP; echo "rc=$?"
[ "$(pgrep -x dockerd)" = "$pid" ] && echo "same dockerd"`)
	if err != nil || !strings.Contains(out, "rc=1") || !strings.Contains(out, "DOCKER_UP_RESTART=1") || !strings.Contains(out, "same dockerd") {
		t.Fatalf("docker-up on a hung engine outside CI: %v", err)
	}
}

// Under CI a dockerd that does not answer is stopped (SIGTERM, then SIGKILL:
// a stopped process never handles the TERM) and a new one answers.
func TestDockerUpRestartsAHungEngineInCI(t *testing.T) {
	out, err := dockerUpInNamespace(t, `$UP || exit 1
pid=$(pgrep -x dockerd); kill -STOP $pid
CI=true DOCKER_UP_WAIT=2 DOCKER_UP_PROBE=2 $UP || exit 1
now=$(pgrep -x dockerd)
[ -n "$now" ] && [ "$now" != "$pid" ] && echo "new dockerd"
docker info --format 'answers: {{.ServerVersion}}'`)
	if err != nil || !strings.Contains(out, "restarting it") || !strings.Contains(out, "new dockerd") || !strings.Contains(out, "answers: ") {
		t.Fatalf("docker-up on a hung engine in CI: %v", err)
	}
}
