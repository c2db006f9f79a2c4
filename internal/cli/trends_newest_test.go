package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

// A newest night that cannot be judged (its matrix.json cut short, no
// cells, only cells no shard ran, no start) makes trends exit 2 naming it,
// whatever --nights; a broken night older than the others by name does
// not stop the newest from being judged.
func TestTrendsNewestNightUnreadable(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC)
	good := func(t *testing.T) string {
		root := t.TempDir()
		writeNight(t, root, "2026-12-01", t0, nightCell("redis", "none", "invalid", 2), nightCell("redis", "token", "valid", 0))
		writeNight(t, root, "2026-12-02", t0.Add(24*time.Hour), nightCell("redis", "none", "invalid", 1), nightCell("redis", "token", "valid", 0))
		return root
	}
	whole, err := os.ReadFile(filepath.Join(writeNight(t, t.TempDir(), "n", t0.Add(48*time.Hour), nightCell("redis", "token", "valid", 0)), matrix.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		body string
	}{
		{"cut short", string(whole[:len(whole)/2])},
		{"empty file", ""},
		{"no cells", `{"started": "2026-12-03T02:17:00Z", "exit_code": 0, "total_cells": 0, "cells": []}`},
		{"only cells no shard ran", `{"started": "2026-12-03T02:17:00Z", "exit_code": 2, "total_cells": 1, "cells": [{"cell": 0, "verdict": "not run", "must_be_valid": true}]}`},
		{"no start", `{"exit_code": 0, "cells": [{"cell": 0, "target": "redis", "resource": "lock-store", "nemesis": "pause-holder,kill", "fencing": "token", "verdict": "valid", "must_be_valid": true}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range [][]string{nil, {"--nights", "1"}, {"--nights", "2"}} {
				root := good(t)
				dir := filepath.Join(root, "2026-12-03")
				os.MkdirAll(dir, 0o755)
				if err := os.WriteFile(filepath.Join(dir, matrix.File), []byte(c.body), 0o644); err != nil {
					t.Fatal(err)
				}
				var out, errb bytes.Buffer
				code := run(append(append([]string{"trends"}, args...), root), &out, &errb)
				if code != exitUnknown || strings.Contains(out.String(), "PASS") || !strings.Contains(out.String()+errb.String(), "2026-12-03") {
					t.Errorf("%v: exit %d, want 2 naming 2026-12-03\n%s%s", args, code, out.String(), errb.String())
				}
			}
		})
	}

	// A broken night whose name sorts before the others: the newest is
	// judged.
	root := good(t)
	os.MkdirAll(filepath.Join(root, "2026-11-30"), 0o755)
	os.WriteFile(filepath.Join(root, "2026-11-30", matrix.File), whole[:10], 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"trends", root}, &out, &errb); code != exitValid || !strings.Contains(out.String(), "PASS") {
		t.Errorf("an old broken night: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
