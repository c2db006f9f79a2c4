package matrix

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
)

// MergeShards is `fencecheck merge --results OUT SHARD_DIR...`: Merge of
// dirs into out, printed on stdout; with baselineDir (not ""), each merged
// cell compared with that baseline as matrix --baseline does; with
// GITHUB_STEP_SUMMARY set, the job summary appended there
// (AppendStepSummary), and with GITHUB_ACTIONS=true an error annotation
// for each failing cell on stdout (AppendAnnotations). It returns the merged matrix's exit code; shards
// that are not what matrix writes, a bad baseline or a merge with no cell
// to judge are errors that wrap cmdline.ErrUsage.
func MergeShards(out string, dirs []string, baselineDir string, stdout, stderr io.Writer) (int, error) {
	var baseline *trends.Night
	if baselineDir != "" {
		b, err := trends.Baseline(baselineDir)
		if err != nil {
			return 0, fmt.Errorf("%w: --baseline: %w", cmdline.ErrUsage, err)
		}
		baseline = &b
	}
	merged, err := Merge(out, dirs, stderr)
	if err != nil {
		return 0, err
	}
	Print(stdout, merged.Cells, merged.ExitCode)
	root, _ := filepath.Abs(out)
	if baseline != nil {
		if merged.ExitCode, err = CompareBaseline(stdout, root, baselineDir, *baseline, &merged); err != nil {
			return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
	}
	if err := AppendStepSummary("merge --results "+out, root, merged); err != nil {
		fmt.Fprintf(stderr, "fencecheck: job summary not written: %v\n", err)
	}
	if err := AppendAnnotations(stdout, root, merged); err != nil {
		fmt.Fprintf(stderr, "fencecheck: annotations not written: %v\n", err)
	}
	fmt.Fprintf(stdout, "  merged   %d shard directories, %d cells", len(dirs), len(merged.Cells))
	if n := len(merged.Duplicates); n > 0 {
		fmt.Fprintf(stdout, " (%d of them in more than one shard directory: the newest run of each kept)", n)
	}
	fmt.Fprintln(stdout)
	for _, d := range merged.Duplicates {
		fmt.Fprintf(stdout, "  re-run   %s\n", safetext.Message(DuplicateText(merged, d)))
	}
	fmt.Fprintf(stdout, "  summary  %s\n  junit    %s\n  index    %s\n",
		filepath.Join(root, File), filepath.Join(root, JUnitFile), filepath.Join(root, report.IndexFile))
	return merged.ExitCode, nil
}
