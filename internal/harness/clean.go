package harness

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// Clean is `fencecheck clean`: it resumes and removes every container and
// network fencecheck labelled on eng (or run runID's alone, when not ""),
// then unmounts the lazy disks those runs left, saying on stdout what it
// removed and on stderr a network the Engine would not let go of. eng is
// the caller's, which it connects and closes; a nil one is refused
// (ErrHarness).
func Clean(ctx context.Context, eng runtime.Engine, runID runtime.RunID, stdout, stderr io.Writer) error {
	if eng == nil {
		return errNoEngine
	}
	var (
		n   runtime.Cleaned
		err error
	)
	if runID != "" {
		n, err = eng.CleanRun(ctx, runID)
	} else {
		n, err = eng.Clean(ctx)
	}
	fmt.Fprintf(stdout, "removed %d containers and %d networks\n", n.Containers, n.Networks)
	// The containers are gone, so their lazy disks are free to go.
	disks, derr := CleanDisks(runID)
	if disks > 0 {
		fmt.Fprintf(stdout, "unmounted %d lazy disks\n", disks)
	}
	err = errors.Join(err, derr)
	for _, name := range n.Stuck {
		fmt.Fprintf(stderr, "fencecheck clean: network %s left: %v; it holds nothing\n", name, runtime.ErrStuckNetwork)
	}
	return err
}
