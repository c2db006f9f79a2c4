package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/campaigns/zoo"
)

// cmdZoo is `fencecheck zoo [--out FILE | --publish DIR] RESULTS...`: the
// lock-client zoo's page, in Markdown, from a matrix (or merged shards) run
// with --client-dir as an axis: one table row per client, target, fault
// and fencing mode, over the cell's seeds (zoo.Write).
func cmdZoo(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fset := verbFlags("zoo", stderr, zooUsage)
	out := fset.String("out", "", "write the page to FILE (its links to the reports are relative to FILE's directory) instead of stdout")
	publish := fset.String("publish", "", "write a copy to publish into DIR: DIR/zoo.md, and what it reads and links (each matrix.json and test.json; each linked run's report, made again to name the run by its path in DIR, and the files it links, or says what was left out)")
	if err := parseVerb(fset, args); err != nil {
		return 0, err
	}
	if fset.NArg() < 1 {
		return 0, fmt.Errorf("%w: zoo needs a RESULTS directory", errUsage)
	}
	if *publish != "" && *out != "" {
		return 0, fmt.Errorf("%w: zoo: --out or --publish, not both (--publish writes DIR/%s)", errUsage, zoo.PageFile)
	}
	wrote, err := zoo.Write(zoo.Options{Results: fset.Args(), Out: *out, Publish: *publish}, stdout)
	if err != nil {
		return 0, err
	}
	if wrote != "" {
		fmt.Fprintf(stderr, "fencecheck: wrote %s\n", wrote)
	}
	return exitValid, nil
}

// zooUsage is zoo -h's details.
const zooUsage = `RESULTS is the results directory of a matrix run with --client-dir as an
axis (fencecheck matrix --client-dir builtin,DIR1,DIR2 ..., or merge of its
shards). Writes the zoo's page in Markdown: for each lock client (its name
and version, as the program reported them), server and version, fault and
fencing mode, the verdicts over the cell's seeds, lost updates, fence
rejections, the first lost update, and a link to the report of one invalid
run per client. A fencing mode the client's grants cannot serve (no token)
is said so. Given several RESULTS, a client directory's cells come from the
last matrix that ran it (a client re-run after a fix replaces its earlier
cells, and the page says which matrix each client's rows come from).
With --publish DIR, a copy that stands alone: the page and what it reads
and links, each linked report made again so that its rerun command names
the run by its path in DIR (run from DIR, with --client-dir DIR the
client's directory), never a directory of the machine that ran it. Exit
0, 254 if a RESULTS has no matrix.json or none has a client axis.`
