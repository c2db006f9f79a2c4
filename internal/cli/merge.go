package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

// cmdMerge is `fencecheck merge --results OUT SHARD_DIR...`: the results
// directories of a sharded matrix's shards joined into one: their runs
// copied under OUT, one matrix.json with every cell in the matrix's order,
// one matrix-junit.xml and one index. A cell no shard ran is "not run" and
// counts as unknown. Exit: the merged matrix's code; 254 for shards that
// are not what matrix writes (see matrix.Merge), a run already in OUT
// included, and for a merge with no cell to judge. With --baseline, the
// merged matrix is compared with a baseline as matrix --baseline does.
// With GITHUB_STEP_SUMMARY set, it appends the job summary there
// (matrix.AppendStepSummary).
func cmdMerge(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fset := verbFlags("merge", stderr, mergeUsage)
	out := fset.String("results", "./results", "the merged results directory (created; runs already in it are kept, and a shard's run that is already there is refused)")
	baselineDir := fset.String("baseline", "", "compare each merged cell with this matrix's results directory, or with the newest night of a root of nights, as matrix --baseline: exit 1 if a cell regressed")
	if err := parseVerb(fset, args); err != nil {
		return 0, err
	}
	dirs := fset.Args()
	if len(dirs) == 0 {
		return 0, fmt.Errorf("%w: merge needs the shards' results directories", errUsage)
	}
	return matrix.MergeShards(*out, dirs, *baselineDir, stdout, stderr)
}

// mergeUsage is merge -h's details.
const mergeUsage = `Each SHARD_DIR is the results directory of one shard of a matrix (fencecheck
matrix --shard I/N --results SHARD_DIR). Their runs are copied into
--results, with one matrix.json, junit.xml and index.html over every cell, as
one matrix run would have written them; with GITHUB_STEP_SUMMARY set, the
job summary too. Exit as the matrix would have: 1 if a fenced cell is
invalid (or, with --baseline, a cell regressed), 2 if one is unknown, 0
otherwise; 254 for a directory that is not a shard of the same matrix.`
