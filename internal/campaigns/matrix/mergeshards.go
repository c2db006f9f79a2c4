package matrix

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
)

// MergeShards is `fencecheck merge --results OUT SHARD_DIR...`: Merge of
// dirs into out, printed on stdout; with baselineDir (not ""), each merged
// cell compared with that baseline as matrix --baseline does; with
// GITHUB_STEP_SUMMARY set, the job summary appended there
// (AppendStepSummary). It returns the merged matrix's exit code; shards
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
	fmt.Fprintf(stdout, "  merged   %d shard directories, %d cells\n  summary  %s\n  junit    %s\n  index    %s\n", len(dirs), len(merged.Cells),
		filepath.Join(root, File), filepath.Join(root, JUnitFile), filepath.Join(root, report.IndexFile))
	return merged.ExitCode, nil
}
