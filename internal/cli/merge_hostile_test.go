package cli

// merge on hostile shards: a shard's matrix.json comes from another
// machine (a CI artifact) and is input like any other. These tests build
// the shards by hand and call the command in process; none needs Docker.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// testStamp is a run directory's stamp as store.NewRun names it.
const testStamp = "20261201T021700.000Z"

// stampN is the i-th stamp, a second apart.
func stampN(i int) string {
	return time.Date(2026, 12, 1, 2, 17, i, 0, time.UTC).Format(store.StampLayout)
}

// mkRun writes a run directory at dir/rel (rel with slashes): its
// history.jsonl, results.json and test.json, each saying tag.
func mkRun(t testing.TB, dir, rel, tag string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Join(p, store.LogsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		store.HistoryFile: `{"tag":"` + tag + `"}` + "\n",
		store.ResultsFile: `{"valid":"valid","workload":"lock-append","tag":"` + tag + `"}`,
		store.TestFile:    `{"name":"` + tag + `"}`,
	} {
		if err := os.WriteFile(filepath.Join(p, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// jsonCell is one cell of a hand-written matrix.json.
func jsonCell(i int, fencing, verdict, run string) string {
	runField := ""
	if run != "" {
		b, _ := json.Marshal(run)
		runField = `, "run": ` + string(b)
	}
	return fmt.Sprintf(`{"cell": %d, "target": "etcd", "resource": "lock-store", "nemesis": "pause-holder", "fencing": %q, "seed": %d,
		"verdict": %q, "must_be_valid": %v, "acknowledged": 40, "lost": 0%s}`, i, fencing, i+1, verdict, fencing != "none", runField)
}

// writeShardJSON writes dir/matrix.json: shard ("" for a whole matrix) of
// a matrix of total cells, holding cells.
func writeShardJSON(t testing.TB, dir, shard string, total int, cells ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"started": "2026-12-01T02:17:00Z", "args": ["--target", "etcd"], "strict": false, "exit_code": 0,
		"total_cells": %d, "shard": %q, "cells": [%s]}`, total, shard, strings.Join(cells, ",\n"))
	if err := os.WriteFile(filepath.Join(dir, matrix.File), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree records every path under root: a directory, a link's target or a
// file's content.
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	s := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s[p] = "-> " + target
		case d.IsDir():
			s[p] = "dir"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s[p] = string(b)
		default:
			s[p] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameTree reports the differences between two trees.
func sameTree(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if w, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared (%.60q)", what, p, v)
		} else if w != v {
			t.Errorf("%s: %s changed: %.60q -> %.60q", what, p, w, v)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: %s disappeared", what, p)
		}
	}
}

// A cell's run must be NAME/STAMP inside its shard: anything else is bad
// input (254), and merge reads nothing outside the shard and writes
// nothing at all.
func TestMergeRefusesRunPaths(t *testing.T) {
	for _, c := range []struct {
		name string
		run  string
		make string // a directory to create under the shard, so that today's code finds a run there ("" none)
	}{
		{"parent", "../secret", ""},
		{"parent inside the stamp", "etcd-x/../../secret", ""},
		{"absolute", "/etc", ""},
		{"latest", "latest", "latest"},
		{"one component", "etcd-x", "etcd-x"},
		{"three components", "etcd-x/" + testStamp + "/logs", "etcd-x/" + testStamp + "/logs"},
		{"empty component", "etcd-x//" + testStamp, "etcd-x/" + testStamp},
		{"trailing slash", "etcd-x/" + testStamp + "/", "etcd-x/" + testStamp},
		{"dot", "./etcd-x", "etcd-x"},
		{"not a stamp", "etcd-x/r0", "etcd-x/r0"},
		{"a stamp of another form", "etcd-x/20261201T021700Z", "etcd-x/20261201T021700Z"},
		{"a bad name", "-x/" + testStamp, "-x/" + testStamp},
		{"latest as the name", "latest/" + testStamp, "latest/" + testStamp},
		{"the output's matrix.json", "matrix.json/" + testStamp, ""},
		{"the output's JUnit file", "matrix-junit.xml/" + testStamp, "matrix-junit.xml/" + testStamp},
		{"the index", "index.html/" + testStamp, "index.html/" + testStamp},
		{"backslash", `etcd-x\` + testStamp, `etcd-x\` + testStamp},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := t.TempDir()
			shard, out := filepath.Join(p, "a", "shard"), filepath.Join(p, "b", "out")
			// What "../secret" reaches from the shard, and where today's
			// code writes it: p/b/secret.
			mkRun(t, filepath.Join(p, "a"), "secret", "SECRET")
			if c.make != "" {
				mkRun(t, shard, c.make, "made")
			}
			// The output already holds a run that latest points at.
			mkRun(t, out, "etcd-old/"+testStamp, "ORIGINAL")
			if err := os.Symlink("etcd-old/"+testStamp, filepath.Join(out, store.Latest)); err != nil {
				t.Fatal(err)
			}
			writeShardJSON(t, shard, "", 1, jsonCell(0, "token", "valid", c.run))
			before := tree(t, p)
			code, stdout, stderr := runInProcess("merge", "--results", out, shard)
			if code != exitBadArgs {
				t.Errorf("run %q: exit %d, want 254\n%s%s", c.run, code, stdout, stderr)
			}
			if !strings.Contains(stderr, "cell 0") {
				t.Errorf("stderr does not name the cell: %s", stderr)
			}
			sameTree(t, "merge --results "+out, before, tree(t, p))
		})
	}
}

// A symbolic link on a run's path in the shard is refused (254): merge
// never copies what a link leads to. A link inside a run is not copied.
func TestMergeRefusesSymlinkedRuns(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(t *testing.T, shard, elsewhere string)
	}{
		{"the name is a link", func(t *testing.T, shard, elsewhere string) {
			os.Symlink(elsewhere, filepath.Join(shard, "etcd-x"))
		}},
		{"the stamp is a link", func(t *testing.T, shard, elsewhere string) {
			os.MkdirAll(filepath.Join(shard, "etcd-x"), 0o755)
			os.Symlink(filepath.Join(elsewhere, testStamp), filepath.Join(shard, "etcd-x", testStamp))
		}},
		{"the stamp is a file", func(t *testing.T, shard, elsewhere string) {
			os.MkdirAll(filepath.Join(shard, "etcd-x"), 0o755)
			os.WriteFile(filepath.Join(shard, "etcd-x", testStamp), []byte("x"), 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := t.TempDir()
			shard, out, elsewhere := filepath.Join(p, "shard"), filepath.Join(p, "out"), filepath.Join(p, "elsewhere")
			secret := mkRun(t, elsewhere, testStamp, "SECRET")
			os.Chmod(filepath.Join(secret, store.HistoryFile), 0o600)
			writeShardJSON(t, shard, "", 1, jsonCell(0, "token", "valid", "etcd-x/"+testStamp))
			c.set(t, shard, elsewhere)
			before := tree(t, p)
			code, stdout, stderr := runInProcess("merge", "--results", out, shard)
			if code != exitBadArgs || !strings.Contains(stderr, "cell 0") {
				t.Errorf("exit %d, want 254 naming cell 0\n%s%s", code, stdout, stderr)
			}
			sameTree(t, "merge", before, tree(t, p))
		})
	}

	// Links inside a run (to a file, to a directory) are left out; the run's
	// own files are copied, not wider than they were.
	p := t.TempDir()
	shard, out, elsewhere := filepath.Join(p, "shard"), filepath.Join(p, "out"), filepath.Join(p, "elsewhere")
	mkRun(t, elsewhere, "x", "SECRET")
	run := mkRun(t, shard, "etcd-x/"+testStamp, "mine")
	os.Chmod(filepath.Join(run, store.HistoryFile), 0o600)
	os.Symlink(filepath.Join(elsewhere, "x", store.HistoryFile), filepath.Join(run, store.LogsDir, "node-1.log"))
	os.Symlink(filepath.Join(elsewhere, "x"), filepath.Join(run, "more"))
	writeShardJSON(t, shard, "", 1, jsonCell(0, "token", "valid", "etcd-x/"+testStamp))
	code, stdout, stderr := runInProcess("merge", "--results", out, shard)
	if code != exitValid {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for p, v := range tree(t, out) {
		if strings.Contains(v, "SECRET") || strings.HasPrefix(v, "-> ") {
			t.Errorf("%s: %.60q", p, v)
		}
	}
	got := filepath.Join(out, "etcd-x", testStamp)
	if st, err := os.Stat(filepath.Join(got, store.HistoryFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("history.jsonl: %v, %v (want 0600, as in the shard)", st, err)
	}
	for _, f := range []string{store.ResultsFile, store.TestFile} {
		if _, err := os.Stat(filepath.Join(got, f)); err != nil {
			t.Error(err)
		}
	}
}

// merge never writes through a link in the output and never changes a run
// already in it.
func TestMergeKeepsTheOutput(t *testing.T) {
	t.Run("the run is already in the output", func(t *testing.T) {
		p := t.TempDir()
		shard, out := filepath.Join(p, "shard"), filepath.Join(p, "out")
		mkRun(t, shard, "etcd-x/"+testStamp, "NEW")
		mkRun(t, out, "etcd-x/"+testStamp, "ORIGINAL")
		writeShardJSON(t, shard, "", 1, jsonCell(0, "token", "valid", "etcd-x/"+testStamp))
		before := tree(t, p)
		code, stdout, stderr := runInProcess("merge", "--results", out, shard)
		if code != exitBadArgs || !strings.Contains(stderr, "already") {
			t.Errorf("exit %d, want 254 saying the run is already there\n%s%s", code, stdout, stderr)
		}
		sameTree(t, "merge", before, tree(t, p))
	})
	t.Run("the run's name is a link in the output", func(t *testing.T) {
		p := t.TempDir()
		shard, out, elsewhere := filepath.Join(p, "shard"), filepath.Join(p, "out"), filepath.Join(p, "elsewhere")
		mkRun(t, shard, "etcd-x/"+testStamp, "NEW")
		os.MkdirAll(elsewhere, 0o755)
		os.MkdirAll(out, 0o755)
		os.Symlink(elsewhere, filepath.Join(out, "etcd-x"))
		writeShardJSON(t, shard, "", 1, jsonCell(0, "token", "valid", "etcd-x/"+testStamp))
		before := tree(t, p)
		code, stdout, stderr := runInProcess("merge", "--results", out, shard)
		if code != exitBadArgs || !strings.Contains(stderr, "link") {
			t.Errorf("exit %d, want 254 saying it is a link\n%s%s", code, stdout, stderr)
		}
		sameTree(t, "merge", before, tree(t, p))
	})
	t.Run("the output's files are links", func(t *testing.T) {
		p := t.TempDir()
		shard, out := filepath.Join(p, "shard"), filepath.Join(p, "out")
		mkRun(t, shard, "etcd-x/"+testStamp, "NEW")
		os.MkdirAll(out, 0o755)
		victims := filepath.Join(p, "victims")
		os.MkdirAll(victims, 0o755)
		for _, f := range []string{matrix.File, matrix.JUnitFile, "index.html"} {
			os.WriteFile(filepath.Join(victims, f), []byte("VICTIM"), 0o644)
			os.Symlink(filepath.Join(victims, f), filepath.Join(out, f))
		}
		writeShardJSON(t, shard, "", 1, jsonCell(0, "token", "valid", "etcd-x/"+testStamp))
		before := tree(t, victims)
		code, stdout, stderr := runInProcess("merge", "--results", out, shard)
		if code != exitValid {
			t.Errorf("exit %d\n%s%s", code, stdout, stderr)
		}
		sameTree(t, "the links' targets", before, tree(t, victims))
		for _, f := range []string{matrix.File, matrix.JUnitFile, "index.html"} {
			if st, err := os.Lstat(filepath.Join(out, f)); err != nil || !st.Mode().IsRegular() {
				t.Errorf("%s: %v %v, want a regular file in place of the link", f, st, err)
			}
		}
	})
	t.Run("two cells, one run", func(t *testing.T) {
		p := t.TempDir()
		shard, out := filepath.Join(p, "shard"), filepath.Join(p, "out")
		mkRun(t, shard, "etcd-x/"+testStamp, "NEW")
		writeShardJSON(t, shard, "", 2, jsonCell(0, "token", "valid", "etcd-x/"+testStamp), jsonCell(1, "cas", "valid", "etcd-x/"+testStamp))
		before := tree(t, p)
		code, stdout, stderr := runInProcess("merge", "--results", out, shard)
		if code != exitBadArgs {
			t.Errorf("exit %d, want 254\n%s%s", code, stdout, stderr)
		}
		sameTree(t, "merge", before, tree(t, p))
	})
}

// merge derives what it writes from the cells present, and a count they do
// not bear out is bad input (254); a merge with nothing to judge exits as
// matrix does (254); a cell whose run directory is missing is bad input
// naming the shard and the cell.
func TestMergeChecksClaimedCounts(t *testing.T) {
	run0 := "etcd-x/" + stampN(0)
	for _, c := range []struct {
		name  string
		shard string
		total int
		cells []string
		want  []string // on stderr
	}{
		{"twenty thousand cells claimed, one present", "", 20_000, []string{jsonCell(0, "token", "valid", run0)}, []string{"20000"}},
		{"fifty claimed by a whole matrix, one present", "", 50, []string{jsonCell(0, "token", "valid", run0)}, []string{"50"}},
		{"a shard 1/2 of 4 with one of its two", "1/2", 4, []string{jsonCell(0, "token", "valid", run0)}, []string{"1/2"}},
		{"a shard 1/2 with a cell of shard 2/2", "1/2", 4, []string{jsonCell(0, "token", "valid", run0), jsonCell(1, "token", "valid", "")}, []string{"cell 1"}},
		{"the same cell twice", "", 2, []string{jsonCell(0, "token", "valid", run0), jsonCell(0, "token", "valid", "")}, []string{"cell 0"}},
		{"a negative count", "", -1, nil, []string{"-1"}},
		{"a shard that is not I/N", "x/y", 1, []string{jsonCell(0, "token", "valid", run0)}, []string{"x/y"}},
		{"no cell at all", "", 0, nil, []string{"no cell would be judged"}},
		{"no cell to judge", "", 2, []string{jsonCell(0, "none", "invalid", run0), jsonCell(1, "none", "valid", "")}, []string{"no cell would be judged"}},
		{"the run directory is missing", "", 2, []string{jsonCell(0, "token", "valid", run0), jsonCell(1, "token", "valid", "etcd-y/"+stampN(1))}, []string{"cell 1", "etcd-y/" + stampN(1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := t.TempDir()
			shard, out := filepath.Join(p, "shard"), filepath.Join(p, "out")
			mkRun(t, shard, run0, "mine")
			writeShardJSON(t, shard, c.shard, c.total, c.cells...)
			before := tree(t, p)
			code, stdout, stderr := runInProcess("merge", "--results", out, shard)
			if code != exitBadArgs {
				t.Errorf("exit %d, want 254 before anything is written\n%.2000s%s", code, stdout, stderr)
			}
			for _, w := range append(c.want, shard) {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, stderr)
				}
			}
			sameTree(t, "merge", before, tree(t, p))
		})
	}

	// Shards as matrix writes them: 1/3 and 3/3 of 5 cells, 2/3 missing
	// (its cells are not run: unknown), and a shard 4/8 with none of its
	// own.
	p := t.TempDir()
	s1, s3, s4, out := filepath.Join(p, "s1"), filepath.Join(p, "s3"), filepath.Join(p, "s4"), filepath.Join(p, "out")
	for _, i := range []int{0, 3} {
		mkRun(t, s1, "etcd-x/"+stampN(i), "mine")
	}
	mkRun(t, s3, "etcd-x/"+stampN(2), "mine")
	writeShardJSON(t, s1, "1/3", 5, jsonCell(0, "token", "valid", "etcd-x/"+stampN(0)), jsonCell(3, "token", "valid", "etcd-x/"+stampN(3)))
	writeShardJSON(t, s3, "3/3", 5, jsonCell(2, "token", "valid", "etcd-x/"+stampN(2)))
	writeShardJSON(t, s4, "6/8", 5)
	code, stdout, stderr := runInProcess("merge", "--results", out, s1, s3, s4)
	if code != exitUnknown {
		t.Fatalf("exit %d, want 2 (cells 1 and 4 not run)\n%s%s", code, stdout, stderr)
	}
	m := readMatrix(t, out)
	if len(m.Cells) != 5 || m.TotalCells != 5 || m.Cells[1].Verdict != "not run" || m.Cells[4].Verdict != "not run" || m.Cells[3].Run != "etcd-x/"+stampN(3) {
		t.Errorf("merged: %+v", m)
	}
}
