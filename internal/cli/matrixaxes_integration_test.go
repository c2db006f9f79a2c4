package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A knob's list on real etcd: --ttl 1s,2s is two cells, each run with its
// TTL (test.json's ttl), named by it (its run directory) and recorded by it
// (matrix.json's axes), with identities of their own. The cells are
// token-fenced: a matrix of unfenced cells only would judge none (exit 254).
func TestMatrixTTLAxis(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "matrix", "--target", "etcd", "--fencing", "token", "--ttl", "1s,2s", "--time-limit", "8s",
		"--seed", "5", "--results", res, "--quiet")
	t.Logf("matrix: exit %d in %s\n%s", r.code, r.elapsed.Round(1e9), r.stdout)
	if r.code != exitValid {
		t.Errorf("exit %d, want 0 (token-fenced etcd is valid): %s", r.code, lastLines(r.stderr, 10))
	}
	sum := readMatrix(t, res)
	if len(sum.Cells) != 2 || sum.Cells[0].ID() == sum.Cells[1].ID() {
		t.Fatalf("cells %+v: want two, of distinct identities", sum.Cells)
	}
	for i, want := range []string{"1s", "2s"} {
		c := sum.Cells[i]
		if c.Axes["ttl"] != want || len(c.Axes) != 1 || c.RunDir == "" || c.Seed != 5 {
			t.Errorf("cell %d: axes %v, run %q, seed %d (%s)", i, c.Axes, c.RunDir, c.Seed, c.Error)
			continue
		}
		if info := readTestInfo(t, c.RunDir); info.TTL != want {
			t.Errorf("cell %d: test.json ttl %q, want %s", i, info.TTL, want)
		}
		if name := filepath.Base(filepath.Dir(c.RunDir)) + "/" + filepath.Base(c.RunDir); !strings.Contains(name, "-ttl-"+want) {
			t.Errorf("cell %d: run directory %s, want its name to end in -ttl-%s", i, c.RunDir, want)
		}
		if !strings.Contains(r.stdout, "etcd ttl="+want) {
			t.Errorf("table lacks etcd ttl=%s:\n%s", want, r.stdout)
		}
	}
	assertRunsGone(t, res)
}
