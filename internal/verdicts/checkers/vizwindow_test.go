package checkers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

// A long illegal history gets a visualization of the failing part only,
// with one lane per client (not one per process number up to 1,000,000).
func TestVisualizationOfALongHistoryIsAWindow(t *testing.T) {
	events := synthetic(t, 3000, 0)
	// Drop an element from the middle of the final read: a lost update.
	last := &events[len(events)-1]
	var final lockappend.ReadValue
	if err := last.Decode(&final); err != nil {
		t.Fatal(err)
	}
	lost := final.Value[1500]
	final.Value = append(final.Value[:1500:1500], final.Value[1501:]...)
	b, _ := json.Marshal(final)
	last.Value = b
	viz := filepath.Join(t.TempDir(), "linearizability.html")
	parsed, err := parseAppends(pair(t, events))
	if err != nil {
		t.Fatal(err)
	}
	lin, lu := parsed.Linearizable(Options{VisualizationPath: viz}), parsed.LostUpdates()
	if lin.Valid != Invalid || lu.Lost != 1 || lu.Elements[0].Element != lost {
		t.Fatalf("verdict %s, lost %+v", lin.Valid, lu.LostUpdates)
	}
	st, err := os.Stat(viz)
	if err != nil {
		t.Fatalf("no visualization: %v (window: %q, error %q)", err, lin.VisualizationWindow, lin.Error)
	}
	if !strings.Contains(lin.VisualizationWindow, "operations") {
		t.Errorf("window not described: %q", lin.VisualizationWindow)
	}
	whole := filepath.Join(t.TempDir(), "whole.html")
	if err := writeWhole(events, whole); err != nil {
		t.Fatal(err)
	}
	ws, _ := os.Stat(whole)
	t.Logf("window: %s; %d bytes, whole history %d bytes", lin.VisualizationWindow, st.Size(), ws.Size())
	if st.Size()*3 > ws.Size() {
		t.Errorf("the window's visualization (%d bytes) is not much smaller than the whole's (%d)", st.Size(), ws.Size())
	}
}

// writeWhole writes the visualization of the whole history, for comparison.
func writeWhole(events []history.Event, path string) error {
	ops, err := history.Pair(events)
	if err != nil {
		return err
	}
	h, err := parseAppends(ops)
	if err != nil {
		return err
	}
	saved := vizLimit
	defer func() { vizLimit = saved }()
	vizLimit = 1 << 30
	checkLinearizable(h, Options{VisualizationPath: path})
	return nil
}
