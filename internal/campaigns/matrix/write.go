package matrix

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Print prints one line per cell and the outcome. Its recovery
// column is the cell's median liveness, in seconds and TTLs.
func Print(w io.Writer, cells []trends.MatrixCell, code int) {
	withRes, withReg, withWl := false, false, false
	for _, c := range cells {
		withRes = withRes || c.Resource != tables.Resources[0].Name()
		withReg = withReg || c.WorkloadName() == "register"
		withWl = withWl || c.WorkloadName() != "lock-append"
	}
	target := func(c trends.MatrixCell) string {
		name := TargetWords(c)
		if withWl {
			name += " " + c.WorkloadName()
		}
		if withRes {
			name += " " + c.Resource
		}
		if c.Axes != nil {
			name += " " + c.AxesText()
		}
		// A shard's matrix.json is anybody's file: its names reach the
		// terminal filtered.
		return safetext.Name(name)
	}
	name := safetext.Name
	head := trends.MatrixCell{Target: "target", Workload: "workload", Resource: "resource", Fencing: "fencing"}
	if withReg {
		head.Fencing = "mode"
	}
	width := 16
	for _, c := range cells {
		width = max(width, min(len(target(c)), 64))
	}
	fmt.Fprintf(w, "\n%-*s %-28s %-12s %5s  %-8s %12s %6s %10s %14s\n", width, target(head), "nemesis", head.Fencing, "seed", "verdict", "lost", "fenced", "first lost", "recovery")
	unfenced, lossy, weak := 0, 0, 0
	for _, c := range cells {
		if c.WorkloadName() == "register" {
			verdict := c.Verdict
			if !c.MustBeValid {
				verdict += "*"
				weak++
			}
			fmt.Fprintf(w, "%-*s %-28s %-12s %5d  %-8s %12s %6s %10s %14s\n", width, target(c), name(c.Nemesis), name(c.Mode()), c.Seed, name(verdict), "-", "-", "-", "-")
			continue
		}
		first := "-"
		if c.FirstLostS != nil {
			first = fmt.Sprintf("%.1fs", *c.FirstLostS)
		}
		verdict := c.Verdict
		if !c.MustBeValid {
			verdict += "*"
			unfenced++
			if c.Lost > 0 {
				lossy++
			}
		}
		recovery := "-"
		if c.RecoveryS != nil && c.RecoveryTTLs != nil {
			recovery = fmt.Sprintf("%.1fs %.2fTTL", *c.RecoveryS, *c.RecoveryTTLs)
		}
		fmt.Fprintf(w, "%-*s %-28s %-12s %5d  %-8s %12s %6d %10s %14s\n", width, target(c), name(c.Nemesis), name(c.Fencing), c.Seed, name(verdict),
			fmt.Sprintf("%d/%d", c.Lost, c.Acknowledged), c.FenceRejections, first, recovery)
	}
	if unfenced > 0 {
		fmt.Fprintf(w, "* not judged: unfenced runs show what fencing is for (lost updates in %d of %d)\n", lossy, unfenced)
	}
	if weak > 0 {
		fmt.Fprintf(w, "* not judged: register runs in a read mode the target does not promise linearizable (%d)\n", weak)
	}
	outcome := map[int]string{
		ExitValid:   "PASS  every cell that must be valid is",
		ExitInvalid: "FAIL  a cell that must be valid is invalid: see its report",
		ExitUnknown: "UNKNOWN  a cell that must be valid could not be decided, or the matrix was cut short",
		ExitHarness: "ERROR  the harness failed on a cell (see its error in the summary)",
	}[code]
	fmt.Fprintf(w, "%s\n", outcome)
}

// Write writes matrix.json at the root of the results directory.
func Write(root string, sum trends.Matrix) error {
	b, err := sum.Encode()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, File), b, 0o644)
}

// WriteJUnit writes matrix-junit.xml at the root: one suite, one case
// per cell, and one failed case per regression against a baseline. Every
// case has a time (0 for a cell that did not run), and paths are relative
// to the root (the results directory is an artifact, downloaded
// elsewhere). A cell that must be valid and is invalid fails with its
// first story as the message; an unfenced cell passes, its system-out
// saying what it lost, as expected.
func WriteJUnit(root string, cells []trends.MatrixCell, regressions ...trends.Regression) error {
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
		Skipped *problem `xml:"skipped,omitempty"`
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
		tc := tcase{Class: "fencecheck.matrix." + cmp.Or(c.Label, c.Target), Name: CaseName(c), Time: "0.000"}
		if d, err := time.ParseDuration(c.Elapsed); err == nil && d >= 0 {
			tc.Time = fmt.Sprintf("%.3f", d.Seconds())
		}
		text := caseText(root, c)
		switch {
		case c.Verdict == trends.Refused:
			tc.Skipped = &problem{Type: c.Verdict, Message: report.Clip("the cell's configuration cannot run: "+relative(root, c.Error), maxStory), Text: text}
		case !c.MustBeValid:
			tc.Out = Expected(c) + "\n" + text
		case c.Verdict == checkers.Valid.String():
		case c.Verdict == checkers.Invalid.String():
			tc.Failure = &problem{Type: "invalid", Message: "a cell that must be valid is invalid: " + cmp.Or(c.Story, fmt.Sprintf("lost %d of %d acknowledged updates", c.Lost, c.Acknowledged)), Text: text}
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
		s.Cases = append(s.Cases, tcase{Class: "fencecheck.baseline." + r.Key.Target, Name: "baseline: " + r.Key.String(), Time: "0.000",
			Failure: &problem{Type: r.Kind, Message: "the cell regressed against the baseline", Text: r.Message}})
	}
	b, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	// Through a temporary file renamed into place: never written through
	// a link that stands at its name.
	return trends.ReplaceFile(root, JUnitFile, append([]byte(xml.Header), append(b, '\n')...))
}

// CompareBaseline compares the matrix just written in results with the
// baseline night read from dir (matrix --baseline), prints the outcome,
// records it in matrix.json and matrix-junit.xml (a failed case per
// regression) and returns the matrix's exit code: 1 on a
// regression, unless the harness failed (255 stays).
func CompareBaseline(w io.Writer, results, dir string, baseline trends.Night, sum *trends.Matrix) (int, error) {
	root, err := os.OpenRoot(results)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	now, err := trends.ReadNight(root, ".")
	if err != nil {
		return 0, err
	}
	cmp := trends.Compare(baseline, now)
	cmp.Baseline, _ = filepath.Abs(dir)
	sum.Baseline = &cmp
	code := sum.ExitCode
	if len(cmp.Regressions) > 0 && code != ExitHarness {
		code = ExitInvalid
	}
	sum.ExitCode = code
	if err := Write(results, *sum); err != nil {
		return 0, err
	}
	if err := WriteJUnit(results, sum.Cells, cmp.Regressions...); err != nil {
		return 0, err
	}
	printComparison(w, cmp)
	return code, nil
}

// printComparison prints a comparison with a baseline: one line per
// regression, then the outcome.
func printComparison(w io.Writer, c trends.Comparison) {
	where := c.Baseline
	if c.BaselineNight != "." {
		where = filepath.Join(c.Baseline, c.BaselineNight)
	}
	fmt.Fprintf(w, "\nbaseline %s (started %s): %d cells compared", safetext.Message(where), c.BaselineStarted.UTC().Format("2006-01-02 15:04:05Z"), c.Compared)
	if len(c.New) > 0 || len(c.Missing) > 0 {
		fmt.Fprintf(w, ", %d new, %d not in this matrix", len(c.New), len(c.Missing))
	}
	fmt.Fprintln(w)
	for _, r := range c.Regressions {
		fmt.Fprintf(w, "REGRESSION  %s: %s\n", safetext.Message(r.Key.String()), safetext.Message(r.Message))
	}
	if len(c.Regressions) == 0 {
		fmt.Fprintf(w, "PASS  no cell regressed against the baseline\n")
		return
	}
	fmt.Fprintf(w, "FAIL  %d cells regressed against the baseline\n", len(c.Regressions))
}

// CaseName is a cell's name in the JUnit file and the job summary:
// "redis lock-append lock-store kill fencing token seed 4".
func CaseName(c trends.MatrixCell) string {
	return fmt.Sprintf("%s %s %s %s %s%s seed %d", TargetWords(c), c.WorkloadName(), c.Resource, c.Nemesis, ModeWords(c), AxisWords(c), c.Seed)
}

// Expected says what a cell that is not judged found: an unfenced
// cell's lost updates, as expected, or that it lost none.
func Expected(c trends.MatrixCell) string {
	switch {
	case c.WorkloadName() == "register":
		return fmt.Sprintf("not judged: %s reads, a read mode the target does not promise linearizable (verdict %s)", c.ReadMode, c.Verdict)
	case c.Lost > 0:
		return fmt.Sprintf("lost %d of %d acknowledged updates, as expected: unfenced, the cell shows what fencing is for", c.Lost, c.Acknowledged)
	case c.Verdict == checkers.Invalid.String():
		return "invalid, as an unfenced cell may be (not judged)"
	}
	return fmt.Sprintf("lost none of %d acknowledged updates: unfenced, not judged (verdict %s)", c.Acknowledged, c.Verdict)
}

// ReportPath is the cell's report relative to the results directory
// ("" for a cell without a run).
func ReportPath(c trends.MatrixCell) string {
	if c.Run == "" {
		return ""
	}
	return path.Join(filepath.ToSlash(c.Run), store.ReportFile)
}

// caseText is a case's text: the cell's figures, its report, story and
// error, with paths relative to the results directory root.
func caseText(root string, c trends.MatrixCell) string {
	text := fmt.Sprintf("verdict %s, lost %d of %d, fence rejections %d", c.Verdict, c.Lost, c.Acknowledged, c.FenceRejections)
	if p := ReportPath(c); p != "" {
		text += "\nreport: " + p
	}
	if c.Story != "" {
		text += "\nstory: " + report.Clip(c.Story, maxStory)
	}
	if c.Error != "" {
		text += "\nerror: " + relative(root, c.Error)
	}
	return text
}

// relative is s with the results directory's absolute path (root's) taken
// out of the paths it names.
func relative(root, s string) string {
	abs, err := filepath.Abs(root)
	if err != nil || abs == "/" {
		return s
	}
	s = strings.ReplaceAll(s, abs+string(filepath.Separator), "")
	return strings.ReplaceAll(s, abs, ".")
}
