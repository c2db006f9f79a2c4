package zoo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// zoo --publish writes a copy that stands alone: the page links a report
// that is in the copy, the report's rerun command names the run by its
// path in the copy (with --client-dir DIR to fill in), never a directory
// of the machine that ran it, and every file the report links is in the
// copy or listed as left out (a log past the bound). (That the command
// resolves, that rerun reads the copied run, is internal/cli's
// TestZooPublishReruns.)
func TestZooPublish(t *testing.T) {
	results := t.TempDir()
	cell := "etcd-pause-holder-none-client-dir-go-etcd/20261203T113306.047Z"
	run := filepath.Join(results, filepath.FromSlash(cell))
	if err := os.MkdirAll(filepath.Join(run, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A client program's run that lost an update, checked.
	ev := lockappendtest.SeedHistory(t, "")
	ti := lockappendtest.TestInfo("none", 3)
	ti.Client, ti.ClientName, ti.ClientPath = "etcd concurrency.Mutex (Go) (./client)", "etcd concurrency.Mutex (Go)", "/home/ci/work/examples/clients/go-etcd"
	lockappendtest.WriteHistory(t, filepath.Join(run, store.HistoryFile), ev)
	for name, v := range map[string]any{store.TestFile: ti, store.ResultsFile: lockappendtest.Check(t, ev)} {
		b, err := json.Marshal(v)
		if err == nil {
			err = os.WriteFile(filepath.Join(run, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(run, "logs", "n1.log"), []byte("a server's log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(run, "logs", "w1.log"))
	if err == nil {
		err = big.Truncate(maxPublishFile + 1)
	}
	if err == nil {
		err = big.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := trends.Matrix{Started: time.Date(2026, 12, 3, 11, 17, 0, 0, time.UTC), Args: []string{"--client-dir", "examples/clients/go-etcd"},
		Cells: []trends.MatrixCell{{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "examples/clients/go-etcd"},
			Verdict: "invalid", Lost: 1, Acknowledged: 10, Run: cell},
			// A run of which only test.json was kept: no report to make.
			{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "examples/clients/kazoo"},
				Verdict: "invalid", Lost: 1, Acknowledged: 10, Run: "zk-kazoo/1"}}, TotalCells: 2}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(results, trends.MatrixFile), b, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.MkdirAll(filepath.Join(results, "zk-kazoo", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(results, "zk-kazoo", "1", "test.json"), []byte(`{"target": "zookeeper", "client_name": "kazoo 2.8.0 Lock"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "zoo")
	if wrote, err := Write(Options{Results: []string{results}, Publish: pub}, nil); err != nil || wrote != filepath.Join(pub, PageFile) {
		t.Fatalf("zoo --publish: wrote %q: %v", wrote, err)
	}
	page, err := os.ReadFile(filepath.Join(pub, "zoo.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := filepath.Base(results) + "/" + cell
	if !strings.Contains(string(page), "[report]("+shown+"/report.html)") || !strings.Contains(string(page), "--client-dir DIR") {
		t.Errorf("the page does not link the copied report %s/report.html, or does not say how to rerun:\n%s", shown, page)
	}
	if !strings.Contains(string(page), "- kazoo 2.8.0 Lock, `pause-holder`, fencing none: report not kept in this copy (its results directory kept no history.jsonl, results.json of it)") ||
		strings.Contains(string(page), "zk-kazoo/1/report.html") || strings.Contains(string(page), pub) || strings.Contains(string(page), results) {
		t.Errorf("the page does not say that the run without results.json has no report, or links it:\n%s", page)
	}
	copied := filepath.Join(pub, filepath.FromSlash(shown))
	rep, err := os.ReadFile(filepath.Join(copied, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(rep)
	if want := "fencecheck rerun " + shown + " --runs 5 --client-dir DIR"; !strings.Contains(html, want) {
		t.Errorf("the published report lacks %q", want)
	}
	for _, machine := range []string{results, "/home/ci", "/tmp/"} {
		if strings.Contains(html, machine) {
			t.Errorf("the published report names %s, a directory of the machine that ran it", machine)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"#][^"]*)"`).FindAllStringSubmatch(html, -1) {
		if strings.HasPrefix(m[1], "data:") {
			continue
		}
		if _, err := os.Stat(filepath.Join(copied, filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("the published report links %s, which the copy lacks: %v", m[1], err)
		}
	}
	for _, f := range []string{"history.jsonl", "results.json", "test.json", "logs/n1.log"} {
		if _, err := os.Stat(filepath.Join(copied, f)); err != nil {
			t.Errorf("the copy lacks %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(copied, "logs", "w1.log")); err == nil || !strings.Contains(html, "logs/w1.log: left out of this copy (8.0 MB") {
		t.Errorf("a log past the bound: copied (%v), or the report does not say it was left out", err)
	}
	// And zoo reads the copy again: the same page.
	again, err := zooPage([]string{filepath.Join(pub, filepath.Base(results))}, filepath.Join(pub, "zoo.md"))
	table, _, _ := strings.Cut(string(page), "One invalid run")
	if err != nil || !strings.HasPrefix(again, table) {
		t.Errorf("zoo of the copy: %v\n%s\nwant the table of\n%s", err, again, page)
	}
}
