package runs

import (
	"context"
	"io"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/harness"
)

// RunID is a run's id as a flag types it (runtime.RunID): checked as it is
// read.
type RunID = runtime.RunID

// Clean is `fencecheck clean` (harness.Clean) on the Docker Engine: every
// container and network fencecheck labelled, or run runID's alone (when
// not ""), and their lazy disks.
func Clean(ctx context.Context, runID RunID, stdout, stderr io.Writer) error {
	var eng Engine
	defer eng.Close()
	e, err := eng.Get(ctx)
	if err != nil {
		return err
	}
	return harness.Clean(ctx, e, runID, stdout, stderr)
}
