package cli

// The report's pictures of issue 51, as a person sees them in headless
// Chromium: a register run's binned timeline draws its operations, not
// only those of unknown outcome; a ZooKeeper run's "Tokens over time"
// draws each distinct token at its own height.

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// faultsNamed counts the faults of a run's results.json whose name begins
// with prefix.
func faultsNamed(t *testing.T, dir, prefix string) int {
	t.Helper()
	var res struct {
		Faults []struct {
			Fault string `json:"fault"`
		} `json:"faults"`
	}
	readJSONFile(t, filepath.Join(dir, "results.json"), &res)
	n := 0
	for _, f := range res.Faults {
		if strings.HasPrefix(f.Fault, prefix) {
			n++
		}
	}
	return n
}

// openStored checks a copy of the stored run testdata/runs/name, wants one
// of the exit codes, and opens its report in a browser with no console
// error; it returns the browser and the copy's directory. It skips under
// -short, and runs in parallel.
func openStored(t *testing.T, name string, exits ...int) (*browser, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("opens a browser")
	}
	t.Parallel()
	b := newBrowser(t, requireChromium(t))
	dir := copyRun(t, filepath.Join("testdata", "runs", name))
	if code, _, stderr := runInProcess("check", dir, "--check-memory", "0"); !slices.Contains(exits, code) {
		t.Fatalf("check exit %d, want one of %v: %s", code, exits, stderr)
	}
	b.open("file://" + filepath.Join(dir, "report.html"))
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
	return b, dir
}

var doneTitle = regexp.MustCompile(`: ([0-9]+) ok and ([0-9]+) failed operations completed$`)

// The stored Consul register run has 25,332 operations: its timeline is
// binned, and each client lane draws how many operations completed ok in
// each bin (the bars' tooltips add up to every ok operation of the
// history), beside the unknown outcomes; the page ends with what each
// checker found, not raw JSON.
func TestRegisterTimelineInBrowser(t *testing.T) {
	b, dir := openStored(t, "consul-register-default-partition", exitValid)
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

// grantHeights are the grant bars of a token chart as the browser draws
// them: each token and the screen heights of its bars' middles.
func (b *browser) grantHeights(chart string) map[int64][]float64 {
	b.t.Helper()
	type bar struct {
		Title string  `json:"title"`
		Y     float64 `json:"y"`
	}
	bars, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]bar](`[...document.querySelectorAll(`+strconv.Quote(chart+" rect.grant")+`)].map(r => { const b = r.getBoundingClientRect(); return {title: r.querySelector("title").textContent, y: b.top + b.height/2}; })`))
	if err != nil {
		b.t.Fatalf("grants of %s: %v", chart, err)
	}
	held := regexp.MustCompile(` held token ([0-9]+) from `)
	out := map[int64][]float64{}
	for _, g := range bars {
		m := held.FindStringSubmatch(g.Title)
		if m == nil {
			b.t.Fatalf("grant titled %q", g.Title)
		}
		tok, _ := strconv.ParseInt(m[1], 10, 64)
		out[tok] = append(out[tok], g.Y)
	}
	return out
}

// A ZooKeeper run's tokens are zxids (epoch<<32 | counter): 8589934662
// and 8589934663 are one apart, the next epoch's 2^32 above them. On a
// linear axis every grant of the run lay on one line; by rank, each
// distinct token has a height of its own, at least 2px from the next on
// the screen, higher tokens higher, and the axis says it is by rank.
func TestZooKeeperTokensInBrowser(t *testing.T) {
	b, _ := openStored(t, "zookeeper-token-pause-holder-kill-leader", exitValid, exitInvalid)
	heights := b.grantHeights("#tokens-main")
	if len(heights) < 5 {
		t.Fatalf("%d distinct tokens drawn", len(heights))
	}
	var toks []int64
	for tok, ys := range heights {
		toks = append(toks, tok)
		for _, y := range ys[1:] {
			if y != ys[0] {
				t.Errorf("token %d drawn at heights %v", tok, ys)
			}
		}
	}
	slices.Sort(toks)
	if toks[len(toks)-1]-toks[0] < 1<<32 {
		t.Fatalf("tokens %d to %d: the run's grants span no new epoch", toks[0], toks[len(toks)-1])
	}
	for i := 1; i < len(toks); i++ {
		lo, hi := heights[toks[i-1]][0], heights[toks[i]][0]
		if lo-hi < 2 { // screen y grows downwards
			t.Errorf("tokens %d and %d are drawn %.1fpx apart (at %.1f and %.1f)", toks[i-1], toks[i], lo-hi, lo, hi)
		}
	}
	if !strings.Contains(b.text("#tokens-main"), "by rank") {
		t.Error("the token axis does not say it is by rank")
	}
}

// The stored redis-nopersist kill run: each kill of the server is a band
// of the kill's colour across the lanes and a bar on the server's lane,
// marked "killed" and "restarted" there, and the lane, on which the run
// recorded no leader, says so.
func TestKillRunInBrowser(t *testing.T) {
	b, dir := openStored(t, "redis-nopersist-token-kill", exitInvalid)
	b.firstScreen("report-redis-nopersist-kill.png")
	kills := faultsNamed(t, dir, "kill")
	if kills == 0 {
		t.Fatal("the stored run has no kill")
	}
	for sel, want := range map[string]int{"#tl-main rect.band.kill": kills, "#tl-main rect.fault.kill": kills} {
		if n := b.count(sel); n != want {
			t.Errorf("%d %s, want %d", n, sel, want)
		}
	}
	killed := 0
	words, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#tl-main text.srv-label.kill")].map(t => t.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		if w == "killed" {
			killed++
		}
	}
	if killed != kills {
		t.Errorf("%d kills marked \"killed\" on the server's lane, want %d", killed, kills)
	}
	if !strings.Contains(b.text("#tl-main"), "no leader recorded by this run") {
		t.Error("the server lane does not say no leader was recorded")
	}
}
