package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/report"
)

// cmdServe serves a results directory read-only: the index of its runs and
// their files, until ctx ends (Ctrl-C).
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := verbFlags("serve", stderr, "Serves the index of the runs under RESULTS_DIR (default ./results) and their reports and files,\n"+
		"read-only (GET and HEAD), nothing outside it. Ctrl-C stops.\n\n")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (loopback unless you say otherwise)")
	if err := parseVerb(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: serve takes at most one RESULTS_DIR", errUsage)
	}
	dir := "results"
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	return report.Serve(ctx, dir, *addr, stdout, stderr)
}
