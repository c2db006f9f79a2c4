// Package suite says which tests `make test` runs and which only
// `make test-all` (CONTRIBUTING.md, "make test and make test-all").
//
// `make test` runs on every landing and must end within CI's budget on a
// fresh machine (45 minutes quiet, 70 beside two CPU hogs). What it need
// not run every time, because it costs an image that takes most of that
// budget to build (Consul, the Kubernetes control plane, every other
// server version, every client of the zoo) or minutes of CPU on its own
// (three nights of a matrix, six runs in a chain; a 1M-operation report
// loaded in a browser; a cluster for each fault beyond one per
// mechanism), runs in `make test-all`, which sets
// FENCECHECK_TEST_ALL=1. A test of that part calls All first: under
// `make test` it is skipped with a message that names `make test-all`,
// and scripts/test.sh lists every such skip at the end of its log, so
// nothing is skipped silently.
package suite

import (
	"os"
	"testing"
)

// Env is the variable `make test-all` sets to 1.
const Env = "FENCECHECK_TEST_ALL"

// SkipWord starts the message of every skip All makes; scripts/test.sh
// finds the skips by it.
const SkipWord = "make test-all:"

// Whole reports whether the whole suite runs (FENCECHECK_TEST_ALL=1).
func Whole() bool { return os.Getenv(Env) == "1" }

// All skips t unless the whole suite runs, saying what the test needs
// that `make test` does not build (what: "the Kubernetes image").
func All(t testing.TB, what string) {
	t.Helper()
	if !Whole() {
		t.Skipf("%s needs %s; it runs in make test-all (%s=1)", SkipWord, what, Env)
	}
}
