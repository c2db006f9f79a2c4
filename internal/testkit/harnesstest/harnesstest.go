// Package harnesstest starts real clusters for integration tests: the one
// place that decides when such a test runs. It skips under -short or with
// FENCECHECK_SKIP_DOCKER=1 set explicitly, and otherwise fails when the
// cluster cannot start (a missing Docker Engine included): never a silent
// skip.
package harnesstest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
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

// Cluster starts a cluster for the test and removes it when the test ends,
// on cfg.Engine, or without one on the Docker Engine, connected for the
// cluster and closed after it.
// The set-up may build images from cold caches, or wait for another
// process building them (a background `images build` beside the suite:
// scripts/test.sh): it gets 40 minutes, as a kube-apiserver compile on a
// busy 2-core machine can take 25.
//
// A Consul cluster needs the consul image, a compile of about 15 minutes of
// CPU that make test leaves to make test-all (suite): its tests skip under
// make test, saying so.
func Cluster(t testing.TB, cfg harness.ClusterConfig) *harness.Cluster {
	t.Helper()
	if cfg.Target != nil && cfg.Target.Name() == images.Consul {
		suite.All(t, ConsulImage)
	}
	RequireDocker(t)
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	start := time.Now()
	if cfg.Engine == nil {
		eng, err := docker.Connect(ctx)
		if err != nil {
			t.Fatalf("start %s cluster: %v", cfg.Target.Name(), err)
		}
		// Cleanups run last added first: the cluster is closed before
		// its engine.
		t.Cleanup(func() { eng.Close() })
		cfg.Engine = eng
	}
	cl, err := harness.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("start %s cluster: %v", cfg.Target.Name(), err)
	}
	t.Cleanup(func() { cl.Close("") })
	t.Logf("%s cluster of %d (run %s) ready in %s (%s since the call)", cfg.Target.Name(), cfg.Nodes, cl.RunID,
		cl.Ready.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return cl
}

// ConsulImage is what a test of a Consul cluster needs that make test does
// not build, as suite.All says it.
const ConsulImage = "the consul image (Consul compiles for about 15 minutes of CPU)"

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
		root, err := moduleRoot()
		if err != nil {
			binErr = err
			return
		}
		dir, err := os.MkdirTemp("", "fencecheck-test-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, harness.WorkerBinaryName)
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", binPath, "./cmd/fencecheck-worker")
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
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
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

// moduleRoot is the directory of fencecheck's go.mod, found upwards from the
// test's working directory (its package's directory; not runtime.Caller,
// whose file names -trimpath makes relative to the module).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("harnesstest: no go.mod above the test's directory")
		}
		dir = up
	}
}
