package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
)

// verb is one of fencecheck's commands as its -h and the top-level usage
// print it: both come from verbTable, so they cannot drift apart.
type verb struct {
	name string
	// args is what follows the name on the usage line ("[flags] RUN_DIR");
	// a second way to call it follows a newline.
	args string
	// desc is one line: what the verb does.
	desc string
	// example is one command line.
	example string
	// run runs the verb with its arguments (those after its name) and
	// returns its exit code; an error is printed and maps to one (run).
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error)
}

// hidden reports whether the verb is left out of the top-level usage: the
// worker's commands that have no description, which the harness runs
// inside a worker container.
func (v verb) hidden() bool { return v.desc == "" }

// verbTable is fencecheck's commands, in the top-level usage's order: the
// one list that the dispatch (run), the top-level usage and each verb's -h
// read. (A function, not a variable: the verbs' own functions read it.)
func verbTable() []verb {
	return []verb{
		{"run", "[flags]", "run a test and check it",
			"fencecheck run --target etcd --nemesis pause-holder --fencing token", cmdRun},
		{"demo", "[flags]", "the seed story on real etcd: a paused lock holder, unfenced then fenced",
			"fencecheck demo --target redis", cmdDemo},
		{"matrix", "[flags]", "every combination of targets, faults and fencing modes, one run after another; fails when a fenced run is not valid (nightly CI)",
			"fencecheck matrix --target etcd,redis --nemesis pause-holder --results results/night-1", cmdMatrix},
		{"sweep", "[flags]", "pause one lock holder a run for M TTLs, M over a range, unfenced and fenced: the fraction of runs that lost an update against M (sweep.svg, sweep.json); fails when a fenced run lost one",
			"fencecheck sweep --target etcd --pause 0.5..2 --steps 4 --runs 3", cmdSweep},
		{"merge", "[--results OUT] SHARD_DIR...", "join the results of a sharded matrix (matrix --shard I/N) into one",
			"fencecheck merge shard-1 shard-2 --results nights/2026-12-04", cmdMerge},
		{"trends", "[--nights N] ROOT", "each matrix cell's verdicts night by night (ROOT/NIGHT/matrix.json), detection rates and regressions: trends.html, trends.json",
			"fencecheck trends nights --nights 14", cmdTrends},
		{"check", "[flags] RUN_DIR\n[flags] --jepsen-history FILE --model cas-register|kv", "re-run the checkers on a stored run, or check a history recorded by Jepsen",
			"fencecheck check results/latest --check-timeout 5m", cmdCheck},
		{"rerun", "RUN_DIR [--runs N] [flags]", "repeat a stored run N times (default 5) with its configuration, seed and recorded fault schedule; prints how many re-runs were invalid",
			"fencecheck rerun results/latest --runs 10", cmdRerun},
		{"shrink", "RUN_DIR [--confirm K/N] [--budget RUNS|DURATION] [flags]", "search for the smallest run that still fails as a stored run did (fewer faults, clients, seconds, nodes, shorter holds) and write it with repro.md, a bug report draft",
			"fencecheck shrink results/latest --budget 40 --confirm 2/3", cmdShrink},
		{"serve", "[--addr HOST:PORT] [RESULTS_DIR]", "serve the runs' index and reports, read-only (default 127.0.0.1:8080)",
			"fencecheck serve results --addr 127.0.0.1:9000", noCode(cmdServe)},
		{"client-check", "--client-dir DIR [flags]", "check that your lock client program speaks the client protocol, against a real single-node lock service (docs/client-protocol.md)",
			"fencecheck client-check --client-dir examples/clients/redis-py --target redis", cmdClientCheck},
		{"zoo", "[--out FILE | --publish DIR] RESULTS...", "the lock-client zoo's page (Markdown) from a matrix run with --client-dir builtin,DIR,... (docs/zoo.md)",
			"fencecheck zoo results/zoo --out zoo.md", cmdZoo},
		{"images", "[-v] [build [--all-versions] [--client-dir DIR,...] [KIND[@VERSION]...]|scratch KIND[@VERSION]...|list|prune|save DIR [KIND...]|load DIR|tags [KIND...]]", "build or list the container images (no registry needed); save and load them as a CI cache",
			"fencecheck images save ~/.cache/fencecheck-images", noCode(cmdImages)},
		{"version", "", "the module version, VCS revision, Go version and image tags of this binary",
			"fencecheck version", noCode(cmdVersion)},
		{"clean", "[--run ID]", "remove every container and network fencecheck labelled (or one run's), resuming paused processes",
			"fencecheck clean --run \"$(jq -r .run_id results/latest/test.json)\"", noCode(cmdClean)},
		// The worker binary's commands (package worker), which fencecheck
		// runs too, for a worker image that holds fencecheck itself: the
		// proxy's usage is the worker package's strings.
		{worker.CmdProxyName, worker.ProxyArgs, worker.ProxyDesc, worker.ProxyExample, workerCommand(worker.CmdProxyName)},
		{name: worker.CmdWorkerName, run: workerCommand(worker.CmdWorkerName)},
		{name: worker.CmdClientProbeName, run: workerCommand(worker.CmdClientProbeName)},
	}
}

// workerCommand is the worker's command name (worker.Command), with the
// parts (parts.Catalog).
func workerCommand(name string) func(context.Context, []string, io.Writer, io.Writer) (int, error) {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
		return exitValid, worker.Command(ctx, name, args, stdout, stderr, parts.Catalog())
	}
}

// noCode is a verb that has no verdict: it exits 0 or with its error's
// code.
func noCode(f func(ctx context.Context, args []string, stdout, stderr io.Writer) error) func(context.Context, []string, io.Writer, io.Writer) (int, error) {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
		return exitValid, f(ctx, args, stdout, stderr)
	}
}

// findVerb returns the verb called name, and whether there is one.
func findVerb(name string) (verb, bool) {
	for _, v := range verbTable() {
		if v.name == name {
			return v, true
		}
	}
	return verb{}, false
}

// verbNamed returns the verb called name; a name not in verbTable is a
// bug.
func verbNamed(name string) verb {
	v, ok := findVerb(name)
	if !ok {
		panic("fencecheck: no verb " + name + " in verbTable")
	}
	return v
}

// usageLines are a verb's usage lines, one per way to call it.
func (v verb) usageLines() []string {
	var lines []string
	for _, a := range strings.Split(v.args, "\n") {
		lines = append(lines, strings.TrimSpace("fencecheck "+v.name+" "+a))
	}
	return lines
}

// verbFlags is the flag set of the verb called name, its errors and -h
// written to out. -h prints the usage lines, the one-line description,
// details (paragraphs, may be empty), the example and the flags.
func verbFlags(name string, out io.Writer, details string) *flag.FlagSet {
	v := verbNamed(name)
	fs := newFlags(name, out)
	fs.Usage = func() {
		for i, l := range v.usageLines() {
			head := "Usage: "
			if i > 0 {
				head = "       "
			}
			fmt.Fprintln(out, head+l)
		}
		fmt.Fprintf(out, "\n%s%s.\n\n", strings.ToUpper(v.desc[:1]), v.desc[1:])
		if details != "" {
			fmt.Fprint(out, strings.TrimRight(details, "\n")+"\n\n")
		}
		fmt.Fprintf(out, "Example:\n  %s\n", v.example)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprint(out, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseVerb parses a verb's arguments: flags may come before, between or
// after its positional arguments (cmdline.ParseInterspersed).
var parseVerb = cmdline.ParseInterspersed

// topUsage is the top-level usage, from verbTable.
func topUsage() string {
	var b strings.Builder
	b.WriteString("fencecheck: chaos and linearizability tests for distributed locks and leases\n\nUsage:\n")
	const col, width = 34, 110
	for _, v := range verbTable() {
		if v.hidden() {
			continue
		}
		lines := v.usageLines()
		for _, l := range lines[:len(lines)-1] {
			b.WriteString("  " + l + "\n")
		}
		last := "  " + lines[len(lines)-1]
		if len(last) > col-2 {
			b.WriteString(last + "\n")
			last = ""
		}
		line := fmt.Sprintf("%-*s", col, last)
		for _, w := range strings.Fields(v.desc) {
			if len(line)+1+len(w) > width && strings.TrimSpace(line) != "" && len(line) > col {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				line = strings.Repeat(" ", col)
			}
			if len(line) > col {
				line += " "
			}
			line += w
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\nA verb's -h prints its flags and an example; flags may come before or after its arguments.\n")
	b.WriteString("\nExit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or input, 255 harness failure.\n")
	return b.String()
}
