package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
)

func cmdClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := verbFlags("clean", stderr, "Resumes and removes every container, and removes every network, that fencecheck labelled\n(fencecheck=1), from any run; faults inside them go with them. Then unmounts the lazy disks\nthose runs left (disk faults). Nothing else is touched.")
	// A run id is parsed as the flag is read (runs.RunID): an empty or
	// path-like one is 254 before anything is touched (it names the run's
	// lazy disks' directory, which clean removes).
	var runID runs.RunID
	fs.Var(&runID, "run", "only the containers, network and lazy disks of this run id (test.json's run_id: 8 hexadecimal digits)")
	if err := parseVerb(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return runs.Clean(ctx, runID, stdout, stderr)
}
