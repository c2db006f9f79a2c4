package cli

// The report's charts as a person sees them, in headless Chromium: the
// fencing chart ("Tokens over time") of the stored etcd pause-holder runs,
// unfenced and fenced, has one point per write the history shows sent, the
// stale writes marked (accepted and linking their story, or refused by the
// fence); a real clock-rate run's report has the clock chart; no page
// logs a console error.
//
// FENCECHECK_SCREENSHOTS=DIR writes the first screen of each report into
// DIR as well (report-unfenced.png, report-fenced.png,
// report-clock-rate.png; report_pictures_browser_test.go's
// report-redis-nopersist-kill.png): docs/running.md names the command
// that regenerates docs/img.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

// sentWrites counts the appends of a history that sent their write (a
// write-sent phase): the writes the fencing chart must draw.
func sentWrites(t *testing.T, historyPath string) int {
	t.Helper()
	return countEvents(t, historyPath, func(e history.Event) bool { return e.Type == history.Phase && e.F == la.PhaseWriteSent })
}

// firstScreen saves what the browser's window shows (1280x1000) as a PNG
// in FENCECHECK_SCREENSHOTS, if it is set.
func (b *browser) firstScreen(name string) {
	b.t.Helper()
	dir := os.Getenv("FENCECHECK_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s (%d KB)", filepath.Join(dir, name), len(png)>>10)
}

func TestFencingChartInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a browser")
	}
	t.Parallel()
	b := newBrowser(t, requireChromium(t))
	for _, rr := range []struct {
		dir, shot string
		fenced    bool
	}{
		{dir: "etcd-none-pause-holder", shot: "report-unfenced.png"},
		{dir: "etcd-token-pause-holder", shot: "report-fenced.png", fenced: true},
	} {
		dir := copyRun(t, filepath.Join("testdata", "runs", rr.dir))
		if code, _, stderr := runInProcess("check", dir); code != exitValid && code != exitInvalid {
			t.Fatalf("%s: check exit %d: %s", rr.dir, code, stderr)
		}
		var res struct {
			FenceRejections int `json:"fence_rejections"`
			LostUpdates     struct {
				Lost int `json:"lost"`
			} `json:"lost_updates"`
		}
		readJSONFile(t, filepath.Join(dir, "results.json"), &res)
		b.open("file://" + filepath.Join(dir, "report.html"))
		b.firstScreen(rr.shot)
		if errs := b.consoleErrors(); len(errs) > 0 {
			t.Errorf("%s: console errors: %v", rr.dir, errs)
		}
		if h := b.text("#fencing-chart h2"); h != "Tokens over time" {
			t.Errorf("%s: fencing section headed %q", rr.dir, h)
		}
		if got, want := b.count("#tokens-main .tw"), sentWrites(t, filepath.Join(dir, "history.jsonl")); got != want {
			t.Errorf("%s: the fencing chart draws %d writes, the history sent %d", rr.dir, got, want)
		}
		if n := b.count("#tokens-main path.fence-line"); n != 1 {
			t.Errorf("%s: %d highest-accepted lines, want 1", rr.dir, n)
		}
		if n := b.count("#tokens-main rect.grant.stale"); n < 1 {
			t.Errorf("%s: no grant drawn stale", rr.dir)
		}
		if rr.fenced {
			if n := b.count("#tokens-main .tw.w-fenced.stale"); n != res.FenceRejections || n == 0 {
				t.Errorf("%s: %d refused stale writes marked, results.json counts %d fence rejections", rr.dir, n, res.FenceRejections)
			}
			if n := b.count("#tokens-main .tw.w-stale"); n != 0 {
				t.Errorf("%s: %d stale writes drawn accepted in a valid fenced run", rr.dir, n)
			}
			continue
		}
		if res.LostUpdates.Lost == 0 {
			t.Fatalf("%s: the stored run lost nothing", rr.dir)
		}
		stale := b.count("#tokens-main .tw.w-stale")
		if stale < 1 {
			t.Fatalf("%s: no stale write marked", rr.dir)
		}
		// Each marked stale write links the story that tells it.
		hrefs, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#tokens-main a")].filter(a => a.querySelector(".w-stale")).map(a => a.getAttribute("href"))`))
		if err != nil {
			t.Fatal(err)
		}
		if len(hrefs) != stale {
			t.Errorf("%s: %d of %d stale writes link a story", rr.dir, len(hrefs), stale)
		}
		for _, h := range hrefs {
			if !strings.HasPrefix(h, "#lost-") || b.count(h) != 1 {
				t.Errorf("%s: a stale write links %q, which is no story on the page", rr.dir, h)
			}
		}
		if n := b.count("#tokens-main .lost"); n < res.LostUpdates.Lost {
			t.Errorf("%s: %d lost elements ringed, %d lost", rr.dir, n, res.LostUpdates.Lost)
		}
	}
}

func TestClockChartInBrowser(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	chromium := requireChromium(t)
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--target", "zookeeper", "--nemesis", "clock-rate:client", "--time-limit", "20s", "--nemesis-interval", "2s", "--seed", "5", "--results", res)
	if r.code != exitValid && r.code != exitInvalid {
		t.Fatalf("clock-rate run: exit %d", r.code)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(res, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	assertRunsGone(t, res)
	faults := faultsNamed(t, dir, "clock-rate")
	if faults == 0 {
		t.Fatal("the run recorded no clock-rate fault")
	}
	b := newBrowser(t, chromium)
	b.open("file://" + filepath.Join(dir, "report.html"))
	b.firstScreen("report-clock-rate.png")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
	if h := b.text("#clock-chart h2"); h != "Clocks over time" {
		t.Errorf("clock section headed %q", h)
	}
	if n := b.count("#clocks path.clk.set"); n != faults {
		t.Errorf("the clock chart draws %d clocks, the run had %d clock-rate faults", n, faults)
	}
}
