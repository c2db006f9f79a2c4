// Package zootest writes results directories as fencecheck matrix
// --client-dir leaves them, for the tests of the zoo (internal/campaigns/zoo) and of
// its command (internal/cli).
package zootest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// Results writes a results directory in a temporary directory of t and
// returns it: matrix.json, started 2026-12-03 09:00 UTC with the command
// `matrix --client-dir builtin,examples/clients/curator`, listing cells,
// and each cell's test.json under its run (a run that is empty or not a
// local path has none): its target, target version 3.8.0, and as
// client_name names[the cell's client directory] when there is one.
func Results(t testing.TB, cells []trends.MatrixCell, names map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range cells {
		if c.Run == "" || !filepath.IsLocal(c.Run) {
			continue
		}
		os.MkdirAll(filepath.Join(dir, c.Run), 0o755)
		ti := map[string]any{"target": c.Target, "target_version": "3.8.0"}
		if n := names[c.Axes["client-dir"]]; n != "" {
			ti["client_name"] = n
		}
		b, _ := json.Marshal(ti)
		os.WriteFile(filepath.Join(dir, c.Run, "test.json"), b, 0o644)
	}
	b, err := trends.Matrix{Started: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC), Args: []string{"--client-dir", "builtin,examples/clients/curator"}, Cells: cells, TotalCells: len(cells)}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, trends.MatrixFile), b, 0o644)
	return dir
}
