package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/testkit/zootest"
)

// zooResults writes a results directory as matrix --client-dir leaves it.
var zooResults = zootest.Results

// The zoo verb parses its flags and calls zoo.Write (internal/campaigns/zoo's tests
// test the page): a missing RESULTS, --out with --publish, a RESULTS
// without matrix.json and one without a client axis exit 254 saying so;
// the page goes to stdout, or to --out's file and --publish's directory,
// each named on stderr.
func TestZooVerb(t *testing.T) {
	dir := zooResults(t, []trends.MatrixCell{{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none",
		Axes: map[string]string{"client-dir": "builtin"}, Verdict: "valid", Acknowledged: 9, Run: "zk/1"}}, nil)
	plain := zooResults(t, []trends.MatrixCell{{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Verdict: "invalid", Run: "etcd/1"}}, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"zoo"}, "fencecheck zoo: usage: zoo needs a RESULTS directory\n"},
		{[]string{"zoo", "--out", "x.md", "--publish", "pub", dir}, "fencecheck zoo: usage: zoo: --out or --publish, not both (--publish writes DIR/zoo.md)\n"},
		{[]string{"zoo", t.TempDir()}, "matrix.json"},
		{[]string{"zoo", plain}, "no cell has a --client-dir axis"},
	} {
		if code, stdout, stderr := runInProcess(c.args...); code != exitBadArgs || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q, %q; want 254 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	if code, stdout, stderr := runInProcess("zoo", dir); code != exitValid || !strings.HasPrefix(stdout, "# The lock-client zoo\n") || stderr != "" {
		t.Errorf("zoo RESULTS: exit %d, %q, %q", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "zoo.md")
	if code, stdout, stderr := runInProcess("zoo", "--out", out, dir); code != exitValid || stdout != "" || stderr != "fencecheck: wrote "+out+"\n" {
		t.Errorf("zoo --out: exit %d, %q, %q", code, stdout, stderr)
	}
	pub := filepath.Join(t.TempDir(), "pub")
	if code, stdout, stderr := runInProcess("zoo", "--publish", pub, dir); code != exitValid || stdout != "" || stderr != "fencecheck: wrote "+filepath.Join(pub, "zoo.md")+"\n" {
		t.Errorf("zoo --publish: exit %d, %q, %q", code, stdout, stderr)
	}
	for _, f := range []string{out, filepath.Join(pub, "zoo.md")} {
		if b, err := os.ReadFile(f); err != nil || !strings.Contains(string(b), "| built-in recipe (zookeeper) |") {
			t.Errorf("%s: %v\n%s", f, err, b)
		}
	}
}

// The rerun command of a report zoo --publish made again resolves: from
// the copy's directory, rerun reads the copied run (the report names it by
// its path in the copy, with --client-dir DIR: internal/campaigns/zoo's
// TestZooPublish).
func TestZooPublishReruns(t *testing.T) {
	results := t.TempDir()
	cell := "etcd-pause-holder-none-client-dir-go-etcd/1"
	run := filepath.Join(results, filepath.FromSlash(cell))
	src := editRun(t, "test.json", `"workload": "lock-append",`,
		`"workload": "lock-append", "client": "etcd concurrency.Mutex (Go) (./client)", "client_name": "etcd concurrency.Mutex (Go)", "client_program_dir": "/home/ci/work/examples/clients/go-etcd",`)
	if err := os.MkdirAll(filepath.Dir(run), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(src, run); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runInProcess("check", run); code != exitInvalid {
		t.Fatalf("check of the recorded run: exit %d, want 1: %s", code, stderr)
	}
	b, err := trends.Matrix{Started: time.Date(2026, 12, 3, 11, 17, 0, 0, time.UTC), Cells: []trends.MatrixCell{{Target: "etcd", Nemesis: "pause-holder", Fencing: "none",
		Axes: map[string]string{"client-dir": "examples/clients/go-etcd"}, Verdict: "invalid", Lost: 4, Acknowledged: 91, Run: cell}}, TotalCells: 1}.Encode()
	if err == nil {
		err = os.WriteFile(filepath.Join(results, trends.MatrixFile), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "zoo")
	if code, _, stderr := runInProcess("zoo", "--publish", pub, results); code != exitValid {
		t.Fatalf("zoo --publish: exit %d: %s", code, stderr)
	}
	copied := filepath.Join(pub, filepath.Base(results), filepath.FromSlash(cell))
	if _, err := os.Stat(filepath.Join(copied, "report.html")); err != nil {
		t.Fatalf("no report made again in the copy: %v", err)
	}
	if _, err := parts.RerunConfig(t.Context(), copied, t.TempDir(), spec.Spec{}, runs.ClientOpts{Dir: clientDirFixture}, os.Stderr); err != nil {
		t.Errorf("rerun of the published run: %v", err)
	}
}
