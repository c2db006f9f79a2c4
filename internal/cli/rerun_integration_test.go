package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
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
			if hit, _ := f.Aimed(); f.Fault != w.Fault || f.Hold != w.Hold || !hit ||
				f.Replay != fmt.Sprintf("step %d of %d", i+1, len(want)) {
				t.Errorf("re-run %s, fault %d: %s %v; the run had %s %v", l[1], i+1, f.Fault, f.Shown(), w.Fault, w.Shown())
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

// A client program's run (etcd's Mutex through the protocol, unfenced,
// under pause-holder, started with --client-cmd) is repeated with its
// directory given again and gives the same verdict; test.json records the
// directory, its files and the command, and a rerun without --client-dir
// is refused (254), as test.json's directory is never run. Once a file is
// added to the directory, the rerun is refused (254, naming it), and with
// --client-changed-ok it runs, saying so, with the same verdict.
func TestRerunReproducesClientProgram(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	res, reruns := t.TempDir(), t.TempDir()
	t.Cleanup(func() { assertRunsGone(t, res); assertRunsGone(t, reruns) })
	client := exampleCopy(t, "go-etcd", func(m string) string { return m })
	r := runCLI(t, nil, "run", "--target", "etcd", "--client-dir", client, "--client-cmd", "exec ./client", "--fencing", "none", "--nemesis", "pause-holder",
		"--time-limit", "15s", "--seed", "1", "--results", res, "--quiet")
	if r.code != exitValid && r.code != exitInvalid {
		t.Fatalf("exit %d: %s", r.code, lastLines(r.stderr, 10))
	}
	orig := readResults(t, filepath.Join(res, "latest"))
	dir, err := filepath.EvalSymlinks(filepath.Join(res, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	var test store.TestInfo
	b, err := os.ReadFile(filepath.Join(dir, store.TestFile))
	if err != nil || json.Unmarshal(b, &test) != nil {
		t.Fatalf("test.json: %v", err)
	}
	if test.ClientPath != client || test.ClientFiles == nil || test.ClientFiles.Files["main.go"] == "" || test.ClientCmd != "exec ./client" {
		t.Fatalf("test.json records client_dir %q, files %+v, client_cmd %q; want %q, its files and the command", test.ClientPath, test.ClientFiles, test.ClientCmd, client)
	}
	if !strings.Contains(r.stdout, "fencecheck rerun "+dir+" --runs 5 --client-dir DIR") {
		t.Errorf("the summary's rerun line lacks --client-dir DIR:\n%s", r.stdout)
	}
	if rr := runCLI(t, nil, "rerun", dir, "--runs", "1", "--results", reruns, "--quiet"); rr.code != exitBadArgs || !strings.Contains(rr.stderr, "give its directory again") {
		t.Errorf("rerun without --client-dir: exit %d, want 254: %s", rr.code, lastLines(rr.stderr, 3))
	}
	rr := runCLI(t, nil, "rerun", dir, "--client-dir", client, "--runs", "1", "--results", reruns, "--quiet")
	t.Logf("original: exit %d, valid %v, lost %d of %d; rerun exit %d:\n%s", r.code, orig.Valid, orig.LostUpdates.Lost, orig.LostUpdates.Acknowledged, rr.code, rr.stdout)
	if rr.code != r.code {
		t.Fatalf("rerun exit %d, the original's %d: %s", rr.code, r.code, lastLines(rr.stderr, 10))
	}
	want := map[int]string{exitValid: "run 1  valid ", exitInvalid: "run 1  invalid "}[r.code]
	if !strings.Contains(rr.stdout, want) {
		t.Errorf("the re-run's verdict is not the original's (%q):\n%s", want, rr.stdout)
	}
	if !strings.Contains(rr.stderr, "starts as the run's did: --client-cmd 'exec ./client'") {
		t.Errorf("the rerun does not say it starts the program with the recorded command: %s", lastLines(rr.stderr, 10))
	}

	// A file added since: refused without --client-changed-ok, run with it.
	if err := os.WriteFile(filepath.Join(client, "NOTES"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := runCLI(t, nil, "rerun", dir, "--client-dir", client, "--runs", "1", "--results", reruns, "--quiet")
	if refused.code != exitBadArgs || !strings.Contains(refused.stderr, "its files changed since the run (first: NOTES (new)); give --client-changed-ok") {
		t.Errorf("rerun of a changed directory: exit %d, want 254 naming NOTES: %s", refused.code, lastLines(refused.stderr, 3))
	}
	ok := runCLI(t, nil, "rerun", dir, "--client-dir", client, "--client-changed-ok", "--runs", "1", "--results", reruns, "--quiet")
	if ok.code != r.code || !strings.Contains(ok.stdout, want) || !strings.Contains(ok.stderr, "changed since the run (--client-changed-ok)") {
		t.Errorf("rerun with --client-changed-ok: exit %d (the original's %d), want the original's verdict %q and a warning:\n%s\n%s", ok.code, r.code, want, ok.stdout, lastLines(ok.stderr, 10))
	}
}
