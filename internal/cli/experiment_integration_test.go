package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// readTest reads a run directory's test.json.
func readTest(t *testing.T, dir string) store.TestInfo {
	t.Helper()
	var test store.TestInfo
	b, err := os.ReadFile(filepath.Join(dir, store.TestFile))
	if err != nil || json.Unmarshal(b, &test) != nil {
		t.Fatalf("%s: test.json: %v", dir, err)
	}
	return test
}

// run -f on real etcd: the file's knobs are the run's, a flag given on the
// command line replaces one, and the test.json the run writes is a run
// file that gives its configuration back.
func TestRunFileOnEtcd(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	file := writeFile(t, "experiment.yaml", `# a short token-fenced run
target: etcd
workload: lock-append
fencing: token
nemesis: pause-holder
concurrency: 3
time_limit: 6s
seed: 3
`)
	res := t.TempDir()
	r := runCLI(t, nil, "run", "-f", file, "--concurrency", "2", "--results", res, "--quiet")
	// Token fencing stops every stale write: valid, or unknown if no
	// fault reached a critical section in 6 s; never invalid.
	if r.code != exitValid && r.code != exitUnknown {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, lastLines(r.stderr, 10))
	}
	dir := filepath.Join(res, store.Latest)
	test := readTest(t, dir)
	if test.Target != "etcd" || test.Fencing != "token" || test.Nemesis != "pause-holder" || test.TimeLimit != 6*time.Second || test.Seed != 3 || test.Concurrency != 2 {
		t.Errorf("test.json: target %s, fencing %s, nemesis %s, time limit %s, seed %d, concurrency %d; want the file's, concurrency the flag's 2",
			test.Target, test.Fencing, test.Nemesis, test.TimeLimit, test.Seed, test.Concurrency)
	}
	// The run's own test.json is a run file: it gives the run back.
	cfg, _, _, err := runConfig([]string{"-f", filepath.Join(dir, store.TestFile)}, os.Stderr, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Spec.ForWorkload(), test.Spec; cfg.Name != want.Name || cfg.Seed != want.Seed || cfg.TTL != want.TTL || cfg.OpTimeout != want.OpTimeout ||
		cfg.Concurrency != want.Concurrency || cfg.Fencing != want.Fencing || got.TimeLimit != want.TimeLimit {
		t.Errorf("run -f of the run's test.json: %+v\nwant %+v", got, want)
	}
}

// run -f with a schedule on real etcd: the run replays the file's one step
// (a pause of the holder, held 3 s) and draws no fault of its own, and
// test.json says whose schedule it replayed, as a rerun's does.
func TestRunFileScheduleOnEtcd(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	file := writeFile(t, "experiment.yaml", `target: etcd
fencing: none
nemesis: pause-holder,kill
concurrency: 2
time_limit: 12s
seed: 5
schedule:
  - {fault: pause-holder, after: 1s, hold: 3s, role: holder, nodes: [w1]}
`)
	res := t.TempDir()
	r := runCLI(t, nil, "run", "-f", file, "--results", res, "--quiet")
	if r.code != exitValid && r.code != exitInvalid && r.code != exitUnknown {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, lastLines(r.stderr, 10))
	}
	dir := filepath.Join(res, store.Latest)
	got := readResults(t, dir)
	if len(got.Faults) != 1 {
		t.Fatalf("%d faults: %+v; want the schedule's one", len(got.Faults), got.Faults)
	}
	f := got.Faults[0]
	if f.Fault != "pause-holder" || f.Hold.D() != 3*time.Second || f.Replay != "step 1 of 1" {
		t.Errorf("fault %s held %s, replay %q; want pause-holder held 3s, step 1 of 1", f.Fault, f.Hold, f.Replay)
	}
	test := readTest(t, dir)
	if test.Rerun == nil || test.Rerun.Of != file || test.Rerun.Schedule != "replayed" || len(test.Rerun.Faults) != 1 {
		t.Errorf("test.json rerun %+v; want the replay of %s's one step", test.Rerun, file)
	}
}

// matrix -f on real etcd: a two-cell matrix (fencing none and token) from a
// file, each cell run with the file's knobs.
func TestMatrixFileOnEtcd(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	file := writeFile(t, "nightly.yaml", `target: etcd
fencing: [none, token]
nemesis: pause-holder
time_limit: 6s
concurrency: 3
seed: 5
`)
	res := t.TempDir()
	r := runCLI(t, nil, "matrix", "-f", file, "--results", res, "--quiet")
	if r.code != exitValid && r.code != exitUnknown {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, lastLines(r.stderr, 10))
	}
	sum := readMatrix(t, res)
	if len(sum.Cells) != 2 {
		t.Fatalf("%d cells, want 2: %+v", len(sum.Cells), sum.Cells)
	}
	for i, want := range []string{"none", "token"} {
		c := sum.Cells[i]
		if c.Fencing != want || c.RunDir == "" || c.Seed != 5 {
			t.Errorf("cell %d: fencing %s, seed %d, run %q (%s %s); want fencing %s, seed 5", i, c.Fencing, c.Seed, c.RunDir, c.Verdict, c.Error, want)
			continue
		}
		if test := readTest(t, c.RunDir); test.TimeLimit != 6*time.Second || test.Concurrency != 3 {
			t.Errorf("cell %d: time limit %s, concurrency %d; want the file's 6s and 3", i, test.TimeLimit, test.Concurrency)
		}
	}
	if sum.Cells[1].Verdict == "invalid" {
		t.Errorf("the token cell is invalid")
	}
}

// run -f of a stored run's test.json (testdata/runs): the run it records,
// its seed and derived durations, with a flag over it (a shorter time
// limit) and its results where the command line says.
func TestRunFileStoredTestJSON(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	stored := filepath.Join("testdata", "runs", "etcd-token-pause-holder", store.TestFile)
	res := t.TempDir()
	r := runCLI(t, nil, "run", "-f", stored, "--time-limit", "6s", "--results", res, "--quiet")
	if r.code != exitValid && r.code != exitUnknown {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, lastLines(r.stderr, 10))
	}
	was := readTest(t, filepath.Dir(stored))
	now := readTest(t, filepath.Join(res, store.Latest))
	if now.Seed != was.Seed || now.Fencing != was.Fencing || now.TTL != was.TTL || now.AcquireTimeout != was.AcquireTimeout ||
		now.OpTimeout != was.OpTimeout || now.Nodes != was.Nodes || now.Name != was.Name || now.TimeLimit != 6*time.Second {
		t.Errorf("test.json %+v\nwant the stored run's %+v with time limit 6s", now.Spec, was.Spec)
	}
	if now.Rerun != nil {
		t.Errorf("run -f is not a rerun: %+v", now.Rerun)
	}
}
