package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

// cmdTrends is `fencecheck trends ROOT` (matrix.Trends).
func cmdTrends(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("trends", stderr, trendsUsage)
	keep := fs.Int("nights", 30, "follow the newest N nights (by their matrix's start)")
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() != 1 {
		return 0, fmt.Errorf("%w: trends needs one ROOT directory", errUsage)
	}
	return matrix.Trends(fs.Arg(0), *keep, stdout)
}

// trendsUsage is trends -h's details.
const trendsUsage = `ROOT holds one matrix results directory per night (fencecheck matrix
--results ROOT/NIGHT, or merge --results ROOT/NIGHT). Writes ROOT/trends.html
(and ROOT/index.html when ROOT holds no runs of its own) and ROOT/trends.json:
each cell's verdict night by night, the detection rate of unfenced cells,
the median time to the first lost update and throughput. A cell regressed if,
against the last earlier night it ran in (skipping unknown verdicts of cells
that must be valid), it must be valid and turned from valid to invalid, or it
is unfenced and stopped losing updates. Exit 1 if a
cell regressed on the newest night, 0 if none did, 254 if ROOT holds no night,
2 if the newest night cannot be judged: its matrix.json cannot be read or
lists no cell that ran, or a night that cannot be read (so has no start to
order it by) has a name that sorts after the newest's.`
