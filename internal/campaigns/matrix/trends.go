package matrix

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
)

// Trends is `fencecheck trends ROOT`: ROOT is a root of nights (each
// subdirectory a matrix's results directory), keep the newest nights to
// follow. It writes ROOT/trends.html and ROOT/trends.json (and
// ROOT/index.html, the same page, when ROOT holds no runs of its own),
// prints each cell's strip and the newest night's regressions, and returns
// 1 if there is one, 0 if not, and 2 (unknown) if the newest night cannot
// be judged (trends.Unjudged: its matrix.json cannot be read or lists no
// cell that ran, or a night that cannot be read has a name after the
// newest's), naming that night; the pages are written all the same. A
// ROOT that holds no night, or keep out of 1 to trends.MaxScan, is an
// error that wraps cmdline.ErrUsage.
func Trends(root string, keep int, stdout io.Writer) (int, error) {
	if keep < 1 || keep > trends.MaxScan {
		return 0, fmt.Errorf("%w: --nights %d: between 1 and %d", cmdline.ErrUsage, keep, trends.MaxScan)
	}
	nights, err := trends.Scan(root, 0) // all: whether the newest can be judged depends on them all
	if err != nil {
		if _, serr := os.Stat(filepath.Join(root, trends.MatrixFile)); serr == nil {
			err = fmt.Errorf("%w (%s is one night: give the directory that holds the nights)", err, root)
		}
		return 0, fmt.Errorf("%w: %s: %w", cmdline.ErrUsage, root, err)
	}
	unjudged := trends.Unjudged(nights)
	if len(nights) > keep {
		nights = nights[len(nights)-keep:]
	}
	s := trends.Summarize(nights)
	if unjudged != nil {
		s.Unjudged = unjudged.Error()
	}
	runs, err := report.ScanRuns(root)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := errors.Join(trends.WriteJSON(root, s), report.WriteTrends(root, s, len(runs) == 0)); err != nil {
		return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	printTrends(stdout, s)
	abs, _ := filepath.Abs(root)
	fmt.Fprintf(stdout, "  trends   %s\n  summary  %s\n", filepath.Join(abs, report.TrendsFile), filepath.Join(abs, trends.JSONFile))
	switch {
	case s.Unjudged != "":
		return ExitUnknown, nil
	case len(s.Regressions) > 0:
		return ExitInvalid, nil
	}
	return ExitValid, nil
}

// printTrends prints the nights, one line per cell, the newest night's
// regressions and the outcome: UNKNOWN (naming the night) when the newest
// night cannot be judged, else FAIL or PASS.
func printTrends(w io.Writer, s trends.Summary) {
	fmt.Fprintf(w, "%d nights, oldest first:", len(s.Nights))
	for _, n := range s.Nights {
		fmt.Fprintf(w, " %s", safetext.Name(n.Dir))
		if n.Err != "" {
			fmt.Fprintf(w, " (unreadable)")
		}
	}
	// A cell's target, with its workload but lock-append's; the column
	// as wide as the widest (up to 40).
	// A cell's target, with its workload (but lock-append's) and its axes.
	target := func(k trends.Key) string {
		return safetext.Name(strings.Join(strings.Fields(k.Target+" "+k.Workload+" "+k.Axes), " "))
	}
	width := 16
	for _, c := range s.Cells {
		width = max(width, min(len(target(c.Key)), 40))
	}
	fmt.Fprintf(w, "\n\n%-*s %-12s %-24s %-7s %3s  %-12s %12s %10s %6s\n", width, "target", "resource", "nemesis", "fencing", "run", "nights", "detection", "first lost", "ops/s")
	for _, c := range s.Cells {
		detection, first, ops := "-", "-", "-"
		if c.DetectionRate != nil {
			detection = fmt.Sprintf("%d/%d", *c.Detected, c.Runs)
		}
		if c.MedianFirstLostS != nil {
			first = fmt.Sprintf("%.1fs", *c.MedianFirstLostS)
		}
		if c.MedianOpsPerS != nil {
			ops = fmt.Sprintf("%.1f", *c.MedianOpsPerS)
		}
		fmt.Fprintf(w, "%-*s %-12s %-24s %-7s %3d  %-12s %12s %10s %6s\n", width, target(c.Key), safetext.Name(c.Key.Resource), safetext.Name(c.Key.Nemesis), safetext.Name(c.Key.Fencing), c.Key.Run,
			c.StripText(), detection, first, ops)
	}
	fmt.Fprintf(w, "nights: V valid, I invalid, U unknown, E error, - not run; ! a regression\n")
	for _, r := range s.Regressions {
		fmt.Fprintf(w, "REGRESSION  %s: %s (%s -> %s)\n", safetext.Message(r.Key.String()), safetext.Message(r.Message), safetext.Name(r.WasDir), safetext.Name(r.NowDir))
	}
	if s.Unjudged != "" {
		fmt.Fprintf(w, "UNKNOWN  %s\n", safetext.Message(s.Unjudged))
		return
	}
	if len(s.Regressions) == 0 {
		fmt.Fprintf(w, "PASS  no cell regressed on the newest night\n")
		return
	}
	fmt.Fprintf(w, "FAIL  %d cells regressed on the newest night\n", len(s.Regressions))
}
