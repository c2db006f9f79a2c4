package trends

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Unjudged: the last night must have cells, and no night without a start
// may have a name after it.
func TestUnjudged(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		extra  map[string]string // night -> matrix.json beside two good nights, 2026-12-01 and 2026-12-02
		night  string            // the night named in the error; "" for none
		reason string
	}{
		{"two good nights", nil, "", ""},
		{"cut short, newest by name", map[string]string{"2026-12-03": `{"started": "2026-12-03T02:17:00Z", "cells": [`}, "2026-12-03", "bad matrix.json"},
		{"no start, newest by name", map[string]string{"2026-12-03": `{"cells": [` + jcell(0, "etcd", "pause-holder", "token", "valid", 0, "") + `]}`}, "2026-12-03", "no start"},
		{"no cells", map[string]string{"2026-12-03": `{"started": "2026-12-03T02:17:00Z", "cells": []}`}, "2026-12-03", "no cell"},
		{"only cells no shard ran", map[string]string{"2026-12-03": `{"started": "2026-12-03T02:17:00Z", "cells": [{"cell": 0, "verdict": "not run"}]}`}, "2026-12-03", "no cell"},
		{"cut short, oldest by name", map[string]string{"2026-11-30": `{`}, "", ""},
		{"cut short between", map[string]string{"2026-12-01b": `{`}, "", ""},
		{"a good night named oldest that ran last", map[string]string{"0-renamed": `{"started": "2026-12-03T02:17:00Z", "cells": [` + jcell(0, "etcd", "pause-holder", "token", "valid", 0, "") + `]}`}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			night(t, filepath.Join(root, "2026-12-01"), t0, jcell(0, "etcd", "pause-holder", "token", "valid", 0, ""))
			night(t, filepath.Join(root, "2026-12-02"), t0.Add(24*time.Hour), jcell(0, "etcd", "pause-holder", "token", "valid", 0, ""))
			for dir, body := range c.extra {
				os.MkdirAll(filepath.Join(root, dir), 0o755)
				os.WriteFile(filepath.Join(root, dir, MatrixFile), []byte(body), 0o644)
			}
			nights, err := Scan(root, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = Unjudged(nights)
			if c.night == "" {
				if err != nil {
					t.Errorf("%v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrUnjudged) || !strings.Contains(err.Error(), c.night) || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("%v, want ErrUnjudged naming %s (%s)", err, c.night, c.reason)
			}
		})
	}
	if err := Unjudged(nil); !errors.Is(err, ErrUnjudged) {
		t.Errorf("no nights: %v", err)
	}
}
