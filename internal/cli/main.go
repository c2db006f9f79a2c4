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

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/targets"
)

// Exit codes (the matrix's are its cells').
const (
	exitValid   = matrix.ExitValid
	exitInvalid = matrix.ExitInvalid
	exitUnknown = matrix.ExitUnknown
	exitBadArgs = matrix.ExitBadArgs
	exitHarness = matrix.ExitHarness
)

// errUsage marks bad arguments (exit 254), in this binary's verbs and the
// worker's commands alike.
var errUsage = cmdline.ErrUsage

// errInterrupted: Ctrl-C or SIGTERM ended the command before it had
// anything to judge (exit 2, unknown).
var errInterrupted = cmdline.ErrInterrupted

// inputError and readFailed are bad input (exit 254) with the input's own
// message (cmdline.InputError, cmdline.ReadFailed).
type inputError = cmdline.InputError

var readFailed = cmdline.ReadFailed

// usage is the top-level usage (verbTable).
var usage = topUsage()

// Run is fencecheck's command line: it runs the command in args and returns
// its exit code. extra are targets added to the built-in ones (a user's Go
// recipes, through the public package fencecheck); Run is called once per
// process.
func Run(args []string, stdout, stderr io.Writer, extra ...targets.Target) int {
	parts = runs.Parts{Targets: append(builtinTargets[:len(builtinTargets):len(builtinTargets)], extra...), Extra: len(extra) > 0}
	return run(args, stdout, stderr)
}

// BuiltinTarget returns the built-in target named name, or an error that
// lists them.
func BuiltinTarget(name string) (targets.Target, error) {
	return runs.Parts{Targets: builtinTargets}.LookupTarget(name)
}

func run(args []string, stdout, stderr io.Writer) int {
	survivePipes()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadArgs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitValid
	}
	v, ok := findVerb(args[0])
	if !ok {
		fmt.Fprintf(stderr, "fencecheck: unknown command %q\n\n%s", args[0], usage)
		return exitBadArgs
	}
	code, err := v.run(ctx, args[1:], stdout, stderr)
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

// survivePipes keeps a closed stdout or stderr (`fencecheck run ... |
// head -3`) from ending the process. Without it, Go's runtime kills a
// program whose write to fd 1 or 2 meets a pipe with no reader (SIGPIPE,
// exit 141), and a run died mid-way, leaving its containers, its network,
// a paused process and its keys on attached servers. With SIGPIPE
// notified (to a channel nobody reads: a signal that finds it full is
// dropped), such a write fails with EPIPE, which every print ignores, and
// a run goes on to its end as usual: it heals, tears down, purges its keys
// and stores its results. Child processes still start with SIGPIPE's
// default action.
func survivePipes() { signal.Notify(brokenPipes, syscall.SIGPIPE) }

// brokenPipes receives SIGPIPE (survivePipes); nothing reads it.
var brokenPipes = make(chan os.Signal, 1)

// maxMessage bounds an error message on stderr: one can quote the input,
// and hostile input can be megabytes long.
const maxMessage = 4 << 10

// clip cuts s to at most n bytes (on a rune boundary), saying how much
// more there was.
var clip = report.Clip

// newFlags and parse are the command lines' (one usage error for both
// binaries: exit 254).
var newFlags, parse = cmdline.NewFlags, cmdline.Parse
