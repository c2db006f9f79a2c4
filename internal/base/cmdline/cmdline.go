// Package cmdline holds the rules every fencecheck command line keeps, the
// fencecheck binary's verbs and the worker binary's commands alike: one
// usage error (exit 254), flag sets that report their errors instead of
// exiting, and parsing that takes flags before, between and after the
// positional arguments.
package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// ErrUsage marks bad arguments or input: a command that returns an error
// wrapping it exits 254.
var ErrUsage = errors.New("usage")

// NewFlags is a flag set of the command name ("fencecheck "+name in its
// messages) that writes its errors and -h to out and returns them instead
// of exiting.
func NewFlags(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fencecheck "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	return fs
}

// Parse parses args into fs: a parse error wraps ErrUsage, -h and --help
// are flag.ErrHelp. fs.Args() are what follows the first positional
// argument.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return nil
}

// ParseInterspersed is Parse where flags may come before, between or
// after the positional arguments (check RUN_DIR --check-timeout 5s), and
// "--" ends the flags. fs.Args() are then the positional arguments, in
// order.
func ParseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := Parse(fs, args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...) // after "--", all positional
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	// Parsing "--" alone sets no flag and leaves the positionals as
	// fs.Args().
	return fs.Parse(append([]string{"--"}, pos...))
}

// Exit codes (as Jepsen's): 0 valid, 1 invalid, 2 unknown, 254 bad
// arguments or input, 255 the harness itself failed.
const (
	ExitValid   = 0
	ExitInvalid = 1
	ExitUnknown = 2
	ExitBadArgs = 254
	ExitHarness = 255
)

// ErrInterrupted: Ctrl-C or SIGTERM ended the command before it had
// anything to judge. It is not a harness failure: the verdict is unknown
// (exit 2).
var ErrInterrupted = errors.New("interrupted")

// InputError is bad input: exit 254 like a usage error (it wraps
// ErrUsage), but its message is the input's own ("FILE:LINE: ...").
type InputError struct{ Err error }

func (e InputError) Error() string   { return e.Err.Error() }
func (e InputError) Unwrap() []error { return []error{ErrUsage, e.Err} }

// ReadFailed is the outcome of an input file that could not be read: bad
// input (exit 254), unless ctx ended the reading (exit 2 and
// ErrInterrupted: nothing checked, nothing written).
func ReadFailed(ctx context.Context, file string, err error) (int, error) {
	if ctx.Err() != nil {
		return ExitUnknown, fmt.Errorf("%w (%w) while reading %s: nothing checked, nothing written", ErrInterrupted, context.Cause(ctx), file)
	}
	return 0, InputError{err}
}
