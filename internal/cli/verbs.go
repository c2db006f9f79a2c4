package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fencecheck/fencecheck/internal/worker"
)

// verb is one of fencecheck's commands as its -h and the top-level usage
// print it: both come from verbs, so they cannot drift apart.
type verb struct {
	name string
	// args is what follows the name on the usage line ("[flags] RUN_DIR");
	// a second way to call it follows a newline.
	args string
	// desc is one line: what the verb does.
	desc string
	// example is one command line.
	example string
}

// verbs are fencecheck's commands, in the top-level usage's order.
var verbs = []verb{
	{"run", "[flags]", "run a test and check it",
		"fencecheck run --target etcd --nemesis pause-holder --fencing token"},
	{"demo", "[flags]", "the seed story on real etcd: a paused lock holder, unfenced then fenced",
		"fencecheck demo --target redis"},
	{"matrix", "[flags]", "every combination of targets, faults and fencing modes, one run after another; fails when a fenced run is not valid (nightly CI)",
		"fencecheck matrix --target etcd,redis --nemesis pause-holder --results results/night-1"},
	{"sweep", "[flags]", "pause one lock holder a run for M TTLs, M over a range, unfenced and fenced: the fraction of runs that lost an update against M (sweep.svg, sweep.json); fails when a fenced run lost one",
		"fencecheck sweep --target etcd --pause 0.5..2 --steps 4 --runs 3"},
	{"merge", "[--results OUT] SHARD_DIR...", "join the results of a sharded matrix (matrix --shard I/N) into one",
		"fencecheck merge shard-1 shard-2 --results nights/2026-12-04"},
	{"trends", "[--nights N] ROOT", "each matrix cell's verdicts night by night (ROOT/NIGHT/matrix.json), detection rates and regressions: trends.html, trends.json",
		"fencecheck trends nights --nights 14"},
	{"check", "[flags] RUN_DIR\n[flags] --jepsen-history FILE --model cas-register|kv", "re-run the checkers on a stored run, or check a history recorded by Jepsen",
		"fencecheck check results/latest --check-timeout 5m"},
	{"rerun", "RUN_DIR [--runs N] [flags]", "repeat a stored run N times (default 5) with its configuration, seed and recorded fault schedule; prints how many re-runs were invalid",
		"fencecheck rerun results/latest --runs 10"},
	{"shrink", "RUN_DIR [--confirm K/N] [--budget RUNS|DURATION] [flags]", "search for the smallest run that still fails as a stored run did (fewer faults, clients, seconds, nodes, shorter holds) and write it with repro.md, a bug report draft",
		"fencecheck shrink results/latest --budget 40 --confirm 2/3"},
	{"serve", "[--addr HOST:PORT] [RESULTS_DIR]", "serve the runs' index and reports, read-only (default 127.0.0.1:8080)",
		"fencecheck serve results --addr 127.0.0.1:9000"},
	{"client-check", "--client-dir DIR [flags]", "check that your lock client program speaks the client protocol, against a real single-node lock service (docs/client-protocol.md)",
		"fencecheck client-check --client-dir examples/clients/redis-py --target redis"},
	{"zoo", "[--out FILE | --publish DIR] RESULTS...", "the lock-client zoo's page (Markdown) from a matrix run with --client-dir builtin,DIR,... (docs/zoo.md)",
		"fencecheck zoo results/zoo --out zoo.md"},
	{"images", "[-v] [build [--all-versions] [--client-dir DIR,...] [KIND[@VERSION]...]|scratch KIND[@VERSION]...|list|prune|save DIR|load DIR|tags [KIND...]]", "build or list the container images (no registry needed); save and load them as a CI cache",
		"fencecheck images save ~/.cache/fencecheck-images"},
	{"version", "", "the module version, VCS revision, Go version and image tags of this binary",
		"fencecheck version"},
	{"clean", "[--run ID]", "remove every container and network fencecheck labelled (or one run's), resuming paused processes",
		"fencecheck clean --run \"$(jq -r .run_id results/latest/test.json)\""},
}

// proxyUsage is the worker's proxy command, which package worker parses
// and prints the -h of, from the same strings.
var proxyUsage = verb{worker.CmdProxyName, worker.ProxyArgs, worker.ProxyDesc, worker.ProxyExample}

// verbNamed returns the verb called name; a name not in verbs is a bug.
func verbNamed(name string) verb {
	for _, v := range verbs {
		if v.name == name {
			return v
		}
	}
	panic("fencecheck: no verb " + name + " in verbs")
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
// after its positional arguments (check RUN_DIR --check-timeout 5s), and
// "--" ends the flags. fs.Args() are then the positional arguments, in
// order. A parse error wraps errUsage (exit 254) and names the flag; -h
// and --help are flag.ErrHelp.
func parseVerb(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
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

// topUsage is the top-level usage, from verbs.
func topUsage() string {
	var b strings.Builder
	b.WriteString("fencecheck: chaos and linearizability tests for distributed locks and leases\n\nUsage:\n")
	const col, width = 34, 110
	for _, v := range append(verbs[:len(verbs):len(verbs)], proxyUsage) {
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
