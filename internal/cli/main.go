// Package cli is fencecheck's command line (cmd/fencecheck runs it through
// the public package fencecheck). See the README.
//
// Exit codes (as Jepsen's): 0 valid, 1 invalid, 2 unknown, 254 bad arguments
// or input, 255 the harness itself failed.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/worker"
	"github.com/fencecheck/fencecheck/targets"
)

// Exit codes.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
	exitBadArgs = 254
	exitHarness = 255
)

// errUsage marks bad arguments (exit 254): the worker's, so that one error
// means it in both binaries.
var errUsage = worker.ErrUsage

const usage = `fencecheck: chaos and linearizability tests for distributed locks and leases

Usage:
  fencecheck run [flags]          run a test (fencecheck run -h for the flags)
  fencecheck demo [flags]         the seed story on real etcd: a paused lock holder, unfenced then fenced
  fencecheck matrix [flags]       every combination of targets, faults and fencing modes, one run after
                                  another; fails when a fenced run is not valid (nightly CI)
  fencecheck sweep [flags]        pause one lock holder a run for M TTLs, M over a range, unfenced and fenced:
                                  the fraction of runs that lost an update against M (sweep.svg, sweep.json);
                                  fails when a fenced run lost one
  fencecheck merge --results OUT SHARD_DIR...
                                  join the results of a sharded matrix (matrix --shard I/N) into one
  fencecheck trends ROOT          each matrix cell's verdicts night by night (ROOT/NIGHT/matrix.json),
                                  detection rates and regressions: trends.html, trends.json
  fencecheck check RUN_DIR        re-run the checkers on a stored run
  fencecheck rerun RUN_DIR [--runs N]
                                  repeat a stored run N times (default 5) with its configuration, seed and
                                  recorded fault schedule; prints how many re-runs were invalid
  fencecheck check --jepsen-history FILE --model cas-register|kv
                                  check a history recorded by Jepsen
  fencecheck serve [RESULTS_DIR]  serve the runs' index and reports, read-only (--addr, default 127.0.0.1:8080)
  fencecheck client-check --client-dir DIR
                                  check that your lock client program speaks the client protocol,
                                  against a real single-node lock service (docs/client-protocol.md)
  fencecheck zoo [--out FILE] RESULTS
                                  the lock-client zoo's page (Markdown) from a matrix run with
                                  --client-dir builtin,DIR,... (docs/zoo.md)
  fencecheck images [build|list|save DIR|load DIR|tags]
                                  build or list the container images (no registry needed); save and load
                                  them as a CI cache
  fencecheck clean                remove every container and network fencecheck labelled, resuming paused processes
  fencecheck proxy --backend URL  the fencing proxy of the "proxy" resource (runs in its container)

Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or input, 255 harness failure.
`

// Run is fencecheck's command line: it runs the command in args and returns
// its exit code. extra are targets added to the built-in ones (a user's Go
// recipes, through the public package fencecheck); Run is called once per
// process.
func Run(args []string, stdout, stderr io.Writer, extra ...targets.Target) int {
	targetTable = append(builtinTargets[:len(builtinTargets):len(builtinTargets)], extra...)
	return run(args, stdout, stderr)
}

// BuiltinTarget returns the built-in target named name, or an error that
// lists them.
func BuiltinTarget(name string) (targets.Target, error) {
	return lookup(builtinTargets, "target", name)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadArgs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	code := exitValid
	switch args[0] {
	case "run":
		code, err = cmdRun(ctx, args[1:], stdout, stderr)
	case "demo":
		code, err = cmdDemo(ctx, args[1:], stdout, stderr)
	case "matrix":
		code, err = cmdMatrix(ctx, args[1:], stdout, stderr)
	case "sweep":
		code, err = cmdSweep(ctx, args[1:], stdout, stderr)
	case "merge":
		code, err = cmdMerge(ctx, args[1:], stdout, stderr)
	case "trends":
		code, err = cmdTrends(ctx, args[1:], stdout, stderr)
	case "check":
		code, err = cmdCheck(ctx, args[1:], stdout, stderr)
	case "rerun":
		code, err = cmdRerun(ctx, args[1:], stdout, stderr)
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "images":
		err = cmdImages(ctx, args[1:], stdout, stderr)
	case "clean":
		err = cmdClean(ctx, args[1:], stdout, stderr)
	case "client-check":
		code, err = cmdClientCheck(ctx, args[1:], stdout, stderr)
	case "zoo":
		code, err = cmdZoo(ctx, args[1:], stdout, stderr)
	// The worker binary's commands (package worker): fencecheck runs them
	// too, for a worker image that holds fencecheck itself.
	case worker.CmdClientProbeName:
		err = worker.CmdClientProbe(ctx, args[1:], stdout, stderr)
	case worker.CmdWorkerName:
		err = worker.CmdWorker(ctx, args[1:], stderr, catalog)
	case worker.CmdProxyName:
		err = worker.CmdProxy(ctx, args[1:], stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitValid
	default:
		fmt.Fprintf(stderr, "fencecheck: unknown command %q\n\n%s", args[0], usage)
		return exitBadArgs
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		fmt.Fprintf(stderr, "fencecheck %s: %s\n", args[0], clip(err.Error(), maxMessage))
		if errors.Is(err, errInterrupted) {
			return code
		}
		if errors.Is(err, errUsage) || errors.Is(err, targets.ErrBadConfig) {
			return exitBadArgs
		}
		return exitHarness
	}
	return code
}

// maxMessage bounds an error message on stderr: one can quote the input,
// and hostile input can be megabytes long.
const maxMessage = 4 << 10

// clip cuts s to at most n bytes (on a rune boundary), saying how much
// more there was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:cut], len(s)-cut)
}

// exitCode maps a verdict to the exit code.
func exitCode(v checkers.Validity) int {
	switch v {
	case checkers.Valid:
		return exitValid
	case checkers.Invalid:
		return exitInvalid
	}
	return exitUnknown
}

// newFlags and parse are the worker's (one usage error for both binaries:
// exit 254).
var newFlags, parse = worker.NewFlags, worker.Parse
