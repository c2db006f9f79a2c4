package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func render(t *testing.T, in Input) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, in); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A workload without a view of its own gets the generic report.
func TestRenderOtherWorkload(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Add(0.1, 0, history.Invoke, "write", map[string]any{"key": "k1", "value": 3})
	h.Add(0.2, 0, history.Ok, "write", map[string]any{"key": "k1", "value": 3})
	h.Fault(0.15, 0.5, "n1", history.FaultValue{})
	res := &store.Results{Workload: "register", Events: 4}
	page := render(t, Input{Test: lockappendtest.TestInfo("none", 1), Results: res, Events: h.Sorted()})
	for _, want := range []string{`class="verdict unknown"`, "has no report view of its own yet", `id="tl-main"`, `id="throughput"`, "n1 server"} {
		if !strings.Contains(page, want) {
			t.Errorf("generic report lacks %q", want)
		}
	}
}

func TestWriteIndex(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, at time.Time, res *store.Results, test store.TestInfo) *store.Run {
		run, err := store.NewRun(root, name, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.WriteJSON(store.TestFile, test); err != nil {
			t.Fatal(err)
		}
		if res != nil {
			if err := run.WriteJSON(store.ResultsFile, res); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(run.Path(store.ReportFile), []byte("r"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return run
	}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	mk("etcd-none", t0, lockappendtest.Check(t, lockappendtest.SeedHistory(t, "1s")), lockappendtest.TestInfo("none", 3))
	mk("etcd-none", t0.Add(time.Minute), nil, lockappendtest.TestInfo("none", 3)) // still running
	evil := lockappendtest.TestInfo(`<b>x</b>`, 3)
	mk("etcd-token", t0.Add(2*time.Minute), &store.Results{Workload: "lock-append", Result: &lockappend.Result{Valid: checkers.Valid}}, evil)
	if err := os.WriteFile(filepath.Join(root, "stray.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	runs, err := ScanRuns(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(runs), runs)
	}
	if runs[0].Name != "etcd-token" || runs[0].Verdict != "valid" || runs[1].Verdict != "running" || runs[2].Verdict != "invalid" {
		t.Errorf("runs newest first with verdicts: %+v", runs)
	}
	if r := runs[2]; r.Lost != 1 || r.Acknowledged != 2 || r.LostPercent() != "50.0%" || r.Faults != 1 || r.Fencing != "none" || r.Target != "etcd 3.6.16" {
		t.Errorf("summary %+v", r)
	}
	if err := WriteIndex(root); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`href="etcd-none/20261130T090000.000Z/report.html"`, "1 of 2", "50.0%", "&lt;b&gt;x&lt;/b&gt;", `verdict running`} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>x</b>") {
		t.Errorf("index does not escape the configuration")
	}
	if m, _ := filepath.Glob(filepath.Join(root, ".index-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
