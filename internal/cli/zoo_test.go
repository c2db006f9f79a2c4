package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/trends"
)

// zooResults writes a results directory as matrix --client-dir leaves it:
// matrix.json and each cell's test.json.
func zooResults(t *testing.T, cells []trends.MatrixCell, names map[string]string) string {
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

// The zoo's page sums each client's cells over their seeds, names the
// client as the program named itself, says "no token" for a refused
// fencing mode, and links one invalid run's report, relative to the page.
func TestZooPage(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cur := map[string]string{"client-dir": "examples/clients/curator"}
	cells := []trends.MatrixCell{
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "builtin"}, Verdict: "invalid", Lost: 3, Acknowledged: 90, Run: "zk-builtin/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: cur, Verdict: "invalid", Lost: 2, Acknowledged: 88, FirstLostS: f(10), Run: "zk-curator/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: cur, Verdict: "invalid", Lost: 35, Acknowledged: 95, FirstLostS: f(20), Run: "zk-curator/2"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: cur, Verdict: "valid", Acknowledged: 80, Run: "zk-curator/3"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "valid", Acknowledged: 80, FenceRejections: 3, Run: "zk-curator-token/1"},
		{Target: "redlock", Nemesis: "pause-holder", Fencing: "token", Axes: map[string]string{"client-dir": "examples/clients/go-redsync"}, Verdict: "error",
			Error: "worker w1: setup: bad configuration: the client program's leases carry no fencing token (init_ok: \"tokens\": false)"},
		// A hostile cell: its run is outside the results directory.
		{Target: "redlock", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "examples/clients/go-redsync"}, Verdict: "invalid", Lost: 1, Acknowledged: 9, Run: "../../etc"},
		// Not a zoo cell: no client axis.
		{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Verdict: "invalid", Run: "etcd/1"},
	}
	dir := zooResults(t, cells, map[string]string{"examples/clients/curator": "Curator 5.4.0 InterProcessMutex"})
	out := filepath.Join(t.TempDir(), "docs", "zoo.md")
	os.MkdirAll(filepath.Dir(out), 0o755)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"zoo", "--out", out, dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(out)
	page := string(b)
	rel, _ := filepath.Rel(filepath.Dir(out), filepath.Join(dir, "zk-curator", "1", "report.html"))
	for _, want := range []string{
		"fencecheck matrix --client-dir builtin,examples/clients/curator",
		"2026-12-03 09:00 UTC",
		"| built-in recipe (zookeeper) | zookeeper 3.8.0 | `pause-holder` | none | 1 of 1 invalid | 3 of 90 | 0 | none |",
		"| Curator 5.4.0 InterProcessMutex | zookeeper 3.8.0 | `pause-holder` | none | 2 of 3 invalid | 37 of 263 | 0 | 15.0 s (2 of 3 runs) |",
		"| Curator 5.4.0 InterProcessMutex | zookeeper 3.8.0 | `pause-holder` | token | 0 of 1 invalid | 0 of 80 | 3 | none |",
		"| go-redsync | redlock | `pause-holder` | token | no token (refused) | – | 0 | – |",
		"- Curator 5.4.0 InterProcessMutex, `pause-holder`, fencing none: [report](" + filepath.ToSlash(rel) + ")",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "etc/report.html") || strings.Contains(page, "| etcd |") {
		t.Errorf("page links outside the results, or lists a cell with no client:\n%s", page)
	}

	// Without a client axis, or without a matrix: bad input.
	plain := zooResults(t, cells[len(cells)-1:], nil)
	if code := run([]string{"zoo", plain}, &stdout, &stderr); code != 254 || !strings.Contains(stderr.String(), "no cell has a --client-dir axis") {
		t.Errorf("zoo of a matrix without clients: exit %d: %s", code, stderr.String())
	}
	if code := run([]string{"zoo", t.TempDir()}, &stdout, &stderr); code != 254 {
		t.Errorf("zoo of a directory without matrix.json: exit %d", code)
	}
}

// Given two matrices, a client directory's rows come from the last that
// ran it (a client re-run after a fix), the others' from the first, and the
// page names both matrices and the clients each supplied.
func TestZooPageSupersedes(t *testing.T) {
	cur := map[string]string{"client-dir": "examples/clients/curator"}
	kaz := map[string]string{"client-dir": "examples/clients/kazoo"}
	first := zooResults(t, []trends.MatrixCell{
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "invalid", Acknowledged: 50, Run: "cur/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: kaz, Verdict: "valid", Acknowledged: 70, FenceRejections: 2, Run: "kaz/1"},
	}, map[string]string{"examples/clients/curator": "Curator", "examples/clients/kazoo": "kazoo"})
	second := zooResults(t, []trends.MatrixCell{
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "valid", Acknowledged: 60, FenceRejections: 4, Run: "cur/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "valid", Acknowledged: 61, FenceRejections: 1, Run: "cur/2"},
	}, map[string]string{"examples/clients/curator": "Curator"})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"zoo", first, second}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page := stdout.String()
	for _, want := range []string{
		"a client's rows come from the last matrix that ran it",
		"From the matrix run of 2026-12-03 09:00 UTC (kazoo):",
		"From the matrix run of 2026-12-03 09:00 UTC (Curator):",
		"| Curator | zookeeper 3.8.0 | `pause-holder` | token | 0 of 2 invalid | 0 of 121 | 5 | none |",
		"| kazoo | zookeeper 3.8.0 | `pause-holder` | token | 0 of 1 invalid | 0 of 70 | 2 | none |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "0 of 50") || strings.Contains(page, "1 of 1 invalid") {
		t.Errorf("the first matrix's Curator cell is still on the page:\n%s", page)
	}
}
