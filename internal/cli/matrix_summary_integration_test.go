package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

// A 2-shard matrix on real containers, merged as a CI merge job merges it
// (GITHUB_STEP_SUMMARY set): Redis without persistence under a server kill
// (the cell of TestMatrixFailsWhenAFenceFails), unfenced in shard 1 and
// token-fenced in shard 2. The unfenced cell loses updates, as expected;
// the fenced one fails (the restarted server grants tokens again from 1).
// The job summary's rows come failing cell first, with its story (the
// line its report's header tells first) and its report's path; the JUnit
// file passes the unfenced case with its finding in system-out, fails the
// fenced one with its story as the message, and times both.
func TestMatrixMergeSummary(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	args := []string{"matrix", "--target", "redis-nopersist", "--nodes", "1", "--fencing", "none,token", "--nemesis", "kill",
		"--nemesis-interval", "2s", "--time-limit", "20s", "--seed", "7", "--quiet"}
	shards := []string{t.TempDir(), t.TempDir()}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, dir := range shards {
		wg.Go(func() {
			r := runCLI(t, nil, append(args, "--shard", strconv.Itoa(i+1)+"/2", "--results", dir)...)
			t.Logf("shard %d: exit %d in %s\n%s", i+1, r.code, r.elapsed.Round(time.Second), r.stdout)
			codes[i] = r.code
		})
	}
	wg.Wait()
	if codes[0] != exitValid || codes[1] != exitInvalid {
		t.Fatalf("shards exit %v, want [0 1] (the unfenced cell is not judged, the fenced one fails)", codes)
	}
	base := t.TempDir()
	out := filepath.Join(base, "nightly")
	summaryFile := filepath.Join(base, "step-summary.md")
	r := runCLI(t, []string{matrix.StepSummaryEnv + "=" + summaryFile}, "merge", "--results", out, shards[0], shards[1])
	t.Logf("merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != exitInvalid {
		t.Fatalf("merge exit %d, want 1", r.code)
	}
	sum := readMatrix(t, out)
	if len(sum.Cells) != 2 {
		t.Fatalf("merged cells: %+v", sum.Cells)
	}
	none, token := sum.Cells[0], sum.Cells[1]
	if none.Fencing != "none" || none.Lost == 0 || token.Fencing != "token" || token.Verdict != "invalid" {
		t.Fatalf("cells: %+v", sum.Cells)
	}
	// The fenced cell's story is its report's first lead, read again from
	// the merged run: a stale write's (the reused token let it through,
	// or the fence refused it), or, when the reused token lost no update
	// (a loaded machine's run did not), the tokens checker's finding, or an
	// element erased by a write whose outcome the history cannot know, or,
	// told as what it is, the data a kill took from the unpersisted server
	// (issue 51: "kill:one on n1 at 4.67s: the servers lost 7 elements
	// acknowledged before it").
	if token.Story == "" || !regexp.MustCompile(`^(w\d+ |token-monotonic: |Element \d+ of w\d+ was erased by a write of unknown outcome|kill:\S+ on \S+ at [0-9.]+s: the servers lost )`).MatchString(token.Story) || token.Story != matrix.Lead(filepath.Join(out, token.Run)) {
		t.Errorf("fenced cell's story %q; its report's first lead %q", token.Story, matrix.Lead(filepath.Join(out, token.Run)))
	}
	b, err := os.ReadFile(filepath.Join(out, token.Run, "report.html"))
	if told := strings.TrimPrefix(token.Story, "token-monotonic: "); err != nil || !strings.Contains(string(b), strings.ReplaceAll(told, "'", "&#39;")) {
		t.Errorf("the report does not tell %q (%v)", told, err)
	}

	// The job summary: the failing cell, then the expected one.
	md, err := os.ReadFile(summaryFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("job summary:\n%s", md)
	var rows []string
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| | cell") {
			rows = append(rows, l)
		}
	}
	if !strings.HasPrefix(string(md), "### fencecheck merge --results "+out+": FAIL (exit 1)") || len(rows) != 2 {
		t.Fatalf("summary: %d rows", len(rows))
	}
	cols := func(row string) []string {
		var c []string
		for _, f := range strings.Split(strings.Trim(row, "|"), " | ") {
			c = append(c, strings.TrimSpace(f))
		}
		return c
	}
	fail, expected := cols(rows[0]), cols(rows[1])
	if len(fail) != 6 || fail[0] != "**FAIL**" || !strings.Contains(fail[1], "redis-nopersist") || !strings.Contains(fail[1], "fencing token") || fail[2] != "invalid" ||
		fail[3] != strconv.Itoa(token.Lost)+" of "+strconv.Itoa(token.Acknowledged) || fail[5] != "`"+token.Run+"/report.html`" {
		t.Errorf("failing row %q", fail)
	}
	// The story's excerpt, as Markdown escapes it (its parentheses and
	// words stay).
	if excerpt := strings.SplitN(token.Story, ":", 2)[0]; len(fail) < 5 || !strings.HasPrefix(fail[4], excerpt) {
		t.Errorf("failing row's story %q, want it to start %q", fail[4], excerpt)
	}
	if len(expected) != 6 || expected[0] != "expected" || !strings.Contains(expected[1], "fencing none") ||
		!strings.HasPrefix(expected[4], "lost "+strconv.Itoa(none.Lost)+" of "+strconv.Itoa(none.Acknowledged)+" acknowledged updates, as expected") {
		t.Errorf("expected row %q", expected)
	}

	// The JUnit file: both cases timed as their runs took, the unfenced
	// one passing with its finding, the fenced one failing with its story.
	jb, err := os.ReadFile(filepath.Join(out, matrix.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Time    string `xml:"time,attr"`
			Out     string `xml:"system-out"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(jb, &suite); err != nil || suite.Tests != 2 || suite.Failures != 1 || len(suite.Cases) != 2 {
		t.Fatalf("junit: %v\n%s", err, jb)
	}
	for i, c := range suite.Cases {
		secs, err := strconv.ParseFloat(c.Time, 64)
		d, derr := time.ParseDuration(sum.Cells[i].Elapsed)
		if err != nil || derr != nil || secs < 20 || secs > 300 || secs != float64(d.Milliseconds())/1000 {
			t.Errorf("case %d: time %q, the run took %s", i, c.Time, sum.Cells[i].Elapsed)
		}
	}
	if c := suite.Cases[0]; c.Failure != nil || !strings.HasPrefix(c.Out, "lost "+strconv.Itoa(none.Lost)+" of ") || !strings.Contains(c.Out, "as expected") {
		t.Errorf("unfenced case: %+v", c)
	}
	if c := suite.Cases[1]; c.Failure == nil || c.Failure.Message != "a cell that must be valid is invalid: "+token.Story || !strings.Contains(c.Failure.Text, "report: "+token.Run+"/report.html") {
		t.Errorf("fenced case: %+v", c)
	}
	if strings.Contains(string(jb), base) || strings.Contains(string(jb), shards[0]) || strings.Contains(string(jb), shards[1]) {
		t.Errorf("junit names an absolute path:\n%s", jb)
	}
	assertRunsGone(t, shards[0])
	assertRunsGone(t, shards[1])
}
