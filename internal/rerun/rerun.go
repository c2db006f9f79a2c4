// Package rerun says how a stored run is repeated: the `fencecheck run`
// flags that make its configuration and seed again, read from its
// test.json, and the commands a report prints to reproduce it (`fencecheck
// rerun DIR`, which also replays the run's recorded fault schedule, and
// `fencecheck run ...`).
package rerun

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
)

// Runs is the number of re-runs the printed rerun command asks for.
const Runs = 5

// ErrCannot: a stored run that cannot be repeated from its test.json (a
// scripted demo, a user's client program, a configuration a value of which
// is missing or malformed).
var ErrCannot = errors.New("cannot be re-run")

// Spec is the configuration that repeats the run test.json describes: its
// recorded Spec (every duration as recorded, derived defaults included, so
// that a later default does not change the run), with the user's image by
// its id where recorded (a tag may have moved to another build since) and
// "none" for a run without faults. A scripted run (the demo) and a run of a
// user's client program (--client-dir, whose directory test.json does not
// record) are ErrCannot, and so is a test.json without a target, workload
// or seed.
func Spec(t store.TestInfo) (spec.Spec, error) {
	switch {
	case t.Scripted != "":
		return spec.Spec{}, fmt.Errorf("%w: a scripted run (%s): run fencecheck demo", ErrCannot, t.Scripted)
	case t.Client != "":
		return spec.Spec{}, fmt.Errorf("%w: the run used a client program (%s), and test.json does not record its --client-dir", ErrCannot, t.Client)
	case t.Target == "":
		return spec.Spec{}, fmt.Errorf("%w: test.json names no target", ErrCannot)
	case t.Workload == "":
		return spec.Spec{}, fmt.Errorf("%w: test.json names no workload", ErrCannot)
	case t.Seed == 0:
		return spec.Spec{}, fmt.Errorf("%w: test.json records no seed", ErrCannot)
	}
	s := t.Spec
	if id := t.ImageIDs[store.ImageTarget]; id != "" {
		s.Image = map[string]string{store.ImageTarget: id}
	}
	if s.Nemesis == "" {
		s.Nemesis = "none"
	}
	return s, nil
}

// RunArgs are the `fencecheck run` flags (without "run") of Spec's
// configuration: its replayable knobs (spec.Spec.Args); where it is stored
// (--results, --name) is left out. What test.json holds must read back as
// it was written: a value a flag cannot take (an image "a,b") is ErrCannot
// here rather than a printed command that fails.
func RunArgs(t store.TestInfo) ([]string, error) {
	s, err := Spec(t)
	if err != nil {
		return nil, err
	}
	args := s.Args()
	if _, err := spec.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: test.json: %w", ErrCannot, err)
	}
	return args, nil
}

// RunCommand is the `fencecheck run ...` command line of RunArgs, quoted for
// a POSIX shell, or "" when the run cannot be repeated.
func RunCommand(t store.TestInfo) string {
	args, err := RunArgs(t)
	if err != nil {
		return ""
	}
	return "fencecheck run " + Join(args)
}

// Command is the `fencecheck rerun DIR --runs 5` command line that repeats
// the run in dir with its recorded fault schedule, quoted for a POSIX shell.
func Command(dir string) string {
	return fmt.Sprintf("fencecheck rerun %s --runs %d", Quote(dir), Runs)
}

// Join quotes each argument for a POSIX shell and joins them with spaces.
func Join(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// Quote returns s as one word for a POSIX shell: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
