package matrix

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/safetext"
	"github.com/fencecheck/fencecheck/internal/trends"
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
