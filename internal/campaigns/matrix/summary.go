package matrix

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// StepSummaryEnv names the file a GitHub Actions step appends Markdown to,
// shown on the run's page as the job's summary: matrix and merge append
// theirs whenever it is set.
const StepSummaryEnv = "GITHUB_STEP_SUMMARY"

// maxSummaryRows bounds the summary's table, and maxSummaryBytes its
// size (GitHub refuses a step's summary over 1 MiB; matrix and merge may
// both append in one step): the rest are counted, and matrix.json has
// them. maxSummaryCell bounds one cell's text.
const (
	maxSummaryRows  = 500
	maxSummaryBytes = 256 << 10
	maxSummaryCell  = 1 << 10
	// maxSummaryDuplicates bounds the lines on cells found twice.
	maxSummaryDuplicates = 50
)

// DuplicateText says, in one line, which copy of a cell found in more
// than one shard directory merge kept, and which it left out: "cell 1
// (etcd ... seed 2): kept S2/RUN (started T, invalid); left out S1/RUN
// (started T, invalid)". Paths and verdicts come from the shards'
// matrix.json files: the caller escapes the line for where it goes.
func DuplicateText(sum trends.Matrix, d trends.Duplicate) string {
	name := fmt.Sprintf("cell %d", d.Cell)
	if d.Cell >= 0 && d.Cell < len(sum.Cells) && sum.Cells[d.Cell].Target != "" {
		name += " (" + CaseName(sum.Cells[d.Cell]) + ")"
	}
	copyText := func(c trends.CellCopy) string {
		where := c.Shard
		if c.Run != "" {
			where += "/" + c.Run
		}
		return fmt.Sprintf("%s (started %s, %s)", where, c.Started.UTC().Format("2006-01-02 15:04:05.000Z"), c.Verdict)
	}
	var dropped []string
	for _, c := range d.Dropped {
		dropped = append(dropped, copyText(c))
	}
	return fmt.Sprintf("%s: kept the newest, %s; left out %s", name, copyText(d.Kept), strings.Join(dropped, ", "))
}

// Row kinds of the summary, in its order: regressions against a baseline,
// then cells that must be valid and are not, then unfenced cells that lost
// updates as expected, then the rest.
const (
	RowRegression = "REGRESSION"
	RowFail       = "FAIL"
	RowExpected   = "expected"
	RowPass       = "pass"
	RowSkipped    = "skipped"
)

// SummaryRow is one cell in the job summary.
type SummaryRow struct {
	Kind    string // RowRegression, RowFail, ...
	Cell    string // CaseName
	Verdict string
	Lost    string // "3 of 61", "-" for a register cell
	// What says what happened: a failing cell's first story (or why it
	// failed), a regression's message, an unfenced cell's finding.
	What   string
	Report string // relative to the results directory ("" without a run)
}

// SummaryRows are the job summary's rows, in its order (see the Row
// kinds); within a kind, the matrix's order. root is the results
// directory: the paths errors name are made relative to it.
func SummaryRows(root string, sum trends.Matrix) []SummaryRow {
	regressed := map[string]trends.Regression{}
	var regressions []trends.Regression
	if sum.Baseline != nil {
		regressions = sum.Baseline.Regressions
	}
	for _, r := range regressions {
		if r.Now.Run != "" {
			regressed[r.Now.Run] = r
		}
	}
	rank := map[string]int{RowRegression: 0, RowFail: 1, RowExpected: 2, RowPass: 3, RowSkipped: 4}
	var rows []SummaryRow
	for _, c := range sum.Cells {
		// The cell's number ends its name: matrix --cell N re-runs it.
		row := SummaryRow{Cell: fmt.Sprintf("%s (cell %d)", CaseName(c), c.Cell), Verdict: c.Verdict, Lost: fmt.Sprintf("%d of %d", c.Lost, c.Acknowledged), Report: ReportPath(c)}
		if c.WorkloadName() == "register" {
			row.Lost = "-"
		}
		if c.Target == "" {
			row.Cell = fmt.Sprintf("cell %d", c.Cell)
		}
		story := func(or string) string { return report.Clip(cmp.Or(c.Story, or), maxStory) }
		r, isReg := regressed[filepathSlash(c.Run)]
		switch {
		case isReg && c.Run != "":
			row.Kind, row.What = RowRegression, r.Message
			if c.Story != "" {
				row.What += ": " + story("")
			}
		case c.Verdict == trends.Refused:
			row.Kind, row.What = RowSkipped, "the cell's configuration cannot run: "+relative(root, c.Error)
		case !c.MustBeValid:
			row.Kind, row.What = RowPass, Expected(c)
			if c.Lost > 0 || c.Verdict == checkers.Invalid.String() {
				row.Kind = RowExpected
			}
		case c.Verdict == checkers.Valid.String():
			row.Kind = RowPass
		case c.Verdict == checkers.Invalid.String():
			row.Kind, row.What = RowFail, story(fmt.Sprintf("lost %d of %d acknowledged updates", c.Lost, c.Acknowledged))
		default:
			row.Kind, row.What = RowFail, story(cmp.Or(relative(root, c.Error), "the cell must be valid and is "+c.Verdict))
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b SummaryRow) int { return cmp.Compare(rank[a.Kind], rank[b.Kind]) })
	// A regression of a cell that is not in the table (no run) is a row
	// of its own.
	for _, r := range regressions {
		if r.Now.Run == "" {
			rows = slices.Insert(rows, 0, SummaryRow{Kind: RowRegression, Cell: r.Key.String(), Verdict: r.Now.Verdict,
				Lost: fmt.Sprintf("%d of %d", r.Now.Lost, r.Now.Acknowledged), What: r.Message})
		}
	}
	return rows
}

// filepathSlash is a run path with slashes, as trends reads it.
func filepathSlash(p string) string { return strings.Trim(strings.ReplaceAll(p, "\\", "/"), "/") }

// WriteSummary writes the job summary of a matrix in Markdown: a heading
// with the outcome, the counts, and a table of cells and verdicts,
// regressions first, then failing cells (each with its story's first line
// and the path of its report, relative to the results directory), then
// the unfenced cells that lost updates as expected, then the rest. what
// names the command and its results directory ("merge --results
// nightly"); root is the results directory.
func WriteSummary(w io.Writer, what, root string, sum trends.Matrix) error {
	rows := SummaryRows(root, sum)
	count := map[string]int{}
	for _, r := range rows {
		count[r.Kind]++
	}
	outcome := map[int]string{
		ExitValid:   "PASS",
		ExitInvalid: "FAIL",
		ExitUnknown: "UNKNOWN",
		ExitHarness: "ERROR",
		ExitBadArgs: "REFUSED",
	}[sum.ExitCode]
	var b strings.Builder
	fmt.Fprintf(&b, "### fencecheck %s: %s (exit %d)\n\n", markdown(what), cmp.Or(outcome, "exit"), sum.ExitCode)
	fmt.Fprintf(&b, "%d cells: %d regressed, %d failed, %d lost updates as expected (unfenced), %d passed, %d skipped. Reports are relative to the results directory.\n\n",
		len(rows), count[RowRegression], count[RowFail], count[RowExpected], count[RowPass], count[RowSkipped])
	if n := len(sum.Duplicates); n > 0 {
		fmt.Fprintf(&b, "%d cells were in more than one shard directory (a re-run's results beside an earlier attempt's): each kept its newest run.\n\n", n)
		for i, d := range sum.Duplicates {
			if i == maxSummaryDuplicates {
				fmt.Fprintf(&b, "- and %d more: matrix.json's duplicates has them all\n", n-i)
				break
			}
			fmt.Fprintf(&b, "- %s\n", markdown(DuplicateText(sum, d)))
		}
		b.WriteString("\n")
	}
	b.WriteString("| | cell | verdict | lost | what happened | report |\n|---|---|---|---|---|---|\n")
	for i, r := range rows {
		kind := r.Kind
		if kind == RowRegression || kind == RowFail {
			kind = "**" + kind + "**"
		}
		rep := ""
		if r.Report != "" {
			rep = "`" + codeEscaper.Replace(safetext.Text(r.Report, maxSummaryCell)) + "`"
		}
		line := fmt.Sprintf("| %s | %s | %s | %s | %s | %s |\n", kind, markdown(r.Cell), markdown(r.Verdict), markdown(r.Lost), markdown(r.What), rep)
		if i == maxSummaryRows || b.Len()+len(line) > maxSummaryBytes {
			fmt.Fprintf(&b, "\nThe summary is cut here, at %d of %d cells (at most %d rows, %d KiB): %d more cells, matrix.json has them all.\n",
				i, len(rows), maxSummaryRows, maxSummaryBytes>>10, len(rows)-i)
			break
		}
		b.WriteString(line)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownEscaper makes text from matrix.json (a shard's is input from
// elsewhere) one table cell of plain text: no line break, no column
// break, no markup, no HTML.
var markdownEscaper = strings.NewReplacer(
	"\r", " ", "\n", " ", "|", `\|`, "\\", `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "#", `\#`, "!", `\!`, "~", `\~`,
)

// autolink neutralises what GitHub's Markdown would make a link of
// without any markup (a bare URL, www., an e-mail address): its ':',
// '.' or '@' as a character reference, which renders as itself.
var autolink = strings.NewReplacer("://", "&#58;//", "www.", "www&#46;", "WWW.", "WWW&#46;", "@", "&#64;")

// markdown is text from matrix.json fit for one table cell: filtered and
// cut (safetext: no control or bidi character, no NUL or ESC), then
// escaped, with no bare link.
func markdown(s string) string {
	return autolink.Replace(markdownEscaper.Replace(safetext.Text(s, maxSummaryCell)))
}

// codeEscaper makes a path one code span of a table cell (no escape
// works inside a code span but a table's \|).
var codeEscaper = strings.NewReplacer("`", "", "\r", " ", "\n", " ", "|", `\|`)

// AppendStepSummary appends the matrix's job summary (WriteSummary) to
// the file GITHUB_STEP_SUMMARY names, when it is set (on GitHub Actions);
// it does nothing otherwise.
func AppendStepSummary(what, root string, sum trends.Matrix) error {
	name := os.Getenv(StepSummaryEnv)
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", StepSummaryEnv, err)
	}
	werr := WriteSummary(f, what, root, sum)
	if err := cmp.Or(werr, f.Close()); err != nil {
		return fmt.Errorf("%s: %w", StepSummaryEnv, err)
	}
	return nil
}

// AnnotationsEnv is set to "true" on GitHub Actions, whose runner reads
// workflow commands (::error ...) from a step's output.
const AnnotationsEnv = "GITHUB_ACTIONS"

// maxAnnotations bounds the annotations printed (GitHub shows 10 errors
// a step; the summary and matrix.json have every cell).
const maxAnnotations = 10

// WriteAnnotations writes a GitHub Actions error annotation for each
// regression and each cell that must be valid and is not (SummaryRows'
// REGRESSION and FAIL rows), at most maxAnnotations: the cell as its
// title, its story (or why it failed) as its message, its report as its
// file (relative to dir, the step's working directory). Text from
// matrix.json is filtered (safetext) and escaped as the runner's toolkit
// escapes a command's data and properties, so that it stays one command
// of one line.
func WriteAnnotations(w io.Writer, dir, root string, sum trends.Matrix) error {
	var b strings.Builder
	n := 0
	for _, r := range SummaryRows(root, sum) {
		if r.Kind != RowRegression && r.Kind != RowFail {
			continue
		}
		if n == maxAnnotations {
			fmt.Fprintf(&b, "::error title=fencecheck::%s\n", annotationData("more cells failed: see the job summary and matrix.json"))
			break
		}
		n++
		props := "title=" + annotationProperty("fencecheck "+r.Kind+": "+safetext.Text(r.Cell, maxSummaryCell))
		if r.Report != "" {
			p := filepath.Join(root, filepath.FromSlash(r.Report))
			if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
				p = rel
			}
			props = "file=" + annotationProperty(safetext.Text(filepath.ToSlash(p), maxSummaryCell)) + "," + props
		}
		fmt.Fprintf(&b, "::error %s::%s\n", props, annotationData(safetext.Text(r.What, maxSummaryCell)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// annotationData escapes a workflow command's message; annotationProperty
// a property's value (as @actions/core's escapeData and escapeProperty).
func annotationData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func annotationProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// AppendAnnotations writes the annotations (WriteAnnotations) to w when
// GITHUB_ACTIONS is "true", relative to the working directory.
func AppendAnnotations(w io.Writer, root string, sum trends.Matrix) error {
	if os.Getenv(AnnotationsEnv) != "true" {
		return nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	return WriteAnnotations(w, dir, root, sum)
}
