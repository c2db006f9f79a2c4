package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/experiment"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// An unfenced etcd run under pause-holder, 5 clients for 30 s with several
// faults, loses updates; shrink, within a budget of 8 runs, finds a run
// with one fault, at most 3 clients and a shorter time limit that failed
// at least 2 of its 3 confirming runs (lost-updates invalid), and writes
// it: a copy of the run whose history holds that one fault, an
// experiment file that run -f reads, and repro.md with the one command.
func TestShrinkPauseHolder(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	res, cands, out := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "out")
	t.Cleanup(func() { assertRunsGone(t, res); assertRunsGone(t, cands) })
	start := time.Now()
	r := runCLI(t, nil, "run", "--target", "etcd", "--fencing", "none", "--nemesis", "pause-holder",
		"--concurrency", "5", "--time-limit", "30s", "--nemesis-interval", "1s", "--seed", "482366", "--results", res, "--quiet")
	orig := readResults(t, filepath.Join(res, "latest"))
	wantLost(t, r, orig)
	dir, err := filepath.EvalSymlinks(filepath.Join(res, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(faultsOf(t, dir)); n < 3 {
		t.Fatalf("the run injected %d faults, want several", n)
	}
	if t.Failed() {
		t.FailNow() // nothing to shrink
	}

	s := runCLI(t, nil, "shrink", dir, "--budget", "8", "--results", cands, "--out", out)
	if s.code != exitInvalid {
		t.Fatalf("shrink exit %d, want 1 (a smaller failing run)\n%s", s.code, s.stderr)
	}
	for _, want := range []string{"fencecheck: shrink of " + dir, "fencecheck: shrink: trying ", "fencecheck: shrink: run 1 of at most 8: ", "fencecheck: shrink: kept: "} {
		if !strings.Contains(s.stderr, want) {
			t.Errorf("stderr lacks the progress line %q", want)
		}
	}
	var log struct {
		Checkers []string `json:"checkers"`
		Run      string   `json:"run"`
		Runs     int      `json:"runs"`
		Trials   []struct {
			Phase string `json:"phase"`
			Kept  bool   `json:"kept"`
			Runs  []struct {
				Failed bool   `json:"failed"`
				Dir    string `json:"dir"`
			} `json:"runs"`
		} `json:"trials"`
	}
	readJSONFile(t, filepath.Join(out, "shrink.json"), &log)
	if log.Runs > 8 {
		t.Errorf("%d runs, over the budget of 8", log.Runs)
	}
	var kept []string
	failed, confirming := 0, 0
	for _, tr := range log.Trials {
		if tr.Kept {
			kept = append(kept, tr.Phase)
			failed, confirming = 0, len(tr.Runs)
			for _, r := range tr.Runs {
				if r.Failed {
					failed++
				}
			}
		}
	}
	// Kept at its second failure of at most 3 runs: 2 of 3 whatever a
	// third would have done.
	if failed < 2 || confirming > 3 {
		t.Errorf("the smallest run's confirmation: %d of %d failed, want >= 2 of <= 3 (kept phases %v)", failed, confirming, kept)
	}

	got := filepath.Join(out, "run")
	var test store.TestInfo
	readJSONFile(t, filepath.Join(got, store.TestFile), &test)
	faults := faultsOf(t, got)
	if len(faults) != 1 || test.Concurrency > 3 || test.TimeLimit >= 30*time.Second {
		t.Errorf("shrunk to %d faults, %d clients, time limit %s; want 1 fault, <= 3 clients, < 30s (kept %v)",
			len(faults), test.Concurrency, test.TimeLimit, kept)
	}
	if test.Rerun == nil || test.Rerun.Of != dir {
		t.Errorf("the shrunk run's test.json: rerun %+v, want a replay of %s", test.Rerun, dir)
	}
	shrunk := readResults(t, got)
	if shrunk.Valid != false || shrunk.LostUpdates.Lost < 1 {
		t.Errorf("the shrunk run: valid %v, lost %d; want invalid with a loss", shrunk.Valid, shrunk.LostUpdates.Lost)
	}

	f, err := experiment.Read(filepath.Join(out, "experiment.json"), experiment.Run)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Concurrency int    `json:"concurrency"`
		TimeLimit   string `json:"time_limit"`
		Fencing     string `json:"fencing"`
	}
	b, _ := os.ReadFile(f.Name)
	if err := json.Unmarshal(b, &e); err != nil || e.Concurrency != test.Concurrency || e.TimeLimit != test.TimeLimit.String() || e.Fencing != "none" {
		t.Errorf("experiment.json %s (%v): want the shrunk run's knobs", b, err)
	}
	// Its schedule is the shrunk run's: run -f replays what rerun does.
	if len(f.Schedule) != len(test.Rerun.Faults) {
		t.Errorf("experiment.json's schedule %v; want the shrunk run's %q", f.Schedule, test.Rerun.Faults)
	}
	for i := range min(len(f.Schedule), len(test.Rerun.Faults)) {
		if f.Schedule[i].String() != test.Rerun.Faults[i] {
			t.Errorf("experiment.json's step %d %q; the shrunk run replayed %q", i+1, f.Schedule[i], test.Rerun.Faults[i])
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "repro.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repro.md:\n%s", md)
	abs, _ := filepath.Abs(got)
	for _, want := range []string{"## Versions", "fencecheck rerun " + abs + " --runs 5", "pause-holder on the holder", "## Expected", "## Actual", "lost-updates", "--fencing token"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("repro.md lacks %q:\n%s", want, md)
		}
	}
	t.Logf("run and shrink took %s (%d shrink runs)", time.Since(start).Round(time.Second), log.Runs)
}
