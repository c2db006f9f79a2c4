package harness_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources/lockstore"
	"github.com/fencecheck/fencecheck/internal/testkit/fakeengine"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// noDocker points DOCKER_HOST at a socket that counts the connections
// made to it and answers none, and returns the count: a test that reads
// zero at its end made no call to a Docker Engine.
func noDocker(t *testing.T) *atomic.Int64 {
	t.Helper()
	s := fakeengine.NewDockerSocket(t)
	t.Setenv("DOCKER_HOST", s.Host)
	return &s.Dials
}

// fakeRunConfig is a short run of the lock-append workload on the
// lock-store with the default fencing (none), on a Redis server, three
// clients, no faults, on eng (nil: none), into results. The worker binary
// is a file that is never run (the fake's workers run in the test's
// process): the worker image's tag is made of it.
func fakeRunConfig(t *testing.T, eng *fakeengine.Engine, results string) harness.Config {
	t.Helper()
	bin := filepath.Join(t.TempDir(), harness.WorkerBinaryName)
	if err := os.WriteFile(bin, []byte("never run: the fake engine's workers run in the test's process"), 0o755); err != nil {
		t.Fatal(err)
	}
	faults, err := nemesis.Parse("none")
	if err != nil {
		t.Fatal(err)
	}
	cfg := harness.Config{
		Spec: spec.Spec{Nemesis: "none", Seed: 1, TimeLimit: 3 * time.Second, Results: results,
			WorkerKnobs: spec.WorkerKnobs{Concurrency: 3}},
		Target: redis.Target{}, Workload: lockappend.Workload{}, LockStore: lockstore.Resource{},
		Faults: faults, WorkerBinary: bin,
	}
	if eng != nil { // not a non-nil interface holding a nil *Engine
		cfg.Engine = eng
	}
	return cfg
}

// A run goes through harness.Run end to end on an engine that is not
// Docker (package fakeengine: an in-memory Redis for the server, the
// workers in this process) and keeps what load does not change: every
// worker's operations are in the history, the checkers find it valid, its
// results are written, the engine started the server and the three
// workers and removed them all at the end, without being closed (it is
// the caller's); and no call reached a Docker Engine.
func TestRunOnAFakeEngine(t *testing.T) {
	dials := noDocker(t)
	eng := fakeengine.New(fakeengine.Redis)
	res := t.TempDir()
	cfg := fakeRunConfig(t, eng, res)
	// A bound on a hang, not on the run's time.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := harness.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if v := out.Results.Valid(); v != checkers.Valid {
		t.Errorf("verdict %s, want valid: %+v", v, out.Results)
	}
	for _, f := range []string{store.TestFile, store.HistoryFile, store.ResultsFile, store.ReportFile} {
		if _, err := os.Stat(out.Run.Path(f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	events, err := history.ReadFile(out.Run.Path(store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	// Worker i runs process i, and i + 3k after an operation it gave up on.
	oks := make([]int, cfg.Concurrency)
	for _, e := range events {
		if e.Type == history.Ok && e.Process >= 0 && e.Process < harness.FinalReadProcess && e.F == "append" {
			oks[int(e.Process)%cfg.Concurrency]++
		}
	}
	for w, n := range oks {
		if n == 0 {
			t.Errorf("worker w%d completed no append: %v", w+1, oks)
		}
	}

	// Teardown saved each node's log (the worker's own lines, stamped).
	for _, n := range []string{"n1", "w1", "w2", "w3"} {
		if b, err := os.ReadFile(filepath.Join(out.Run.Path(store.LogsDir), n+".log")); err != nil || len(b) == 0 {
			t.Errorf("log of %s: %d bytes, %v", n, len(b), err)
		}
	}

	id := out.Test.RunID.String()
	want := []string{id + "/n1", id + "/w1", id + "/w2", id + "/w3"}
	if got := eng.Started(); !slices.Equal(got, want) {
		t.Errorf("nodes started %q, want %q", got, want)
	}
	if got := eng.Removed(); !slices.Equal(got, want) {
		t.Errorf("nodes removed %q, want %q (every one, at teardown)", got, want)
	}
	if got := eng.Running(); len(got) != 0 {
		t.Errorf("nodes left running: %q", got)
	}
	if eng.Closed() {
		t.Error("the harness closed its caller's engine")
	}
	worker, err := images.WorkerRef(cfg.WorkerBinary)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{images.BaseRef(), worker} {
		if !slices.Contains(eng.Inspected(), ref) {
			t.Errorf("the harness did not ask the engine for image %s: asked %q", ref, eng.Inspected())
		}
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d calls reached the Docker Engine", n)
	}
}

// A run (Run, RunOn), a cluster or a clean without an engine is the
// caller's mistake: a harness failure that says so, before anything is
// made (no run directory), and never a connection to Docker in its place.
func TestNoEngineRefused(t *testing.T) {
	dials := noDocker(t)
	res := t.TempDir()
	_, err := harness.Run(context.Background(), fakeRunConfig(t, nil, res))
	if !errors.Is(err, harness.ErrHarness) || !strings.Contains(err.Error(), "no engine") {
		t.Errorf("run without an engine: %v, want a harness failure naming the missing engine", err)
	}
	if ents, err := os.ReadDir(res); err != nil || len(ents) != 0 {
		t.Errorf("results directory %v %v, want it empty", ents, err)
	}
	if _, err := harness.RunOn(context.Background(), nil, fakeRunConfig(t, nil, res)); !errors.Is(err, harness.ErrHarness) || !strings.Contains(err.Error(), "no engine") {
		t.Errorf("RunOn without an engine: %v", err)
	}
	if err := harness.Clean(context.Background(), nil, "", io.Discard, io.Discard); !errors.Is(err, harness.ErrHarness) || !strings.Contains(err.Error(), "no engine") {
		t.Errorf("clean without an engine: %v", err)
	}
	cl, err := harness.StartCluster(context.Background(), harness.ClusterConfig{Target: redis.Target{}, Nodes: 1})
	if cl != nil || !errors.Is(err, harness.ErrHarness) || !strings.Contains(err.Error(), "no engine") {
		t.Errorf("cluster without an engine: %v, %v; want none and a harness failure naming the missing engine", cl, err)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d calls reached the Docker Engine", n)
	}
}

// RunOn's engine that cannot be had is the run's set-up failure: a
// harness failure with its reason, or, once ctx ended (Ctrl-C), an
// interruption and no harness failure; nothing is made either way.
func TestRunOnEngineError(t *testing.T) {
	res := t.TempDir()
	cfg := fakeRunConfig(t, nil, res)
	unreachable := errors.New("engine unreachable")
	failing := func(context.Context) (runtime.Engine, error) { return nil, unreachable }
	_, err := harness.RunOn(context.Background(), failing, cfg)
	if !errors.Is(err, harness.ErrHarness) || !errors.Is(err, unreachable) {
		t.Errorf("an unreachable engine: %v, want a harness failure wrapping its error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = harness.RunOn(ctx, failing, cfg)
	if !errors.Is(err, harness.ErrInterrupted) || errors.Is(err, harness.ErrHarness) {
		t.Errorf("after Ctrl-C: %v, want an interruption, not a harness failure", err)
	}
	if ents, err := os.ReadDir(res); err != nil || len(ents) != 0 {
		t.Errorf("results directory %v %v, want it empty", ents, err)
	}
}

// The harness links no container platform's implementation: it is handed
// its engine (Config.Engine), and the Docker SDK is package docker's
// alone.
func TestHarnessLinksNoPlatform(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/fencecheck/fencecheck/internal/base/runtime") {
		t.Fatalf("go list -deps does not list internal/base/runtime: %d packages read", len(deps))
	}
	for _, d := range deps {
		if d == "github.com/fencecheck/fencecheck/internal/base/platform/docker" || strings.HasPrefix(d, "github.com/docker/") {
			t.Errorf("the harness links %s", d)
		}
	}
}
