package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/harness"
)

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	details := "Re-runs the checkers on a stored run and rewrites its results.json, report.html and junit.xml\n" +
		"(all or nothing: a history the checkers cannot judge exits 254 and leaves them as they are),\n" +
		"or checks a history recorded by Jepsen on a model:\n"
	var req harness.CheckRequest
	details += req.ModelsHelp()
	fs := verbFlags("check", stderr, details)
	timeout := fs.Duration("check-timeout", 60*time.Second, "time limit of the linearizability check (past it: unknown)")
	var sp spec.Spec // --check-memory, as run takes it
	sp.Flags(fs, func(k spec.Knob) bool { return k.Flag == "check-memory" }, nil)
	jc := &req.Jepsen
	fs.StringVar(&jc.File, "jepsen-history", "", "check this history recorded by Jepsen instead of a run (with --model)")
	fs.StringVar(&jc.Model, "model", "", "the model of --jepsen-history: "+req.ModelNames())
	fs.StringVar(&jc.Viz, "viz", "", "with --jepsen-history: where to write Porcupine's visualization of the failing keys, if any (a new file: never the history, nor an existing file without --force)")
	fs.BoolVar(&jc.Force, "force", false, "with --viz: replace the file if it exists")
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	switch {
	case jc.File != "" && fs.NArg() > 0:
		return 0, fmt.Errorf("%w: check takes RUN_DIR or --jepsen-history, not both", errUsage)
	case jc.File == "" && (jc.Model != "" || jc.Viz != "" || jc.Force):
		return 0, fmt.Errorf("%w: --model, --viz and --force go with --jepsen-history", errUsage)
	case jc.File == "" && fs.NArg() != 1:
		return 0, fmt.Errorf("%w: check takes one RUN_DIR, or --jepsen-history FILE --model MODEL", errUsage)
	}
	req.Dir, req.Workload, req.Timeout, req.Memory = fs.Arg(0), lookupWorkload, *timeout, sp.CheckMemory
	return harness.CheckCommand(ctx, req, stdout)
}
