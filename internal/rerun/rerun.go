// Package rerun says how a stored run is repeated: the `fencecheck run`
// flags that make its configuration and seed again, read from its
// test.json, and the commands a report prints to reproduce it (`fencecheck
// rerun DIR`, which also replays the run's recorded fault schedule, and
// `fencecheck run ...`).
package rerun

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/store"
)

// Runs is the number of re-runs the printed rerun command asks for.
const Runs = 5

// ErrCannot: a stored run that cannot be repeated from its test.json (a
// scripted demo, a user's client program, a configuration a value of which
// is missing or malformed).
var ErrCannot = errors.New("cannot be re-run")

// RunArgs are the `fencecheck run` flags (without "run") that repeat the
// run test.json describes: its target, workload, resources and fencing,
// nemesis, every duration as recorded (derived defaults included, so that
// a later default does not change the run), sizes and seed. Where it is
// stored (--results, --name) is left out. A scripted run (the demo) and a
// run of a user's client program (--client-dir, whose directory test.json
// does not record) are ErrCannot, and so is a test.json without a target,
// workload or seed, or with a duration that does not parse.
func RunArgs(t store.TestInfo) ([]string, error) {
	switch {
	case t.Scripted != "":
		return nil, fmt.Errorf("%w: a scripted run (%s): run fencecheck demo", ErrCannot, t.Scripted)
	case t.Client != "":
		return nil, fmt.Errorf("%w: the run used a client program (%s), and test.json does not record its --client-dir", ErrCannot, t.Client)
	case t.Target == "":
		return nil, fmt.Errorf("%w: test.json names no target", ErrCannot)
	case t.Workload == "":
		return nil, fmt.Errorf("%w: test.json names no workload", ErrCannot)
	case t.Seed == 0:
		return nil, fmt.Errorf("%w: test.json records no seed", ErrCannot)
	}
	args := []string{"--target", t.Target, "--workload", t.Workload}
	if len(t.Resources) > 0 {
		var rs []string
		for _, r := range t.Resources {
			rs = append(rs, r.Name)
		}
		args = append(args, "--resource", strings.Join(rs, ","))
	}
	if t.Fencing != "" {
		args = append(args, "--fencing", t.Fencing)
	}
	if t.AuditLog != "" {
		args = append(args, "--audit-log")
	}
	if t.SideWriter {
		args = append(args, "--side-writer")
	}
	nem := t.Nemesis
	if nem == "" {
		nem = "none"
	}
	args = append(args, "--nemesis", nem)
	for _, d := range []struct{ flag, v string }{
		{"--nemesis-interval", t.NemesisInterval},
		{"--time-limit", t.TimeLimit},
		{"--ttl", t.TTL},
		{"--lock-delay", t.LockDelay},
		{"--work", t.Work},
		{"--margin", t.Margin},
		{"--acquire-timeout", t.AcquireTimeout},
		{"--rpc-timeout", t.RPCTimeout},
		{"--op-timeout", t.OpTimeout},
		{"--check-timeout", t.CheckTimeout},
		{"--ready-timeout", t.ReadyTimeout},
	} {
		if d.v == "" {
			continue // an older test.json: the default
		}
		if _, err := time.ParseDuration(d.v); err != nil {
			return nil, fmt.Errorf("%w: test.json: %s %q is not a duration", ErrCannot, strings.TrimPrefix(d.flag, "--"), d.v)
		}
		args = append(args, d.flag, d.v)
	}
	if t.Concurrency > 0 {
		args = append(args, "--concurrency", strconv.Itoa(t.Concurrency))
	}
	if t.Nodes > 0 {
		args = append(args, "--nodes", strconv.Itoa(t.Nodes))
	}
	if t.Keys > 0 {
		args = append(args, "--keys", strconv.Itoa(t.Keys))
	}
	if t.ReadMode != "" {
		args = append(args, "--read-mode", t.ReadMode)
	}
	if t.Version != "" {
		args = append(args, "--version", t.Version)
	}
	if t.Recipe != "" {
		args = append(args, "--recipe", t.Recipe)
	}
	// The user's image by its id where recorded: a tag may have moved to
	// another build since.
	if ref := cmp.Or(t.ImageIDs[store.ImageTarget], t.Images[store.ImageTarget]); ref != "" {
		args = append(args, "--image", store.ImageTarget+"="+ref)
	}
	return append(args, "--seed", strconv.FormatUint(t.Seed, 10)), nil
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
