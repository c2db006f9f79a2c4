package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/trends"
)

// MatrixJUnitFile is the matrix's JUnit XML, at the root of its results
// directory: one test case per cell, red only for a cell that must be valid
// and is not (an unfenced cell's lost updates are its finding, not a
// failure).
const MatrixJUnitFile = "matrix-junit.xml"

// shard is a slice of a matrix's cells: cell i (0-based, in the order the
// matrix lists them) belongs to shard i mod N + 1.
type shard struct{ I, N int }

func (s shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// parseShard reads --shard I/N.
func parseShard(v string) (shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1000 || i < 1 || i > n {
		return shard{}, fmt.Errorf("%w: --shard %q: want I/N with 1 <= I <= N <= 1000 (e.g. 2/4)", errUsage, v)
	}
	return shard{i, n}, nil
}

// has reports whether cell i is the shard's.
func (s shard) has(i int) bool { return i%s.N == s.I-1 }

// cellKey names a cell for merge's consistency check.
func cellKey(c matrixCell) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%d", c.targetWords(), c.workload(), c.Resource, c.Nemesis, c.mode(), c.Seed)
}

// writeMatrixJUnit writes matrix-junit.xml at the root: one suite, one case
// per cell, and one failed case per regression against a baseline.
func writeMatrixJUnit(root string, cells []matrixCell, regressions ...trends.Regression) error {
	type problem struct {
		Type    string `xml:"type,attr"`
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type tcase struct {
		Class   string   `xml:"classname,attr"`
		Name    string   `xml:"name,attr"`
		Time    string   `xml:"time,attr,omitempty"`
		Failure *problem `xml:"failure,omitempty"`
		Error   *problem `xml:"error,omitempty"`
		Out     string   `xml:"system-out,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name `xml:"testsuite"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Cases    []tcase  `xml:"testcase"`
	}
	s := suite{Name: "fencecheck matrix", Tests: len(cells)}
	for _, c := range cells {
		tc := tcase{Class: "fencecheck.matrix." + cmp.Or(c.Label, c.Target), Name: fmt.Sprintf("%s %s %s %s %s seed %d", c.targetWords(), c.workload(), c.Resource, c.Nemesis, c.modeWords(), c.Seed)}
		if d, err := time.ParseDuration(c.Elapsed); err == nil {
			tc.Time = fmt.Sprintf("%.3f", d.Seconds())
		}
		text := fmt.Sprintf("verdict %s, lost %d of %d, fence rejections %d", c.Verdict, c.Lost, c.Acknowledged, c.FenceRejections)
		if c.Run != "" {
			text += "\nrun: " + c.Run
		}
		if c.Error != "" {
			text += "\nerror: " + c.Error
		}
		switch {
		case !c.MustBeValid:
			tc.Out = "not judged (unfenced): " + text
		case c.Verdict == checkers.Valid.String():
		case c.Verdict == checkers.Invalid.String():
			tc.Failure = &problem{Type: "invalid", Message: "a cell that must be valid is invalid", Text: text}
			s.Failures++
		default:
			tc.Error = &problem{Type: c.Verdict, Message: "a cell that must be valid is " + c.Verdict, Text: text}
			s.Errors++
		}
		s.Cases = append(s.Cases, tc)
	}
	for _, r := range regressions {
		s.Tests++
		s.Failures++
		s.Cases = append(s.Cases, tcase{Class: "fencecheck.baseline." + r.Key.Target, Name: "baseline: " + r.Key.String(),
			Failure: &problem{Type: r.Kind, Message: "the cell regressed against the baseline", Text: r.Message}})
	}
	b, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, MatrixJUnitFile), append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

// cmdMerge is `fencecheck merge --results OUT SHARD_DIR...`: the results
// directories of a sharded matrix's shards joined into one: their runs
// copied under OUT, one matrix.json with every cell in the matrix's order,
// one matrix-junit.xml and one index. A cell no shard ran is "not run" and
// counts as unknown. Exit: the merged matrix's code.
func cmdMerge(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fset := newFlags("merge", stderr)
	out := fset.String("results", "./results", "the merged results directory (created; runs already in it are kept)")
	if err := parse(fset, args); err != nil {
		return 0, err
	}
	dirs := fset.Args()
	if len(dirs) == 0 {
		return 0, fmt.Errorf("%w: merge needs the shards' results directories", errUsage)
	}
	merged, err := mergeShards(*out, dirs)
	if err != nil {
		return 0, err
	}
	printMatrix(stdout, merged.Cells, merged.ExitCode)
	root, _ := filepath.Abs(*out)
	fmt.Fprintf(stdout, "  merged   %d shard directories, %d cells\n  summary  %s\n  junit    %s\n  index    %s\n", len(dirs), len(merged.Cells),
		filepath.Join(root, MatrixFile), filepath.Join(root, MatrixJUnitFile), filepath.Join(root, report.IndexFile))
	return merged.ExitCode, nil
}

// mergeShards does merge's work and returns the merged summary. Shards must
// come from the same matrix (the same cells at the same positions).
func mergeShards(out string, dirs []string) (matrixSummary, error) {
	bad := func(format string, a ...any) (matrixSummary, error) {
		return matrixSummary{}, fmt.Errorf("%w: merge: %s", errUsage, fmt.Sprintf(format, a...))
	}
	var merged matrixSummary
	byCell := map[int]matrixCell{}
	total := -1
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, MatrixFile))
		if err != nil {
			return bad("%s: %v (not a matrix's results directory?)", d, err)
		}
		var s matrixSummary
		if err := json.Unmarshal(b, &s); err != nil {
			return bad("%s: %v", filepath.Join(d, MatrixFile), err)
		}
		switch {
		case total == -1:
			total = s.TotalCells
			merged.Started, merged.Strict, merged.Args = s.Started, s.Strict, withoutShard(s.Args)
		case s.TotalCells != total:
			return bad("%s has %d cells in its matrix, an earlier shard %d: not shards of one matrix", d, s.TotalCells, total)
		}
		if s.Started.Before(merged.Started) {
			merged.Started = s.Started
		}
		for _, c := range s.Cells {
			if c.Cell < 0 || c.Cell >= total {
				return bad("%s: cell %d of a matrix of %d", d, c.Cell, total)
			}
			if prev, ok := byCell[c.Cell]; ok {
				if cellKey(prev) != cellKey(c) {
					return bad("cell %d is %s in one shard and %s in %s: not shards of one matrix", c.Cell, cellKey(prev), cellKey(c), d)
				}
				if prev.Verdict != "not run" {
					continue // ran twice: keep the first that ran
				}
			}
			if c.Run != "" {
				if err := copyTree(filepath.Join(d, c.Run), filepath.Join(out, c.Run)); err != nil {
					return matrixSummary{}, fmt.Errorf("%w: merge: %w", harness.ErrHarness, err)
				}
				c.RunDir, _ = filepath.Abs(filepath.Join(out, c.Run))
			}
			byCell[c.Cell] = c
		}
	}
	merged.TotalCells = total
	merged.Shard = fmt.Sprintf("merged from %d shard directories", len(dirs))
	for i := 0; i < total; i++ {
		c, ok := byCell[i]
		if !ok {
			// No shard ran it: unknown, whatever it was.
			c = matrixCell{Cell: i, Verdict: "not run", MustBeValid: true, Error: "no shard directory has this cell"}
		}
		merged.Cells = append(merged.Cells, c)
	}
	merged.ExitCode = matrixExit(merged.Cells, false)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return matrixSummary{}, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := writeMatrix(out, merged); err != nil {
		return matrixSummary{}, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := writeMatrixJUnit(out, merged.Cells); err != nil {
		return matrixSummary{}, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := report.WriteIndex(out); err != nil {
		return matrixSummary{}, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	return merged, nil
}

// withoutShard is a matrix's arguments without --shard and --results.
func withoutShard(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if name != a && (name == "shard" || name == "results") {
			i++ // its value
			continue
		}
		if n, _, ok := strings.Cut(name, "="); ok && name != a && (n == "shard" || n == "results") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// copyTree copies the regular files and directories under src to dst
// (symbolic links are skipped: a run directory has none of its own).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
