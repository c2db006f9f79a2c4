package cli

// Fuzz targets for the two commands that read matrix.json files made
// elsewhere. Their seeds run in every go test; fuzz them with
//
//	go test -run '^$' -fuzz FuzzMergeInput ./internal/cli/
//	go test -run '^$' -fuzz FuzzTrendsNight ./internal/cli/

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// FuzzMergeInput: a shard's matrix.json, whatever its bytes, never makes
// merge panic, exit 255 or change anything outside its output directory,
// never changes a run already in the output and never leaves a link of
// its own in it. Beside the shard lie a run outside it ("../secret/..."),
// a link in the shard to a directory outside it ("linked"); the output
// holds a run (etcd-old/STAMP, latest points at it) and a link to a
// directory outside it (etcd-y).
func FuzzMergeInput(f *testing.F) {
	run := "etcd-x/" + testStamp
	for _, seed := range []string{
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", run) + `]}`,
		`{"total_cells": 2, "shard": "1/2", "cells": [` + jsonCell(0, "token", "valid", run) + `]}`,
		`{"total_cells": 2, "shard": "merged from 2 shard directories", "cells": [` + jsonCell(0, "token", "valid", run) + `,` + jsonCell(1, "none", "invalid", "") + `]}`,
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", "../secret/"+testStamp) + `]}`,
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", "../secret") + `]}`,
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", "linked/"+testStamp) + `]}`,
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", "latest") + `]}`,
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", "etcd-old/"+testStamp) + `]}`,
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", "etcd-y/"+testStamp) + `]}`,
		`{"total_cells": 1, "cells": [` + jsonCell(0, "token", "valid", "/etc") + `]}`,
		`{"total_cells": 1000000, "cells": [` + jsonCell(0, "token", "valid", run) + `]}`,
		`{"total_cells": 0, "cells": []}`,
		`{"total_cells": -3, "cells": [{"cell": -1}]}`,
		`{"total_cells": 1, "cells": [{"cell": 0, "run": "etcd-x/` + testStamp + `", "run_dir": "/etc"}]}`,
		`{"total_cells": 1, "cells": [`,
		``,
		`null`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := t.TempDir()
		// The output one level deeper than the shard: "../secret" leads
		// to different places from each.
		shard, out := filepath.Join(p, "shard"), filepath.Join(p, "o", "out")
		mkRun(t, shard, "etcd-x/"+testStamp, "mine")
		mkRun(t, p, "secret/"+testStamp, "SECRET")
		mkRun(t, p, "elsewhere/"+testStamp, "ELSEWHERE")
		os.Symlink(filepath.Join(p, "secret"), filepath.Join(shard, "linked"))
		mkRun(t, out, "etcd-old/"+testStamp, "ORIGINAL")
		os.Symlink("etcd-old/"+testStamp, filepath.Join(out, store.Latest))
		os.Symlink(filepath.Join(p, "elsewhere"), filepath.Join(out, "etcd-y"))
		if err := os.WriteFile(filepath.Join(shard, matrix.File), data, 0o644); err != nil {
			t.Fatal(err)
		}
		outside := func() map[string]string {
			s := tree(t, p)
			for k := range s {
				if k == out || strings.HasPrefix(k, out+string(filepath.Separator)) {
					delete(s, k)
				}
			}
			return s
		}
		before := outside()
		kept := tree(t, filepath.Join(out, "etcd-old"))

		code, stdout, stderr := runInProcess("merge", "--results", out, shard)
		if !slices.Contains([]int{exitValid, exitInvalid, exitUnknown, exitBadArgs}, code) {
			t.Errorf("exit %d\n%.2000s%.2000s", code, stdout, stderr)
		}
		sameTree(t, "outside the output", before, outside())
		sameTree(t, "the run already in the output", kept, tree(t, filepath.Join(out, "etcd-old")))
		if target, err := os.Readlink(filepath.Join(out, store.Latest)); err != nil || target != "etcd-old/"+testStamp {
			t.Errorf("latest: %q, %v", target, err)
		}
		filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == filepath.Join(out, store.Latest) || path == filepath.Join(out, "etcd-y") {
				return nil
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				t.Errorf("%s in the output: %s", d.Type(), path)
			}
			return nil
		})
	})
}

// FuzzTrendsNight: the newest night's matrix.json (by name; an older
// night beside it is valid), whatever its bytes, never makes trends panic
// or exit 254/255, and trends says PASS only when that night was read,
// has a start and cells.
func FuzzTrendsNight(f *testing.F) {
	t0 := time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC)
	dir := f.TempDir()
	good, err := os.ReadFile(filepath.Join(writeNight(f, dir, "n", t0.Add(24*time.Hour), nightCell("redis", "token", "valid", 0), nightCell("redis", "none", "invalid", 2)), matrix.File))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(good),
		string(good[:len(good)/2]),
		string(good[:len(good)-2]),
		``,
		`{}`,
		`null`,
		`{"started": "2026-12-02T02:17:00Z", "cells": []}`,
		`{"started": "2026-12-02T02:17:00Z", "cells": [{"cell": 0, "verdict": "not run", "must_be_valid": true}]}`,
		`{"cells": [{"cell": 0, "target": "redis", "resource": "lock-store", "nemesis": "pause-holder,kill", "fencing": "token", "verdict": "valid", "must_be_valid": true}]}`,
		`{"started": "2020-01-01T00:00:00Z", "cells": [{"cell": 0, "target": "redis", "resource": "lock-store", "nemesis": "pause-holder,kill", "fencing": "token", "verdict": "valid", "must_be_valid": true}]}`,
		`{"started": "2026-12-02T02:17:00Z", "cells": [{"cell": 0, "target": "redis", "resource": "lock-store", "nemesis": "pause-holder,kill", "fencing": "token", "verdict": "invalid", "must_be_valid": true}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		writeNight(t, root, "2026-12-01", t0, nightCell("redis", "token", "valid", 0), nightCell("redis", "none", "invalid", 2))
		dir := filepath.Join(root, "2026-12-02")
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, matrix.File), data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runInProcess("trends", root)
		if !slices.Contains([]int{exitValid, exitInvalid, exitUnknown}, code) {
			t.Fatalf("exit %d\n%.2000s%.2000s", code, stdout, stderr)
		}
		if code != exitValid && strings.Contains(stdout, "PASS") {
			t.Errorf("exit %d and PASS\n%s", code, stdout)
		}
		if code != exitValid {
			return
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n, err := trends.ReadNight(r, "2026-12-02")
		if err != nil || len(n.Cells) == 0 || n.Started.IsZero() {
			t.Errorf("PASS on a newest night that is not a night (%v, %d cells, started %s)\n%s", err, len(n.Cells), n.Started, stdout)
		}
	})
}
