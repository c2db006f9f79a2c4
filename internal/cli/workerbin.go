package cli

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/fencecheck/fencecheck/internal/harness"
)

// fallbackNote is said once per process.
var fallbackNote sync.Once

// workerBinary is the binary the worker image is built from
// (harness.FindWorkerBinary): fencecheck-worker beside this binary, or this
// binary itself, which then says once on stderr why and how to get the
// smaller one. With a Go API user's recipes it is always this binary: only
// it knows them.
func workerBinary(stderr io.Writer) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: cannot find my own binary for the worker image: %w", harness.ErrHarness, err)
	}
	if len(targetTable) > len(builtinTargets) {
		return self, nil
	}
	p, beside := harness.FindWorkerBinary(self)
	if !beside {
		fallbackNote.Do(func() {
			fmt.Fprintf(stderr, "fencecheck: no %s beside %s: the worker image holds fencecheck itself "+
				"(make build builds both; or go install github.com/fencecheck/fencecheck/cmd/%s)\n",
				harness.WorkerBinaryName, self, harness.WorkerBinaryName)
		})
	}
	return p, nil
}
