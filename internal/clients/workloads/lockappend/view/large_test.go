package view

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A 100k-operation history: the report is written (history read from disk
// included) in well under 10 s and stays under 20 MB, because the timeline
// aggregates and the stories and tables are capped.
func TestReport100kOps(t *testing.T) {
	const n = 100_000
	ev, res := synthetic(n, 5)
	if laResult(res).LostUpdates.Lost == 0 || len(res.Faults) < 300 {
		t.Fatalf("synthetic history: %d lost, %d faults", laResult(res).LostUpdates.Lost, len(res.Faults))
	}
	root := t.TempDir()
	run, err := store.NewRun(root, "synthetic", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	writeHistory(t, run.Path(store.HistoryFile), ev)
	hinfo, _ := os.Stat(run.Path(store.HistoryFile))

	start, cpu := time.Now(), cpuTime()
	if err := report.Write(run, testInfo("none", 5), res, View); err != nil {
		t.Fatal(err)
	}
	elapsed, used := time.Since(start), cpuTime()-cpu
	b, err := os.ReadFile(run.Path(store.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operations, %d events, history.jsonl %s, %d lost in %d faults: report.html %s written in %s (%s of CPU time)",
		n, len(ev), humanSize(hinfo.Size()), laResult(res).LostUpdates.Lost, len(res.Faults), humanSize(int64(len(b))), elapsed.Round(time.Millisecond), used.Round(time.Millisecond))
	if len(b) > 20<<20 {
		t.Errorf("report.html is %s, want < 20 MB", humanSize(int64(len(b))))
	}
	// The target, under 10 s, is measured by BenchmarkRender100kOps and
	// logged above; this bound only catches a blow-up (a quadratic step
	// would take minutes), not a slow machine: in CPU time (cpuTime), which
	// a loaded machine does not stretch.
	if used > time.Minute {
		t.Errorf("writing the report took %s of CPU time", used)
	}
	page := string(b)
	for _, want := range []string{"operations are too many to draw one by one", `id="lost-1"`, "more lost-update stories", "aggregated in 500 bins"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The main timeline is bounded: far fewer shapes than events.
	main := page[strings.Index(page, `id="tl-main"`):]
	main = main[:strings.Index(main, "</svg>")]
	if shapes := strings.Count(main, "<rect") + strings.Count(main, "<use") + strings.Count(main, "<circle") + strings.Count(main, "<line"); shapes > 20000 {
		t.Errorf("the main timeline has %d shapes for %d operations", shapes, n)
	}
}

// BenchmarkRender100kOps renders the report of a 100k-operation history
// from memory (the history already decoded into events).
func BenchmarkRender100kOps(b *testing.B) {
	ev, res := synthetic(100_000, 5)
	in := report.Input{Test: testInfo("none", 5), Results: res, Events: ev, View: View}
	var size int
	b.ResetTimer()
	for b.Loop() {
		var buf bytes.Buffer
		if err := report.Render(&buf, in); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/(1<<20), "MB")
}
