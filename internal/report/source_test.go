package report

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A streamed history gives the page a held one gives, whatever reads it:
// here the generic view (which holds it, AllEvents) of a run whose
// configuration names no client lanes, so that bound reads the history
// too, and an event whose function is past MaxName (bounded once, not once
// on the way in and again by bound: a cut says how much it cut).
func TestStreamedPageIsTheHeldOne(t *testing.T) {
	long := strings.Repeat("f", MaxName+72)
	h := &lockappendtest.Hist{T: t}
	h.Add(0.1, 0, history.Invoke, long, map[string]any{"key": "k1", "value": 3})
	h.Add(0.2, 0, history.Ok, long, map[string]any{"key": "k1", "value": 3})
	h.Fault(0.15, 0.5, "n1", history.FaultValue{})
	path := filepath.Join(t.TempDir(), store.HistoryFile)
	lockappendtest.WriteHistory(t, path, h.Sorted())
	test := lockappendtest.TestInfo("none", 1)
	test.Concurrency = 0
	held, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res := &store.Results{Workload: "register", Events: len(held)}
	want := render(t, Input{Test: test, Results: res, Events: held})
	got := render(t, Input{Test: test, Results: res, HistoryPath: path})
	if got != want {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("the streamed page differs at byte %d: %q, held %q", i, got[i:min(len(got), i+120)], want[i:min(len(want), i+120)])
	}
	if !strings.Contains(got, "(72 bytes more)") {
		t.Errorf("the long function is not cut once")
	}
}

// A history that cannot be read shows the results alone, its error cut
// like every other text of the page, however the view found it (here in
// the stream, after bound).
func TestStreamedHistoryErrorIsCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.HistoryFile)
	bad := `{"index":0,"time_ns":0,"process":"` + strings.Repeat("A", 5000) + `","type":"invoke","f":"x"}` + "\n" +
		`{"index":1,"time_ns":1,"process":0,"type":"invoke","f":"x"}` + "\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	page := render(t, Input{Test: lockappendtest.TestInfo("none", 1), Results: &store.Results{Workload: "register"}, HistoryPath: path})
	if !strings.Contains(page, "The history could not be read") {
		t.Fatalf("the page does not say the history could not be read")
	}
	if strings.Contains(page, strings.Repeat("A", MaxText+1)) {
		t.Errorf("the history's error is not cut to %d bytes", MaxText)
	}
}

// A streamed report is written under StreamedMemoryLimit, which a view
// that holds the whole history (AllEvents) ends first, and which Render
// ends in any case.
func TestStreamedMemoryLimitEndsWhenTheHistoryIsHeld(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Add(0.1, 0, history.Invoke, "write", map[string]any{"key": "k1", "value": 3})
	path := filepath.Join(t.TempDir(), store.HistoryFile)
	lockappendtest.WriteHistory(t, path, h.Sorted())
	before := debug.SetMemoryLimit(-1)
	var during, after int64
	view := func(in *Input) (*Page, error) {
		during = debug.SetMemoryLimit(-1)
		in.AllEvents()
		after = debug.SetMemoryLimit(-1)
		return GenericView(in)
	}
	render(t, Input{Test: lockappendtest.TestInfo("none", 1), Results: &store.Results{Workload: "register"}, HistoryPath: path, View: view})
	if want := min(before, StreamedMemoryLimit); during != want {
		t.Errorf("the limit while the view streams is %d, want %d", during, want)
	}
	if after != before || debug.SetMemoryLimit(-1) != before {
		t.Errorf("the limit once the history is held is %d, after Render %d; want the %d set before", after, debug.SetMemoryLimit(-1), before)
	}
}
