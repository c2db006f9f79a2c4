package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/harness"
)

// cmdVersion prints which fencecheck this is (buildinfo): its module
// version, VCS revision, commit time and whether the tree was modified, the
// Go version, the binary the worker image holds, and the tags of the images
// it builds (images tags: what a run of this binary uses, and a CI cache
// key).
func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := verbFlags("version", stderr, "Prints this fencecheck's module version (\"(devel)\" for a build from source), the VCS\n"+
		"revision it was built from, the Go version, the binary its worker image holds and the tags\nof the images it builds (as images tags prints them), built or not. No Docker Engine is needed.")
	if err := parseVerb(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	worker := "unknown (cannot find this binary)"
	if self, err := os.Executable(); err == nil {
		// What the worker image holds (workerBinary), said without its note.
		if p, beside := harness.FindWorkerBinary(self); beside && len(parts.Targets) <= len(builtinTargets) {
			worker = p
		} else {
			worker = fmt.Sprintf("this binary (no %s beside it)", harness.WorkerBinaryName)
		}
	}
	if err := imageSet(stderr).Version(stdout, worker); err != nil {
		return err
	}
	if len(runs.Omitted) > 0 {
		fmt.Fprintf(stdout, "without    the targets %s (built with -tags nokubernetes, as make demo builds bin/demo/; make build builds them)\n", strings.Join(runs.Omitted, ", "))
	}
	return nil
}
