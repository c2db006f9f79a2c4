// Package harnesstest starts real clusters for integration tests: the one
// place that decides when such a test runs. It skips under -short or with
// FENCECHECK_SKIP_DOCKER=1 set explicitly, and otherwise fails when the
// cluster cannot start (a missing Docker Engine included): never a silent
// skip.
package harnesstest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/harness/docker"
	"github.com/fencecheck/fencecheck/internal/images"
)

// RequireDocker skips the test under -short or FENCECHECK_SKIP_DOCKER=1.
func RequireDocker(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	if os.Getenv("FENCECHECK_SKIP_DOCKER") == "1" {
		t.Skip("integration test: FENCECHECK_SKIP_DOCKER=1")
	}
}

// Cluster starts a cluster for the test and removes it when the test ends.
// The set-up may build images from cold caches: it gets 15 minutes.
func Cluster(t testing.TB, cfg harness.ClusterConfig) *harness.Cluster {
	t.Helper()
	RequireDocker(t)
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cl, err := harness.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("start %s cluster: %v", cfg.Target.Name(), err)
	}
	t.Cleanup(func() { cl.Close("") })
	t.Logf("%s cluster of %d (run %s) ready in %s (%s since the call)", cfg.Target.Name(), cfg.Nodes, cl.RunID,
		cl.Ready.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return cl
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// WorkerBinary returns the binary for worker images: the worker binary
// beside FENCECHECK_BIN (make test sets it; harness.FindWorkerBinary, or
// FENCECHECK_BIN itself without one), or cmd/fencecheck-worker built once
// per test binary.
func WorkerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FENCECHECK_BIN"); p != "" {
		p, _ = harness.FindWorkerBinary(p)
		return p
	}
	binOnce.Do(func() {
		_, here, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(here), "..", "..", "..")
		dir, err := os.MkdirTemp("", "fencecheck-test-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, harness.WorkerBinaryName)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binPath, "./cmd/fencecheck-worker")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = &buildError{err: err, out: string(out)}
		}
	})
	if binErr != nil {
		t.Fatalf("building the worker binary: %v", binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// ScratchImage builds (unless it exists) the FROM-scratch image of a Go
// server (images.Builder.BuildScratch: the static binary and nothing else)
// and returns its tag, for tests that run a user's kind of image.
func ScratchImage(t testing.TB, kind string) string {
	t.Helper()
	RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ref, err := (&images.Builder{Engine: eng}).BuildScratch(ctx, kind)
	if err != nil {
		t.Fatalf("scratch image of %s: %v", kind, err)
	}
	return ref
}

// Scenario plays a scripted scenario up to attempts times
// (harness.Attempts): again while play returns an error wrapping
// harness.ErrNotSetUp (the scenario did not take place as scripted, so no
// verdict about it may be asserted), logging each attempt that missed; the
// test fails, saying "scenario not set up", when no attempt set it up, and
// at once on any other error.
func Scenario(t testing.TB, attempts int, play func() error) {
	t.Helper()
	err := harness.Attempts(attempts, play, func(i int, err error) {
		t.Logf("attempt %d of %d: %v; playing it again", i, attempts, err)
	})
	if err != nil {
		t.Fatal(err)
	}
}
