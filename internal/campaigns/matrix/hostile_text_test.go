package matrix

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// hostile is a name a shard's matrix.json (or a run's files) may hold:
// a title-setting and a line-erasing escape, a carriage return, a line
// that GitHub Actions runs as a workflow command, a bidi override, and
// more bytes than a name is shown with.
var hostile = "etcd\x1b]0;owned\a\r\x1b[2K\n::error::forged\u202e" + strings.Repeat("x", 5000)

// What merge and matrix print of a shard's cells (their target, nemesis,
// fencing and verdict), of a baseline's regressions and of the files a
// run's copy leaves out reaches the terminal and the CI log through
// safetext: no escape, no line break, no workflow command, each value cut
// (issue 48, item 4).
func TestPrintFiltersShardText(t *testing.T) {
	c := cell(0, "token", "invalid")
	c.Target, c.Nemesis, c.Fencing, c.Verdict = hostile, hostile, hostile, hostile
	reg := cell(1, "register", "valid")
	reg.Workload, reg.Nemesis = "register", "\n::warning::x"
	var out bytes.Buffer
	Print(&out, []trends.MatrixCell{c, reg}, ExitInvalid)
	printComparison(&out, trends.Comparison{Baseline: "b\x1b[2J", BaselineNight: ".", Compared: 1,
		Regressions: []trends.Regression{{Key: c.ID(), Message: "was valid\n::error::now " + hostile}}})
	if err := safetext.Check(out.String()); err != nil {
		t.Errorf("printed: %v\n%q", err, out.String())
	}
	if strings.Contains(out.String(), strings.Repeat("x", safetext.MaxMessage)) {
		t.Errorf("a name is printed uncut:\n%q", out.String())
	}

	// merge's "not copied": a link in a shard's run, named by whoever
	// wrote the shard.
	sh := writeShard(t, "1/1", 1, cell(0, "token", "valid"))
	if err := os.Symlink("/", filepath.Join(sh, "etcd-token", stampN(0), "x\x1b]0;owned\a\n::error::forged")); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	if _, err := Merge(filepath.Join(t.TempDir(), "merged"), []string{sh}, &warn); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn.String(), "not copied") {
		t.Fatalf("merge warned of no link: %q", warn.String())
	}
	if err := safetext.Check(warn.String()); err != nil {
		t.Errorf("merge's warning: %v", err)
	}
}

// The job summary is bounded and filtered (issue 48, item 6): a shard's
// matrix.json of 6 MB once gave a 6 MB GITHUB_STEP_SUMMARY (GitHub
// refuses one over 1 MiB); the summary says where it is cut. Bare URLs,
// U+202E, NUL and ESC from a shard's text do not reach it.
func TestStepSummaryBoundedAndFiltered(t *testing.T) {
	root := t.TempDir()
	var cells []trends.MatrixCell
	long := strings.Repeat("t", 64<<10)
	for i := range 400 {
		c := cell(i, "token", "refused")
		c.Target, c.Run, c.Error = long, "", long
		cells = append(cells, c)
	}
	evil := cell(6, "token", "invalid")
	evil.Story = "see https://evil.example/x or www.evil.example, mail a@evil.example \u202eexe.txt \x00 \x1b]0;owned\a ::error::x"
	cells = append([]trends.MatrixCell{evil}, cells...)
	var out strings.Builder
	if err := WriteSummary(&out, "merge --results nightly", root, trends.Matrix{Cells: cells, ExitCode: ExitInvalid}); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	if len(md) > 1<<20 || !strings.Contains(md, "The summary is cut here") {
		t.Errorf("summary of %d bytes, cut note %v: want at most 1 MiB, saying it is cut", len(md), strings.Contains(md, "cut here"))
	}
	for _, bad := range []string{"https://", "www.evil", "a@evil", "\u202e", "\x00", "\x1b"} {
		if strings.Contains(md, bad) {
			t.Errorf("summary holds %q", bad)
		}
	}
	if err := safetext.Check(md); err != nil {
		t.Errorf("summary: %v", err)
	}
}

// What trends prints of the nights' cells, regressions and directories
// reaches the terminal through safetext (issue 48, item 4).
func TestPrintTrendsFiltered(t *testing.T) {
	key := trends.Key{Target: hostile, Resource: hostile, Nemesis: hostile, Fencing: hostile}
	var out bytes.Buffer
	printTrends(&out, trends.Summary{
		Nights:      []trends.NightInfo{{Dir: "\n::error::night"}, {Dir: hostile, Err: hostile}},
		Cells:       []trends.Trend{{Key: key}},
		Regressions: []trends.Regression{{Key: key, Message: hostile, WasDir: hostile, NowDir: hostile}},
		Unjudged:    hostile,
	})
	if err := safetext.Check(out.String()); err != nil {
		t.Errorf("trends: %v", err)
	}
	if strings.Contains(out.String(), strings.Repeat("x", safetext.MaxMessage)) {
		t.Errorf("trends prints a value uncut")
	}
}
