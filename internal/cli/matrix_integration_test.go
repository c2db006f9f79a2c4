package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

// A matrix on real etcd: unfenced and token-fenced holder pauses, one run
// each. matrix.json agrees with every run's own results.json, the exit code
// follows the fenced cell, and the index lists both runs.
//
// The same matrix in two shards (--shard 1/2 and 2/2, run beside it), joined
// by merge, equals it cell by cell, with one JUnit file and one index.
func TestMatrixOnEtcd(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	args := []string{"matrix", "--target", "etcd", "--fencing", "none,token", "--nemesis", "pause-holder",
		"--time-limit", "15s", "--seed", "3", "--quiet"}
	shards := []string{t.TempDir(), t.TempDir()}
	var r cliResult
	t.Run("runs", func(t *testing.T) {
		t.Run("whole", func(t *testing.T) {
			t.Parallel()
			r = runCLI(t, nil, append(args, "--results", res)...)
		})
		for i, dir := range shards {
			t.Run(fmt.Sprintf("shard-%d", i+1), func(t *testing.T) {
				t.Parallel()
				s := runCLI(t, nil, append(args, "--results", dir, "--shard", fmt.Sprintf("%d/2", i+1))...)
				if s.code != exitValid && s.code != exitInvalid {
					t.Errorf("shard %d/2: exit %d: %s", i+1, s.code, lastLines(s.stderr, 10))
				}
			})
		}
	})
	t.Logf("matrix: exit %d in %s\n%s", r.code, r.elapsed.Round(1e9), r.stdout)
	defer func() {
		merged := t.TempDir()
		m := runCLI(t, nil, "merge", "--results", merged, shards[0], shards[1])
		t.Logf("merge: exit %d\n%s", m.code, m.stdout)
		whole, got := readMatrix(t, res), readMatrix(t, merged)
		if m.code != whole.ExitCode || len(got.Cells) != len(whole.Cells) {
			t.Fatalf("merged: exit %d, %d cells; whole: exit %d, %d cells", m.code, len(got.Cells), whole.ExitCode, len(whole.Cells))
		}
		for i, w := range whole.Cells {
			g := got.Cells[i]
			if matrix.CellKey(g) != matrix.CellKey(w) || g.Verdict != w.Verdict || g.MustBeValid != w.MustBeValid {
				t.Errorf("cell %d: merged %s %s, whole %s %s", i, matrix.CellKey(g), g.Verdict, matrix.CellKey(w), w.Verdict)
			}
			if _, err := os.Stat(filepath.Join(merged, g.Run, "results.json")); err != nil {
				t.Errorf("cell %d: run not in the merged directory: %v", i, err)
			}
		}
		for _, f := range []string{matrix.JUnitFile, "index.html"} {
			if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
				t.Error(err)
			}
		}
	}()

	sum := readMatrix(t, res)
	if len(sum.Cells) != 2 || sum.ExitCode != r.code {
		t.Fatalf("%d cells, exit %d recorded, %d returned", len(sum.Cells), sum.ExitCode, r.code)
	}
	for _, c := range sum.Cells {
		if c.Target != "etcd" || c.Seed != 3 || c.MustBeValid != (c.Fencing == "token") {
			t.Errorf("cell %+v", c)
		}
		if c.RunDir == "" {
			t.Errorf("cell %s: no run (%s)", c.Fencing, c.Error)
			continue
		}
		got := readResults(t, c.RunDir)
		want := map[string]any{"valid": true, "invalid": false, "unknown": "unknown"}[c.Verdict]
		if got.Valid != want || got.LostUpdates.Lost != c.Lost || got.LostUpdates.Acknowledged != c.Acknowledged || got.FenceRejections != c.FenceRejections {
			t.Errorf("cell %s says %s, %d/%d lost, %d rejections; results.json %v, %d/%d, %d", c.Fencing, c.Verdict, c.Lost, c.Acknowledged,
				c.FenceRejections, got.Valid, got.LostUpdates.Lost, got.LostUpdates.Acknowledged, got.FenceRejections)
		}
		// Fenced etcd stays valid (the README's 5-of-5 table); whether a
		// 15 s run's pauses hit a critical section is left to those runs.
		if c.Fencing == "token" && c.Verdict != "valid" {
			t.Errorf("token-fenced cell: %s, want valid", c.Verdict)
		}
	}
	if r.code != matrix.Exit(sum.Cells, false) || r.code != exitValid {
		t.Errorf("exit %d, want %d (token cell valid)", r.code, exitValid)
	}
	index, err := os.ReadFile(filepath.Join(res, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd-pause-holder-none", "etcd-pause-holder-token"} {
		if !strings.Contains(string(index), name) {
			t.Errorf("index.html does not list %s", name)
		}
	}
	if !strings.Contains(r.stdout, "PASS") || !strings.Contains(r.stdout, "pause-holder") {
		t.Errorf("table:\n%s", r.stdout)
	}
	assertRunsGone(t, res)
}

// The register axis on real etcd: linearizable and serializable reads
// under partitions of the leader. The linearizable cell must be valid (etcd
// promises it) and decides the exit code; the serializable one is
// reported, whatever it finds.
func TestMatrixRegisterAxis(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "matrix", "--target", "etcd", "--workload", "register", "--nemesis", "partition:leader",
		"--nemesis-interval", "1s", "--time-limit", "12s", "--seed", "2", "--results", res, "--quiet")
	t.Logf("matrix: exit %d in %s\n%s", r.code, r.elapsed.Round(1e9), r.stdout)
	if r.code != exitValid {
		t.Errorf("exit %d, want 0 (linearizable reads valid)", r.code)
	}
	sum := readMatrix(t, res)
	modes := map[string]trends.MatrixCell{}
	for _, c := range sum.Cells {
		modes[c.ReadMode] = c
		if c.Workload != "register" || c.RunDir == "" {
			t.Errorf("cell %+v", c)
			continue
		}
		if info := readTestInfo(t, c.RunDir); info.Workload != "register" || info.ReadMode != c.ReadMode {
			t.Errorf("cell %s: test.json workload %q read mode %q", c.ReadMode, info.Workload, info.ReadMode)
		}
	}
	lin, ser := modes["linearizable"], modes["serializable"]
	if len(sum.Cells) != 2 || !lin.MustBeValid || ser.MustBeValid || lin.Verdict != "valid" {
		t.Errorf("cells %+v", sum.Cells)
	}
	if !strings.Contains(r.stdout, "linearizable") || !strings.Contains(r.stdout, "not judged: register runs") {
		t.Errorf("table:\n%s", r.stdout)
	}
	assertRunsGone(t, res)
}

// A fenced cell that is invalid fails the matrix: Redis without persistence,
// restarted by a crash, hands out tokens again from 1, and the token checker
// catches the reuse (as TestRedisTokenReuse shows for one run).
func TestMatrixFailsWhenAFenceFails(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "matrix", "--target", "redis-nopersist", "--nodes", "1", "--fencing", "token", "--nemesis", "kill",
		"--nemesis-interval", "2s", "--time-limit", "20s", "--seed", "7", "--results", res, "--quiet")
	t.Logf("matrix: exit %d in %s\n%s", r.code, r.elapsed.Round(1e9), r.stdout)
	if r.code != exitInvalid || !strings.Contains(r.stdout, "FAIL") {
		t.Errorf("exit %d, want 1 with FAIL in the table", r.code)
	}
	sum := readMatrix(t, res)
	if len(sum.Cells) != 1 || sum.Cells[0].Verdict != "invalid" || !sum.Cells[0].MustBeValid || sum.ExitCode != exitInvalid {
		t.Errorf("summary %+v", sum)
	}
	assertRunsGone(t, res)
}

// Ctrl-C during a matrix's first cell heals and tears that run down, runs
// no further cell, leaves matrix.json, and exits 2: nothing was proven.
func TestMatrixInterrupted(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	cmd := exec.Command(fencecheckBinary(t), "matrix", "--target", "etcd", "--fencing", "token,none",
		"--nemesis-interval", "1s", "--time-limit", "60s", "--results", res, "--quiet")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForActiveFault(t, res)
	start := time.Now()
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	t.Logf("Ctrl-C: exit after %s (%v)\n%s", time.Since(start).Round(time.Millisecond), err, out.String())
	if cmd.ProcessState.ExitCode() != exitUnknown {
		t.Errorf("exit %d, want 2", cmd.ProcessState.ExitCode())
	}
	sum := readMatrix(t, res)
	if len(sum.Cells) != 2 || sum.Cells[0].Verdict != "unknown" || sum.Cells[1].Verdict != "not run" || sum.ExitCode != exitUnknown {
		t.Errorf("summary %+v", sum)
	}
	assertRunsGone(t, res)
}

// readMatrix reads the matrix.json of a results directory.
func readMatrix(t *testing.T, results string) trends.Matrix {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(results, matrix.File))
	if err != nil {
		t.Fatal(err)
	}
	var sum trends.Matrix
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}
