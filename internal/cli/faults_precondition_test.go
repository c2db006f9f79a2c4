package cli

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencecheck/fencecheck/internal/testkit/fakeengine"
)

// fakeEngine is a Docker Engine socket that counts the connections made to
// it and answers none (fakeengine.DockerSocket): a run pointed at it
// (DOCKER_HOST) that connects has gone past its validation.
type fakeEngine struct {
	host  string // DOCKER_HOST=unix://...
	dials *atomic.Int64
}

func newFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	s := fakeengine.NewDockerSocket(t)
	return &fakeEngine{host: "DOCKER_HOST=" + s.Host, dials: &s.Dials}
}

// A fault that cannot apply to the run is refused before anything starts
// (issue 21, item 5): `run --nemesis partition:resource` with the default
// resource, the lock-store, which has no container of its own, exits 254
// at once (refuseCPU), names the fault and why, creates no run
// directory and never calls the Docker Engine, so no container of
// fencecheck's (labelled or not) can have been made. The control, the same fault on PostgreSQL,
// does call the Engine (and fails on the fake one, exit 255): the
// observation can see a run that starts.
func TestFaultPreconditionRefusedBeforeAnyContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fencecheck binary: skipped under -short")
	}
	engine := newFakeEngine(t)
	res := t.TempDir()
	r := runCLI(t, []string{engine.host}, "run", "--nemesis", "partition:resource", "--results", res, "--quiet")
	if r.code != exitBadArgs {
		t.Errorf("exit %d, want %d", r.code, exitBadArgs)
	}
	for _, want := range []string{"--nemesis partition:resource: cannot apply to this run",
		"the run's resources (lock-store) have none", "--resource postgres or proxy"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.cpu > refuseCPU {
		t.Errorf("used %s of CPU time to refuse, want under %s", r.cpu, refuseCPU)
	}
	if n := engine.dials.Load(); n != 0 {
		t.Errorf("the refused run called the Docker Engine %d times", n)
	}
	if ents, err := os.ReadDir(res); err != nil || len(ents) != 0 {
		t.Errorf("results directory: %v %v, want it empty", ents, err)
	}

	control := runCLI(t, []string{engine.host}, "run", "--nemesis", "partition:resource", "--resource", "postgres",
		"--results", t.TempDir(), "--quiet", "--time-limit", "5s")
	if control.code != exitHarness || engine.dials.Load() == 0 {
		t.Errorf("control on postgres: exit %d, %d calls to the Engine; want exit %d after calling it", control.code, engine.dials.Load(), exitHarness)
	}
}
