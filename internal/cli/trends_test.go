package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/report"
)

// writeNight writes a night's matrix.json (as matrix writes it) under
// root/name.
func writeNight(t testing.TB, root, name string, started time.Time, cells ...trends.MatrixCell) string {
	t.Helper()
	dir := filepath.Join(root, name)
	for i := range cells {
		cells[i].Cell = i
	}
	if err := matrix.Write(dir, trends.Matrix{Started: started, Cells: cells, TotalCells: len(cells), ExitCode: matrix.Exit(cells, false)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func nightCell(target, fencing, verdict string, lost int) trends.MatrixCell {
	ok, secs := 40, 15.0
	c := trends.MatrixCell{Target: target, Resource: "lock-store", Nemesis: "pause-holder,kill", Fencing: fencing, Seed: 1,
		Verdict: verdict, MustBeValid: fencing != "none", Acknowledged: 40, Lost: lost, OpsOK: &ok, ClientS: &secs}
	if lost > 0 {
		first := 6.0
		c.FirstLostS = &first
	}
	return c
}

// fencecheck trends on a root of three nights, the third with a fenced
// cell that turned invalid: exit 1, the regression printed and in
// trends.json, trends.html and index.html written; without the third
// night, exit 0; a root without nights, 254.
func TestTrendsCommand(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC)
	writeNight(t, root, "2026-12-01", t0, nightCell("redis", "none", "invalid", 2), nightCell("redis", "token", "valid", 0))
	writeNight(t, root, "2026-12-02", t0.Add(24*time.Hour), nightCell("redis", "none", "invalid", 1), nightCell("redis", "token", "valid", 0))
	bad := nightCell("redis-nopersist", "token", "invalid", 0)
	bad.Label = "redis"
	writeNight(t, root, "2026-12-03", t0.Add(48*time.Hour), nightCell("redis", "none", "invalid", 3), bad)

	var out, errb bytes.Buffer
	code := run([]string{"trends", root}, &out, &errb)
	t.Logf("trends: exit %d\n%s%s", code, out.String(), errb.String())
	if code != exitInvalid {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"REGRESSION  redis lock-store pause-holder,kill token #1: must be valid: was valid, now invalid", "(2026-12-02 -> 2026-12-03)", "VVI!", "3/3", "FAIL  1 cells"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	var s trends.Summary
	b, err := os.ReadFile(filepath.Join(root, trends.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Nights) != 3 || len(s.Cells) != 2 || len(s.Regressions) != 1 || s.Regressions[0].Now.Ran != "redis-nopersist" {
		t.Errorf("trends.json: %d nights, %d cells, regressions %+v", len(s.Nights), len(s.Cells), s.Regressions)
	}
	page, err := os.ReadFile(filepath.Join(root, report.TrendsFile))
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(root, report.IndexFile))
	if err != nil || !bytes.Equal(index, page) {
		t.Errorf("index.html is not the trends page: %v", err)
	}

	// The first two nights alone: no regression.
	two := t.TempDir()
	for _, n := range []string{"2026-12-01", "2026-12-02"} {
		if err := os.CopyFS(filepath.Join(two, n), os.DirFS(filepath.Join(root, n))); err != nil {
			t.Fatal(err)
		}
	}
	out.Reset()
	if code := run([]string{"trends", two}, &out, &errb); code != exitValid || !strings.Contains(out.String(), "PASS") {
		t.Errorf("two good nights: exit %d\n%s", code, out.String())
	}
	// --nights 1 follows the newest night alone: nothing to compare.
	if code := run([]string{"trends", "--nights", "1", root}, &out, &errb); code != exitValid {
		t.Errorf("--nights 1: exit %d", code)
	}
	// One night given as the root: 254, saying so.
	errb.Reset()
	if code := run([]string{"trends", filepath.Join(root, "2026-12-01")}, &out, &errb); code != exitBadArgs || !strings.Contains(errb.String(), "is one night") {
		t.Errorf("one night as the root: exit %d: %s", code, errb.String())
	}
	for _, args := range [][]string{{"trends", t.TempDir()}, {"trends", filepath.Join(root, "missing")}, {"trends"}, {"trends", "--nights", "0", root}} {
		if code := run(args, &out, &errb); code != exitBadArgs {
			t.Errorf("%v: exit %d, want 254", args, code)
		}
	}
}

// compareBaseline: a regression makes the matrix exit 1 whatever its own
// code was, but 255 (the harness failed); the comparison is written into
// matrix.json.
func TestCompareBaseline(t *testing.T) {
	base := writeNight(t, t.TempDir(), "base", time.Now().Add(-24*time.Hour), nightCell("redis", "none", "invalid", 2), nightCell("redis", "token", "valid", 0))
	baseline, err := trends.Baseline(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		cells []trends.MatrixCell
		code  int // the matrix's own
		want  int
		regs  int
	}{
		{"the same", []trends.MatrixCell{nightCell("redis", "none", "invalid", 1), nightCell("redis", "token", "valid", 0)}, exitValid, exitValid, 0},
		{"a fence failed", []trends.MatrixCell{nightCell("redis", "none", "invalid", 1), nightCell("redis", "token", "invalid", 0)}, exitInvalid, exitInvalid, 1},
		{"stopped detecting: the matrix passes, the comparison fails", []trends.MatrixCell{nightCell("redis", "none", "valid", 0), nightCell("redis", "token", "valid", 0)}, exitValid, exitInvalid, 1},
		{"regression beats unknown", []trends.MatrixCell{nightCell("redis", "none", "valid", 0), nightCell("redis", "token", "unknown", 0)}, exitUnknown, exitInvalid, 1},
		{"the harness failed: 255 stays", []trends.MatrixCell{nightCell("redis", "none", "valid", 0), nightCell("redis", "token", "error", 0)}, exitHarness, exitHarness, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := writeNight(t, t.TempDir(), "now", time.Now(), c.cells...)
			sum := readMatrix(t, res)
			if sum.ExitCode != c.code {
				t.Fatalf("matrix exit %d, want %d", sum.ExitCode, c.code)
			}
			var out bytes.Buffer
			code, err := matrix.CompareBaseline(&out, res, base, baseline, &sum)
			if err != nil {
				t.Fatal(err)
			}
			disk := readMatrix(t, res)
			if code != c.want || disk.ExitCode != c.want || disk.Baseline == nil || len(disk.Baseline.Regressions) != c.regs || disk.Baseline.Compared != 2 {
				t.Errorf("exit %d (matrix.json %d), comparison %+v; want exit %d, %d regressions\n%s", code, disk.ExitCode, disk.Baseline, c.want, c.regs, out.String())
			}
			if c.regs > 0 && !strings.Contains(out.String(), "REGRESSION  redis lock-store") {
				t.Errorf("output:\n%s", out.String())
			}
			// matrix-junit.xml: a failed case per regression, beside the
			// cells' own.
			var junit struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
			}
			jb, err := os.ReadFile(filepath.Join(res, matrix.JUnitFile))
			if err != nil || xml.Unmarshal(jb, &junit) != nil {
				t.Fatalf("junit: %v", err)
			}
			ownFailures := 0
			for _, cell := range c.cells {
				if cell.MustBeValid && cell.Verdict == "invalid" {
					ownFailures++
				}
			}
			if junit.Tests != len(c.cells)+c.regs || junit.Failures != ownFailures+c.regs {
				t.Errorf("junit: %d tests, %d failures; want %d, %d", junit.Tests, junit.Failures, len(c.cells)+c.regs, ownFailures+c.regs)
			}
		})
	}
}

// --baseline without a matrix exits 254 before any cell runs (no Docker is
// reached: the matrix would need it), and so does a bad NAME=TARGET.
func TestMatrixBaselineArgs(t *testing.T) {
	empty := t.TempDir()
	for _, args := range [][]string{
		{"--baseline", filepath.Join(empty, "missing")},
		{"--baseline", empty},
		{"--target", "a b=redis"},
		{"--target", "=redis"},
		{"--target", "x=no-such-target"},
	} {
		var out, errb bytes.Buffer
		res := t.TempDir()
		code := run(append([]string{"matrix", "--fencing", "token", "--results", res}, args...), &out, &errb)
		if code != exitBadArgs {
			t.Errorf("%v: exit %d, want 254 before any cell runs: %s", args, code, errb.String())
		}
		noRunWritten(t, res)
	}
	// NAME=TARGET names the cells; --list shows both.
	var out, errb bytes.Buffer
	if code := run([]string{"matrix", "--target", "redis=redis-nopersist", "--fencing", "none,token", "--list"}, &out, &errb); code != exitValid ||
		!strings.Contains(out.String(), "redis=redis-nopersist\tlock-append\tlock-store\tpause-holder\ttoken") {
		t.Errorf("--list: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
