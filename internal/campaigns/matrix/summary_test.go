package matrix

import (
	"compress/gzip"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// junitCase is what the tests read of a case of matrix-junit.xml.
type junitCase struct {
	Name    string `xml:"name,attr"`
	Time    string `xml:"time,attr"`
	Out     string `xml:"system-out"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

type junitSuite struct {
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

func readJUnit(t *testing.T, dir string) junitSuite {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var s junitSuite
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", JUnitFile, err)
	}
	return s
}

const story = "Process 5 (token 1) wrote its stale list at 30.55s: element 2 of process 0 (token 4) lost."

// syntheticCells are a matrix's cells: an unfenced cell that lost updates
// as expected, a fenced cell that failed with its story, a valid fenced
// cell, a cell the harness failed on, and a refused one.
func syntheticCells(root string) []trends.MatrixCell {
	unfenced := cell(0, "none", "invalid")
	unfenced.Lost, unfenced.Acknowledged, unfenced.Elapsed, unfenced.Story = 31, 51, "33.2s", "Process 2 (token 8) wrote its stale list at 14.1s: element 9 of process 1 (token 9) lost."
	failed := cell(1, "token", "invalid")
	failed.Target, failed.Nemesis, failed.Lost, failed.Acknowledged, failed.Elapsed, failed.Story = "redis-nopersist", "kill", 55, 59, "41.25s", story
	valid := cell(2, "cas", "valid")
	valid.Acknowledged, valid.Elapsed = 40, "30s"
	broken := cell(3, "token", "error")
	broken.Run, broken.Error = "", "cluster never became ready: see "+filepath.Join(root, "etcd-token", "logs")
	refused := cell(4, "token", "refused")
	refused.Run, refused.Error = "", "the client program's leases carry no fencing token"
	return []trends.MatrixCell{unfenced, failed, valid, broken, refused}
}

// matrix-junit.xml: an unfenced cell that lost updates passes, saying so;
// a failing fenced cell's message is its story; every case has a time;
// no path is the results directory's absolute one.
func TestJUnitCases(t *testing.T) {
	root := t.TempDir()
	cells := syntheticCells(root)
	reg := trends.Regression{Key: cells[1].ID(), Kind: trends.FenceFailed, Message: "must be valid: was valid, now invalid (lost 55 of 59)"}
	if err := WriteJUnit(root, cells, reg); err != nil {
		t.Fatal(err)
	}
	s := readJUnit(t, root)
	if s.Tests != 6 || s.Failures != 2 || s.Errors != 1 || len(s.Cases) != 6 {
		t.Fatalf("suite: %d tests, %d failures, %d errors, %d cases", s.Tests, s.Failures, s.Errors, len(s.Cases))
	}
	wantTimes := []string{"33.200", "41.250", "30.000", "0.000", "0.000", "0.000"}
	for i, c := range s.Cases {
		if c.Time != wantTimes[i] {
			t.Errorf("case %d (%s): time %q, want %q", i, c.Name, c.Time, wantTimes[i])
		}
	}
	if c := s.Cases[0]; c.Failure != nil || c.Error != nil || !strings.HasPrefix(c.Out, "lost 31 of 51 acknowledged updates, as expected: unfenced") ||
		!strings.Contains(c.Out, "report: etcd-none/"+stampN(0)+"/report.html") {
		t.Errorf("unfenced cell: %+v", c)
	}
	if c := s.Cases[1]; c.Failure == nil || c.Failure.Message != "a cell that must be valid is invalid: "+story ||
		!strings.Contains(c.Failure.Text, "story: "+story) || !strings.Contains(c.Failure.Text, "report: etcd-token/"+stampN(1)+"/report.html") {
		t.Errorf("failing fenced cell: %+v", c)
	}
	if c := s.Cases[1]; c.Name != "redis-nopersist lock-append lock-store kill fencing token seed 1" {
		t.Errorf("case name %q", c.Name)
	}
	if c := s.Cases[2]; c.Failure != nil || c.Error != nil || c.Out != "" {
		t.Errorf("valid cell: %+v", c)
	}
	if c := s.Cases[4]; c.Skipped == nil {
		t.Errorf("refused cell: %+v", c)
	}
	b, _ := os.ReadFile(filepath.Join(root, JUnitFile))
	if strings.Contains(string(b), root) {
		t.Errorf("%s names the results directory %s:\n%s", JUnitFile, root, b)
	}
	if !strings.Contains(string(b), "cluster never became ready: see etcd-token/logs") {
		t.Errorf("the error's path is not relative to the results directory:\n%s", b)
	}
}

// The job summary: a Markdown table, regressions first, then the failing
// cells with their story and report, then the expected ones, then the
// rest; appended to GITHUB_STEP_SUMMARY when it is set.
func TestStepSummary(t *testing.T) {
	root := t.TempDir()
	cells := syntheticCells(root)
	sum := trends.Matrix{Cells: cells, ExitCode: Exit(cells, false)}
	rows := SummaryRows(root, sum)
	var kinds []string
	for _, r := range rows {
		kinds = append(kinds, r.Kind)
	}
	if want := []string{RowFail, RowFail, RowExpected, RowPass, RowSkipped}; !slices.Equal(kinds, want) {
		t.Fatalf("rows %v, want %v", kinds, want)
	}
	if r := rows[0]; r.What != story || r.Report != "etcd-token/"+stampN(1)+"/report.html" || r.Lost != "55 of 59" {
		t.Errorf("failing row: %+v", r)
	}
	if r := rows[1]; r.What != "cluster never became ready: see etcd-token/logs" || r.Report != "" {
		t.Errorf("harness error row: %+v", r)
	}

	// With a baseline's regression, the regressed cell comes first.
	sum.Baseline = &trends.Comparison{Regressions: []trends.Regression{{Key: cells[1].ID(), Kind: trends.FenceFailed,
		Now: trends.Cell{Run: cells[1].Run, Verdict: "invalid"}, Message: "must be valid: was valid, now invalid (lost 55 of 59)"}}}
	rows = SummaryRows(root, sum)
	if r := rows[0]; r.Kind != RowRegression || r.What != "must be valid: was valid, now invalid (lost 55 of 59): "+story || len(rows) != 5 {
		t.Errorf("regression row: %+v (%d rows)", r, len(rows))
	}

	file := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv(StepSummaryEnv, file)
	os.WriteFile(file, []byte("earlier step\n"), 0o644)
	if err := AppendStepSummary("merge --results nightly", root, sum); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	md := string(b)
	lines := strings.Split(md, "\n")
	if lines[0] != "earlier step" || lines[1] != "### fencecheck merge --results nightly: ERROR (exit 255)" {
		t.Errorf("summary's start:\n%s", md)
	}
	want := "| **REGRESSION** | redis-nopersist lock-append lock-store kill fencing token seed 1 (cell 1) | invalid | 55 of 59 | must be valid: was valid, now invalid (lost 55 of 59): Process 5 (token 1) wrote its stale list at 30.55s: element 2 of process 0 (token 4) lost. | `etcd-token/" + stampN(1) + "/report.html` |"
	if !strings.Contains(md, want) {
		t.Errorf("no row\n%s\nin\n%s", want, md)
	}
	if !strings.Contains(md, "| expected | etcd lock-append lock-store pause-holder fencing none seed 1 (cell 0) | invalid | 31 of 51 | lost 31 of 51 acknowledged updates, as expected: unfenced, the cell shows what fencing is for |") {
		t.Errorf("no expected row in\n%s", md)
	}
	if strings.Contains(md, root) {
		t.Errorf("the summary names %s:\n%s", root, md)
	}

	// Text from a shard's matrix.json stays plain text in one cell.
	evil := cells[1]
	evil.Story = "a | b\n| c <img src=x> [x](javascript:alert(1)) `code`"
	var out strings.Builder
	if err := WriteSummary(&out, "matrix", root, trends.Matrix{Cells: []trends.MatrixCell{evil}, ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	row := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := row[len(row)-1]
	if strings.Contains(last, "<img") || !strings.Contains(last, `\[x\](`) || strings.Count(last, " | ") != 5 {
		t.Errorf("unescaped row: %s", last)
	}

	// Without GITHUB_STEP_SUMMARY nothing is written.
	t.Setenv(StepSummaryEnv, "")
	if err := AppendStepSummary("merge", root, sum); err != nil {
		t.Fatal(err)
	}
}

// Lead reads a stored run's first story: the one its report's header
// tells first.
func TestLeadOfStoredRun(t *testing.T) {
	src := filepath.Join("..", "..", "cli", "testdata", "runs", "redis-nopersist-token-kill")
	dir := filepath.Join(t.TempDir(), "redis-nopersist", "20261201T000000.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile := func(from, to string, gz bool) {
		t.Helper()
		f, err := os.Open(from)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var r io.Reader = f
		if gz {
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(to, b, 0o644)
	}
	copyFile(filepath.Join(src, "test.json"), filepath.Join(dir, "test.json"), false)
	copyFile(filepath.Join(src, "history.jsonl.gz"), filepath.Join(dir, "history.jsonl"), true)
	copyFile(filepath.Join(src, "golden", "results.json.gz"), filepath.Join(dir, "results.json"), true)
	// The run's losses are the servers': each kill:one of the
	// unpersisted Redis took the data acknowledged before it (issue 51),
	// and the first story the report tells is the first kill's.
	want := "kill:one on n1 at 3.32s: the servers lost 11 elements acknowledged before it (1, 6, 7, 2, 5, 10 and 5 more)."
	if got := Lead(dir); got != want {
		t.Errorf("Lead: %q\nwant %q", got, want)
	}
	if got := Lead(t.TempDir()); got != "" {
		t.Errorf("Lead of no run: %q", got)
	}
}

// On GitHub Actions, each cell that must be valid and is not is an error
// annotation: its report as the file (relative to the working directory),
// the cell as the title, its story as the message; one line each, whatever
// the story holds; nothing for the others, nothing off GitHub.
func TestAnnotations(t *testing.T) {
	root := t.TempDir()
	cells := syntheticCells(root)
	cells[1].Story = "stale write\n::error::planted, 100%\r: x"
	sum := trends.Matrix{Cells: cells, ExitCode: ExitInvalid}
	var b strings.Builder
	if err := WriteAnnotations(&b, filepath.Dir(root), root, sum); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	// The failed fenced cell and the cell the harness failed on.
	if len(lines) != 2 || strings.ContainsAny(b.String(), "\r") {
		t.Fatalf("annotations:\n%s", b.String())
	}
	want := "::error file=" + filepath.Base(root) + "/" + cells[1].Run + "/report.html,title=fencecheck FAIL%3A redis-nopersist lock-append lock-store kill fencing token seed 1 (cell 1)::stale write"
	if !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], "100%25") {
		t.Errorf("first annotation:\n%s\nwant it to start\n%s", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "::error title=fencecheck FAIL%3A ") || !strings.Contains(lines[1], "cluster never became ready") {
		t.Errorf("second annotation (no report: no file):\n%s", lines[1])
	}
	var off strings.Builder
	t.Setenv(AnnotationsEnv, "")
	if AppendAnnotations(&off, root, sum); off.Len() != 0 {
		t.Errorf("off GitHub: %q", off.String())
	}
	t.Setenv(AnnotationsEnv, "true")
	if AppendAnnotations(&off, root, sum); strings.Count(off.String(), "::error ") != 2 {
		t.Errorf("on GitHub: %q", off.String())
	}
}
