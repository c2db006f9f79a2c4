// Package cmdline holds the rules every fencecheck command line keeps, the
// fencecheck binary's verbs and the worker binary's commands alike: one
// usage error (exit 254), flag sets that report their errors instead of
// exiting, and parsing that takes flags before, between and after the
// positional arguments.
package cmdline

import (
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
