package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/store"
)

// An unfenced etcd run under pause-holder loses updates; its summary and
// report print the commands that reproduce it; `rerun --runs 2` repeats it
// with its seed and its recorded schedule, and both re-runs lose updates
// again under the same faults (same fault, same hold, in the same order,
// each on the holder of the moment) and say which run they repeat.
func TestRerunReproducesPauseHolder(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	res, reruns := t.TempDir(), t.TempDir()
	t.Cleanup(func() { assertRunsGone(t, res); assertRunsGone(t, reruns) })
	r := runCLI(t, nil, "run", "--target", "etcd", "--fencing", "none", "--nemesis", "pause-holder",
		"--time-limit", "10s", "--seed", "1", "--results", res, "--quiet")
	orig := readResults(t, filepath.Join(res, "latest"))
	wantLost(t, r, orig)
	if t.Failed() {
		t.FailNow() // nothing to reproduce
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(res, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  reproduce        fencecheck rerun " + dir + " --runs 5\n",
		"  run again        fencecheck run --target etcd ",
		" --workload lock-append --resource lock-store --fencing none --nemesis pause-holder ",
		" --time-limit 10s --ttl 2s ",
		" --seed 1\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, store.ReportFile))
	if err != nil || !strings.Contains(string(page), "fencecheck rerun "+dir+" --runs 5") {
		t.Errorf("report.html lacks the rerun command (%v)", err)
	}
	want := faultsOf(t, dir)
	if len(want) == 0 {
		t.Fatal("the run recorded no fault")
	}

	rr := runCLI(t, nil, "rerun", filepath.Join(res, "latest"), "--runs", "2", "--results", reruns, "--quiet")
	if rr.code != exitInvalid || !strings.Contains(rr.stdout, "reproduced 2 of 2 (invalid)") {
		t.Fatalf("rerun exit %d; want 1 and both re-runs invalid:\n%s", rr.code, rr.stdout)
	}
	lines := regexp.MustCompile(`(?m)^run (\d)  invalid  lost (\d+) of (\d+) +(\S+)$`).FindAllStringSubmatch(rr.stdout, -1)
	if len(lines) != 2 {
		t.Fatalf("want a line per re-run with its verdict, lost updates and directory:\n%s", rr.stdout)
	}
	for _, l := range lines {
		rdir := l[4]
		if l[2] == "0" {
			t.Errorf("re-run %s: invalid with nothing lost", l[1])
		}
		var ti store.TestInfo
		b, err := os.ReadFile(filepath.Join(rdir, store.TestFile))
		if err != nil || json.Unmarshal(b, &ti) != nil {
			t.Fatalf("re-run %s: test.json: %v", l[1], err)
		}
		if ti.Rerun == nil || ti.Rerun.Of != dir || ti.Rerun.Schedule != "replayed" || len(ti.Rerun.Faults) != len(want) || ti.Seed != 1 {
			t.Errorf("re-run %s: test.json rerun %+v, seed %d; want a replay of %s's %d faults, seed 1", l[1], ti.Rerun, ti.Seed, dir, len(want))
		}
		got := faultsOf(t, rdir)
		if len(got) != len(want) {
			t.Errorf("re-run %s: %d faults, the run had %d", l[1], len(got), len(want))
			continue
		}
		for i, f := range got {
			w := want[i]
			if f.Fault != w.Fault || f.Params["hold"] != w.Params["hold"] || f.Params["hit"] != "true" ||
				f.Params["replay"] != fmt.Sprintf("step %d of %d", i+1, len(want)) {
				t.Errorf("re-run %s, fault %d: %s %v; the run had %s %v", l[1], i+1, f.Fault, f.Params, w.Fault, w.Params)
			}
		}
	}
}

// faultsOf is the fault windows of a run's history.
func faultsOf(t *testing.T, dir string) []history.Fault {
	t.Helper()
	ev, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := history.Faults(ev)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
