package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// The trends page shows each cell's strip with a link per night to its
// run's report, the detection rate, the medians, and the newest night's
// regressions; names from the files are escaped, and a night named like a
// script URL links nowhere.
func TestRenderTrends(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	k := func(target, fencing string) trends.Key {
		return trends.Key{Target: target, Resource: "lock-store", Nemesis: "pause-holder,kill", Fencing: fencing, Run: 1}
	}
	t0 := time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC)
	nights := []trends.Night{
		{Dir: "n1", Started: t0, Cells: []trends.Cell{
			{Key: k("redis", "none"), Verdict: trends.Invalid, Lost: 2, Acknowledged: 40, FirstLostS: f(6.5), OpsPerS: f(3), Run: "redis-none/A"},
			{Key: k("redis", "token"), Verdict: trends.Valid, MustBeValid: true, Acknowledged: 38, OpsPerS: f(2.5), Run: "redis-token/A"},
			{Key: k("<script>alert(1)</script>", "none"), Verdict: trends.Valid},
		}},
		{Dir: "javascript:alert(2)", Started: t0.Add(24 * time.Hour), Cells: []trends.Cell{
			{Key: k("redis", "none"), Verdict: trends.Invalid, Lost: 1, Acknowledged: 41, FirstLostS: f(8.5), Run: "redis-none/B"},
			{Key: k("redis", "token"), Verdict: trends.Invalid, MustBeValid: true, Acknowledged: 30, Ran: "redis-nopersist", Run: "redis-nopersist-token/B"},
		}},
	}
	s := trends.Summarize(nights)
	var b bytes.Buffer
	if err := RenderTrends(&b, "/results/<nights>", s); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`id="regression-count">1<`,
		`<b>redis lock-store pause-holder,kill token #1</b>: must be valid: was valid, now invalid`,
		`(target redis-nopersist, before redis)`,
		`data-strip="VI!"`, `data-strip="II"`,
		`href="n1/redis-none/A/report.html"`,
		`2 of 2 (100%)`, // detection
		`7.5 s`,         // median first lost
		`3.0`,           // median ops/s of the nights that record it
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`/results/&lt;nights&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, `href="javascript:`) {
		t.Error("unescaped script or script URL")
	}

	// No regression: said so.
	b.Reset()
	RenderTrends(&b, "r", trends.Summarize(nights[:1]))
	if !strings.Contains(b.String(), `id="regression-count">0<`) || !strings.Contains(b.String(), "None: no fenced cell") {
		t.Error("a page without regressions does not say so")
	}

	// WriteTrends writes trends.html, and index.html only when asked.
	dir := t.TempDir()
	if err := WriteTrends(dir, s, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); !os.IsNotExist(err) {
		t.Errorf("index.html written without asIndex: %v", err)
	}
	if err := WriteTrends(dir, s, true); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, TrendsFile))
	i, _ := os.ReadFile(filepath.Join(dir, IndexFile))
	if len(a) == 0 || !bytes.Equal(a, i) {
		t.Error("index.html is not the trends page")
	}
}
