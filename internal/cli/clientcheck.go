package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
)

// cmdClientCheck is `fencecheck client-check`: a client program's
// conformance run against a real single-node lock service. Exit 0 when
// every check passed, 1 when one failed.
func cmdClientCheck(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("client-check", stderr, "Starts one server of the target and one worker container running your program, walks the\nprogram through the client protocol's steps and prints each step's result. Exit 0 if every\nstep passed, 1 if one failed.")
	dir := fs.String("client-dir", "", "the client's directory (client.json and the program)")
	cmdline := fs.String("client-cmd", "", "the command that starts the program, instead of client.json's")
	image := fs.String("client-image", "", "an image of yours to run the program in, instead of fencecheck's worker image")
	target := fs.String("target", "", "lock service to check against (default: client.json's \"target\", or the first of its \"targets\", else etcd): "+targetNames())
	fencing := fs.String("fencing", "none", "fencing mode sent in init (none, token, cas)")
	ttl := fs.Duration("ttl", 0, "lease TTL (default 10s, or the target's default if longer: a lock that does not renew holds it through the checks)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long each reply may take (an acquire may wait for the lock besides)")
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *dir == "" {
		return 0, fmt.Errorf("%w: --client-dir is required", errUsage)
	}
	if *timeout <= 0 {
		return 0, fmt.Errorf("%w: --timeout must be positive", errUsage)
	}
	return parts.ClientCheck(ctx, runs.ClientCheck{Dir: *dir, Cmd: *cmdline, Image: *image, Target: *target, Fencing: *fencing, TTL: *ttl, Timeout: *timeout}, stdout, stderr)
}
