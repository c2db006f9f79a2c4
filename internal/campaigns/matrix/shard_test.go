package matrix

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func TestParseShard(t *testing.T) {
	for _, ok := range []string{"1/1", "2/4", "1000/1000"} {
		if _, err := ParseShard(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0/2", "3/2", "1/0", "a/b", "1", "1/1001", "-1/2"} {
		if _, err := ParseShard(bad); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
	// Every cell is in exactly one shard, and the shards differ in size by
	// at most one.
	for n := 1; n <= 7; n++ {
		sizes := make([]int, n)
		for cell := 0; cell < 24; cell++ {
			in := 0
			for i := 1; i <= n; i++ {
				if (Shard{I: i, N: n}).Has(cell) {
					in++
					sizes[i-1]++
				}
			}
			if in != 1 {
				t.Fatalf("N=%d: cell %d in %d shards", n, cell, in)
			}
		}
		if slices.Max(sizes)-slices.Min(sizes) > 1 {
			t.Errorf("N=%d: shard sizes %v", n, sizes)
		}
	}
	if got := withoutShard([]string{"--target", "etcd", "--shard", "2/3", "--results=/x", "-shard=1/2", "--fencing", "none"}); !slices.Equal(got, []string{"--target", "etcd", "--fencing", "none"}) {
		t.Errorf("withoutShard: %v", got)
	}
}

// writeShard writes a shard's results directory as matrix --shard sh
// writes it ("" for a whole matrix): matrix.json with cells and, for each
// cell that ran, a run directory at its Run path.
func writeShard(t *testing.T, sh string, total int, cells ...trends.MatrixCell) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range cells {
		if c.Run != "" {
			if err := os.MkdirAll(filepath.Join(dir, c.Run), 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, c.Run, "test.json"), []byte(`{"name":"`+c.Target+`"}`), 0o644)
		}
	}
	if err := Write(dir, trends.Matrix{Args: []string{"--shard", "x", "--target", "etcd"}, Cells: cells, TotalCells: total, Shard: sh}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func cell(i int, fencing, verdict string) trends.MatrixCell {
	return trends.MatrixCell{Cell: i, Target: "etcd", Resource: "lock-store", Nemesis: "pause-holder", Fencing: fencing, Seed: 1,
		Verdict: verdict, MustBeValid: fencing != "none", Run: "etcd-" + fencing + "/" + stampN(i)}
}

func TestMergeShards(t *testing.T) {
	a := writeShard(t, "1/2", 4, cell(0, "none", "invalid"), cell(2, "cas", "valid"))
	b := writeShard(t, "2/2", 4, cell(1, "token", "valid"), cell(3, "token", "valid"))
	out := filepath.Join(t.TempDir(), "merged")
	m, err := Merge(out, []string{b, a}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if m.ExitCode != ExitValid || len(m.Cells) != 4 || !slices.Equal(m.Args, []string{"--target", "etcd"}) {
		t.Fatalf("merged: exit %d, %d cells, args %v", m.ExitCode, len(m.Cells), m.Args)
	}
	for i, c := range m.Cells {
		if c.Cell != i {
			t.Errorf("cell %d at position %d", c.Cell, i)
		}
		if _, err := os.Stat(filepath.Join(out, c.Run, "test.json")); err != nil {
			t.Errorf("run of cell %d not copied: %v", i, err)
		}
	}
	var disk trends.Matrix
	b2, _ := os.ReadFile(filepath.Join(out, File))
	if err := json.Unmarshal(b2, &disk); err != nil || len(disk.Cells) != 4 || disk.TotalCells != 4 {
		t.Fatalf("matrix.json: %v %+v", err, disk)
	}
	var junit struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name string `xml:"name,attr"`
		} `xml:"testcase"`
	}
	jb, _ := os.ReadFile(filepath.Join(out, JUnitFile))
	if err := xml.Unmarshal(jb, &junit); err != nil || junit.Tests != 4 || junit.Failures != 0 || len(junit.Cases) != 4 {
		t.Fatalf("junit: %v %+v", err, junit)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Fatal(err)
	}

	// A fenced cell that is invalid fails the merged matrix and its JUnit.
	c := writeShard(t, "2/2", 4, cell(1, "token", "invalid"), cell(3, "token", "valid"))
	m, err = Merge(t.TempDir(), []string{a, c}, io.Discard)
	if err != nil || m.ExitCode != ExitInvalid {
		t.Fatalf("invalid fenced cell: exit %d, %v", m.ExitCode, err)
	}

	// A shard that is missing leaves its cells not run: unknown.
	m, err = Merge(t.TempDir(), []string{a}, io.Discard)
	if err != nil || m.ExitCode != ExitUnknown || m.Cells[1].Verdict != "not run" {
		t.Fatalf("missing shard: exit %d, %+v, %v", m.ExitCode, m.Cells, err)
	}

	// A merged directory is a shard too: its cells no shard ran are filled
	// in by the shard that has them.
	half := filepath.Join(t.TempDir(), "half")
	if m, err = Merge(half, []string{a}, io.Discard); err != nil || m.ExitCode != ExitUnknown {
		t.Fatalf("half: exit %d, %v", m.ExitCode, err)
	}
	m, err = Merge(t.TempDir(), []string{half, b}, io.Discard)
	if err != nil || m.ExitCode != ExitValid || m.Cells[1].Verdict != "valid" || m.Cells[0].Verdict != "invalid" {
		t.Fatalf("a merged directory and the other shard: exit %d, %+v, %v", m.ExitCode, m.Cells, err)
	}

	// Shards of different matrices are refused.
	other := writeShard(t, "2/6", 6, cell(1, "token", "valid"))
	if _, err := Merge(t.TempDir(), []string{a, other}, io.Discard); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "not shards of one matrix") {
		t.Fatalf("different matrices: %v", err)
	}
	clash := writeShard(t, "1/4", 4, cell(0, "token", "valid"))
	if _, err := Merge(t.TempDir(), []string{a, clash}, io.Discard); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "not shards of one matrix") {
		t.Fatalf("clashing cells: %v", err)
	}
	if _, err := Merge(t.TempDir(), []string{t.TempDir()}, io.Discard); !errors.Is(err, errUsage) {
		t.Fatalf("no matrix.json: %v", err)
	}
}

// merge's run stamps are the stamps store.NewRun gives runs.
func TestRunStampLayout(t *testing.T) {
	root := t.TempDir()
	r, err := store.NewRun(root, "etcd-x", time.Date(2026, 12, 1, 2, 17, 0, 123e6, time.FixedZone("x", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(root, r.Dir)
	if name, stamp, err := splitRunPath(filepath.ToSlash(rel)); err != nil || name != "etcd-x" || stamp != "20261201T011700.123Z" {
		t.Errorf("%s: %q %q %v", rel, name, stamp, err)
	}
}

// stampN is the i-th stamp of a run directory, a second apart.
func stampN(i int) string {
	return time.Date(2026, 12, 1, 2, 17, i, 0, time.UTC).Format(store.StampLayout)
}
