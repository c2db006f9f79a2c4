// Package rerun says how a stored run is repeated: the `fencecheck run`
// flags that make its configuration and seed again, read from its
// test.json, and the commands a report prints to reproduce it (`fencecheck
// rerun DIR`, which also replays the run's recorded fault schedule, and
// `fencecheck run ...`).
package rerun

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
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
// "none" for a run without faults; a client program's directory is not
// in it (the rerun's --client-dir, never test.json's: cli's rerun). A
// scripted run (the demo) and a run of a user's client program whose
// test.json does not record its --client-dir (an earlier version's) are
// ErrCannot, and so is a test.json without a target, workload
// or seed.
func Spec(t store.TestInfo) (spec.Spec, error) {
	switch {
	case t.Scripted != "":
		return spec.Spec{}, fmt.Errorf("%w: a scripted run (%s): run fencecheck demo", ErrCannot, t.Scripted)
	case t.Client != "" && t.ClientPath == "":
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

// Attach is s, a stored run's configuration, with the servers it attaches
// to and what its clients present to them (every spec.Knob.Attach:
// --endpoints, --tls-*, --auth, --auth-file) taken from given, the
// rerun's own command line, and never from s: a test.json someone else
// wrote could name any local file as --auth-file and any server as
// --endpoints, and a rerun would send the one to the other. A run on
// attached servers needs --endpoints given again, and each credential
// flag it had (--auth-file or --auth for its --auth-file); a run on
// fencecheck's own servers takes none. Errors wrap ErrCannot and name the
// flags.
func Attach(s, given spec.Spec) (spec.Spec, error) {
	had, gave := s.AttachFlags(), given.AttachFlags()
	switch {
	case len(s.Endpoints) == 0 && len(gave) > 0:
		return spec.Spec{}, fmt.Errorf("%w with %s: the run started its own servers; --endpoints, --tls-* and --auth go with a rerun of a run on existing servers", ErrCannot, strings.Join(gave, " "))
	case len(s.Endpoints) == 0:
		s.TakeAttach(given) // nothing
		return s, nil
	case len(given.Endpoints) == 0:
		return spec.Spec{}, fmt.Errorf("%w as stored: the run attached to existing servers (%s), and a rerun takes their endpoints and credentials from its own command line, never from test.json: give --endpoints, and %s",
			ErrCannot, strings.Join(had, " "), credentialFlags(had))
	}
	var missing []string
	for _, f := range had {
		switch {
		case f == "--endpoints" || slices.Contains(gave, f):
		case f == "--auth-file" && given.Auth != "":
		case f == "--auth-file":
			missing = append(missing, "--auth-file (or --auth)")
		default:
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return spec.Spec{}, fmt.Errorf("%w without the credentials the run presented: give %s again", ErrCannot, strings.Join(missing, ", "))
	}
	s.TakeAttach(given)
	return s, nil
}

// credentialFlags says which credential flags to give again: those the
// stored run had (had), else every one, as its servers ask.
func credentialFlags(had []string) string {
	var creds []string
	for _, f := range had {
		if f != "--endpoints" {
			creds = append(creds, f)
		}
	}
	if len(creds) == 0 {
		return "as the servers ask, --auth-file, --tls-ca, --tls-cert, --tls-key, --tls-server-name"
	}
	return strings.Join(creds, ", ") + " again"
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
// a POSIX shell, or "" when the run cannot be repeated. The values of the
// flags that name an attached run's servers and credentials (Attach) are
// placeholders to fill in (ENDPOINTS, FILE, NAME), never test.json's: a
// report of someone else's run must not suggest a command that sends a
// local file to a server its test.json names.
func RunCommand(t store.TestInfo) string {
	args, err := RunArgs(t)
	if err != nil {
		return ""
	}
	attach := map[string]bool{}
	for _, f := range t.Spec.AttachFlags() {
		attach[f] = true
	}
	for i := 0; i+1 < len(args); i++ {
		if attach[args[i]] {
			args[i+1] = placeholder(args[i])
			i++
		}
	}
	if t.ClientPath != "" {
		args = append(args, "--client-dir", "DIR")
	}
	return "fencecheck run " + Join(args)
}

// placeholder is what a printed command shows for an attach flag's value.
func placeholder(flag string) string {
	switch flag {
	case "--endpoints":
		return "ENDPOINTS"
	case "--tls-server-name":
		return "NAME"
	}
	return "FILE"
}

// Command is the `fencecheck rerun DIR --runs 5` command line that repeats
// the run in dir, whose test.json is t, with its recorded fault schedule,
// quoted for a POSIX shell. For a run on attached servers it ends with
// the flags to give again (Attach), their values to fill in: "--endpoints
// ENDPOINTS --auth-file FILE ...", never test.json's; for a client
// program's run, "--client-dir DIR", to fill in likewise.
func Command(dir string, t store.TestInfo) string {
	c := fmt.Sprintf("fencecheck rerun %s --runs %d", Quote(dir), Runs)
	for _, f := range t.Spec.AttachFlags() {
		c += " " + f + " " + placeholder(f)
	}
	if t.ClientPath != "" {
		// The program's directory, given again: never test.json's.
		c += " --client-dir DIR"
	}
	return c
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
