package cli

// The report's pictures of issue 51, as a person sees them in headless
// Chromium: a register run's binned timeline draws its operations, not
// only those of unknown outcome; a ZooKeeper run's "Tokens over time"
// draws each distinct token at its own height.

import (
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// countEvents counts the events of a history that match.
func countEvents(t *testing.T, historyPath string, match func(history.Event) bool) int {
	t.Helper()
	events, err := history.ReadFile(historyPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		if match(e) {
			n++
		}
	}
	return n
}

// titles are the tooltips of the elements sel matches.
func (b *browser) titles(sel string) []string {
	b.t.Helper()
	ts, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+strconv.Quote(sel)+`)].map(e => e.querySelector("title")?.textContent ?? "")`))
	if err != nil {
		b.t.Fatalf("titles of %s: %v", sel, err)
	}
	return ts
}

var doneTitle = regexp.MustCompile(`: ([0-9]+) ok and ([0-9]+) failed operations completed$`)

// The stored Consul register run has 25,332 operations: its timeline is
// binned, and each client lane draws how many operations completed ok in
// each bin (the bars' tooltips add up to every ok operation of the
// history), beside the unknown outcomes; the page ends with what each
// checker found, not raw JSON.
func TestRegisterTimelineInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a browser")
	}
	t.Parallel()
	b := newBrowser(t, requireChromium(t))
	dir := copyRun(t, filepath.Join("testdata", "runs", "consul-register-default-partition"))
	if code, _, stderr := runInProcess("check", dir, "--check-memory", "0"); code != exitValid {
		t.Fatalf("check exit %d: %s", code, stderr)
	}
	b.open("file://" + filepath.Join(dir, "report.html"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
	if n := b.count("#tl-main text.note"); n != 1 {
		t.Fatalf("%d notes on the timeline: it is not binned", n)
	}
	ok := 0
	for _, title := range b.titles("#tl-main rect.agg-done.ok") {
		m := doneTitle.FindStringSubmatch(title)
		if m == nil {
			t.Fatalf("bar titled %q", title)
		}
		n, _ := strconv.Atoi(m[1])
		ok += n
	}
	// The clients' operations completed ok (not the harness's).
	want := countEvents(t, filepath.Join(dir, "history.jsonl"), func(e history.Event) bool {
		return e.Type == history.Ok && e.Process >= 0 && e.Process < 1000000
	})
	if ok != want || ok == 0 {
		t.Errorf("the timeline's bars count %d operations completed ok; the history has %d", ok, want)
	}
	if n := b.count("pre"); n != 0 {
		t.Errorf("%d blocks of raw text on the page", n)
	}
	if n := b.count("#results td"); n == 0 {
		t.Error("no table of what the checkers found")
	}
}
