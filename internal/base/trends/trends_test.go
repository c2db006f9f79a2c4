package trends

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/testkit/bound"
)

func TestRegressed(t *testing.T) {
	k := Key{Target: "redis", Resource: "lock-store", Nemesis: "kill", Fencing: "token", Run: 1}
	fenced := func(verdict string, lost int) Cell {
		return Cell{Key: k, Verdict: verdict, MustBeValid: true, Lost: lost, Acknowledged: 50}
	}
	unfenced := func(verdict string, lost int) Cell {
		return Cell{Key: k, Verdict: verdict, Lost: lost, Acknowledged: 50}
	}
	for _, c := range []struct {
		name     string
		was, now Cell
		want     string // kind, "" for none
	}{
		{"fenced valid stays valid", fenced(Valid, 0), fenced(Valid, 0), ""},
		{"fenced valid turns invalid", fenced(Valid, 0), fenced(Invalid, 2), FenceFailed},
		{"fenced invalid stays invalid: not new", fenced(Invalid, 1), fenced(Invalid, 1), ""},
		{"fenced unknown turns invalid: was not shown valid", fenced(Unknown, 0), fenced(Invalid, 1), ""},
		{"fenced valid turns unknown: the matrix's exit says so", fenced(Valid, 0), fenced(Unknown, 0), ""},
		{"fenced valid turns error", fenced(Valid, 0), fenced(Error, 0), ""},
		{"unfenced keeps detecting", unfenced(Invalid, 3), unfenced(Invalid, 1), ""},
		{"unfenced stops detecting", unfenced(Invalid, 3), unfenced(Valid, 0), StoppedDetecting},
		{"unfenced stops detecting, unknown now", unfenced(Invalid, 3), unfenced(Unknown, 0), StoppedDetecting},
		{"unfenced invalid without a lost update counts as not detecting", unfenced(Invalid, 3), unfenced(Invalid, 0), StoppedDetecting},
		{"unfenced that never detected", unfenced(Valid, 0), unfenced(Valid, 0), ""},
		{"unfenced not run now", unfenced(Invalid, 3), unfenced(NotRun, 0), ""},
		{"unfenced harness error now", unfenced(Invalid, 3), unfenced(Error, 0), ""},
		{"unfenced starts detecting", unfenced(Valid, 0), unfenced(Invalid, 2), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, ok := Regressed(c.was, c.now)
			if ok != (c.want != "") || r.Kind != c.want {
				t.Errorf("regressed %v, kind %q; want %q", ok, r.Kind, c.want)
			}
			if ok && r.Message == "" {
				t.Error("no message")
			}
		})
	}
}

// night writes dir/matrix.json with the given started time and cells (JSON
// objects, as matrix.json has them).
func night(t *testing.T, dir string, started time.Time, cells ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"started": %q, "exit_code": 0, "cells": [%s]}`, started.Format(time.RFC3339Nano), strings.Join(cells, ","))
	if err := os.WriteFile(filepath.Join(dir, MatrixFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jcell is a matrix.json cell; extra is more JSON fields (",..." ).
func jcell(i int, target, nemesis, fencing, verdict string, lost int, extra string) string {
	return fmt.Sprintf(`{"cell": %d, "target": %q, "resource": "lock-store", "nemesis": %q, "fencing": %q, "seed": %d,
		"verdict": %q, "must_be_valid": %v, "acknowledged": 40, "lost": %d%s}`, i, target, nemesis, fencing, 1+i, verdict, fencing != "none", lost, extra)
}

func TestReadNight(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC)
	// Written out of order; two runs per cell (--runs 2) with their own
	// seeds; a cell no shard ran (no target); an older cell without
	// ops_ok; a labelled cell; a run path that leads out of the night.
	night(t, dir, t0,
		jcell(1, "etcd", "pause-holder", "none", "invalid", 2, `, "first_lost_s": 6.5, "ops_ok": 60, "client_s": 15, "run": "etcd-pause-holder-none/A"`),
		jcell(0, "etcd", "pause-holder", "none", "invalid", 3, `, "run": "etcd-pause-holder-none/B"`),
		`{"cell": 2, "verdict": "not run", "must_be_valid": true}`,
		jcell(3, "redis-nopersist", "kill", "token", "invalid", 0, `, "label": "redis", "run": "../../etc"`),
	)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	n, err := ReadNight(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	if !n.Started.Equal(t0) || len(n.Cells) != 3 {
		t.Fatalf("night %+v", n)
	}
	first, second, labelled := n.Cells[0], n.Cells[1], n.Cells[2]
	if first.Key.Run != 1 || first.Seed != 1 || first.Run != "etcd-pause-holder-none/B" || first.OpsPerS != nil {
		t.Errorf("first run: %+v (want run 1, seed 1, no throughput)", first)
	}
	if second.Key.Run != 2 || second.OpsPerS == nil || *second.OpsPerS != 4 || *second.FirstLostS != 6.5 {
		t.Errorf("second run: %+v (want run 2, 4 ops/s)", second)
	}
	if labelled.Key.Target != "redis" || labelled.Ran != "redis-nopersist" || labelled.Run != "" || !labelled.MustBeValid {
		t.Errorf("labelled cell: %+v (want key redis, ran redis-nopersist, the run path dropped)", labelled)
	}
	if got := labelled.Key.String(); got != "redis lock-store kill token #1" {
		t.Errorf("key %q", got)
	}

	// Files that are not matrices.
	bad := t.TempDir()
	for name, body := range map[string]string{
		"not-json":  "{",
		"too-many":  `{"cells": [` + strings.Repeat(`{"target":"etcd"},`, MaxCells) + `{}]}`,
		"too-large": `{"args": ["` + strings.Repeat("x", MaxMatrixBytes) + `"]}`,
	} {
		os.MkdirAll(filepath.Join(bad, name), 0o755)
		os.WriteFile(filepath.Join(bad, name, MatrixFile), []byte(body), 0o644)
	}
	os.MkdirAll(filepath.Join(bad, "fifo"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(bad, "fifo", MatrixFile), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(bad, "link"), 0o755)
	os.Symlink(filepath.Join(dir, MatrixFile), filepath.Join(bad, "link", MatrixFile))
	broot, _ := os.OpenRoot(bad)
	defer broot.Close()
	for _, name := range []string{"not-json", "too-many", "too-large", "fifo", "link"} {
		// Not after a wait for the FIFO's writer, which never comes: a
		// return at all (within the hang limit) shows it.
		bound.Returns(t, "ReadNight of "+name, func() {
			if _, err := ReadNight(broot, name); !errors.Is(err, ErrBadMatrix) {
				t.Errorf("%s: %v, want ErrBadMatrix", name, err)
			}
		})
	}
	if _, err := ReadNight(broot, "."); !errors.Is(err, ErrNoMatrix) {
		t.Errorf("no matrix.json: %v, want ErrNoMatrix", err)
	}
}

func TestScanAndBaseline(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	// Names do not sort as the nights ran: the matrix's start orders them.
	night(t, filepath.Join(root, "b-first"), t0, jcell(0, "etcd", "pause-holder", "token", "valid", 0, ""))
	night(t, filepath.Join(root, "a-second"), t0.Add(24*time.Hour), jcell(0, "etcd", "pause-holder", "token", "valid", 0, ""))
	night(t, filepath.Join(root, "c-third"), t0.Add(48*time.Hour), jcell(0, "etcd", "pause-holder", "token", "invalid", 1, ""))
	os.MkdirAll(filepath.Join(root, "not-a-night", "x"), 0o755)
	os.MkdirAll(filepath.Join(root, "broken"), 0o755)
	os.WriteFile(filepath.Join(root, "broken", MatrixFile), []byte("{"), 0o644)
	// A night linked from outside is not followed.
	outside := t.TempDir()
	night(t, filepath.Join(outside, "n"), t0.Add(72*time.Hour), jcell(0, "OUTSIDE", "x", "token", "valid", 0, ""))
	os.Symlink(filepath.Join(outside, "n"), filepath.Join(root, "linked"))

	nights, err := Scan(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, n := range nights {
		dirs = append(dirs, n.Dir)
		for _, c := range n.Cells {
			if c.Key.Target == "OUTSIDE" {
				t.Error("read a night through a link out of the root")
			}
		}
	}
	// The broken night has no start: the zero time sorts first.
	if got := strings.Join(dirs, " "); got != "broken b-first a-second c-third" {
		t.Errorf("nights %q", got)
	}
	if nights[0].Err == "" || !strings.Contains(nights[0].Err, "bad matrix.json") {
		t.Errorf("broken night: %+v", nights[0])
	}
	if kept, _ := Scan(root, 2); len(kept) != 2 || kept[0].Dir != "a-second" {
		t.Errorf("keep 2: %+v", kept)
	}

	// Past the budgets, the oldest names are listed unread: here two
	// nights' cells in all.
	r, _ := os.OpenRoot(root)
	defer r.Close()
	budget, err := scanRoot(r, 0, MaxTotalBytes, 2)
	if err != nil {
		t.Fatal(err)
	}
	unread := 0
	for _, n := range budget {
		if strings.HasPrefix(n.Err, "not read") {
			unread++
			if n.Dir != "a-second" {
				t.Errorf("unread night %s: the newest names are read first", n.Dir)
			}
		}
	}
	if unread != 1 {
		t.Errorf("%d nights unread, want 1 (a-second): %+v", unread, budget)
	}
	if tiny, _ := scanRoot(r, 0, 10, MaxTotalCells); !strings.HasPrefix(tiny[len(tiny)-1].Err, "not read") {
		t.Errorf("a 10-byte budget read %+v", tiny[len(tiny)-1])
	}

	for _, c := range []struct {
		dir     string
		want    string // the night read, "" for an error
		wantErr error
	}{
		{root, "c-third", nil},                                        // a root of nights: its newest
		{filepath.Join(root, "a-second"), ".", nil},                   // a matrix's own directory
		{filepath.Join(root, "not-a-night"), "", ErrNoMatrix},         // neither
		{filepath.Join(root, "no-such-dir"), "", ErrNoMatrix},         // missing
		{filepath.Join(root, "broken"), "", ErrBadMatrix},             // its own matrix.json is broken
		{filepath.Join(root, "b-first", MatrixFile), "", ErrNoMatrix}, // a file, not a directory
	} {
		n, err := Baseline(c.dir)
		switch {
		case c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("baseline %s: %v, want %v", c.dir, err, c.wantErr)
		case c.wantErr == nil && (err != nil || n.Dir != c.want):
			t.Errorf("baseline %s: %q, %v; want %q", c.dir, n.Dir, err, c.want)
		}
	}

	// Compare: the third night regressed from the second.
	cmp := Compare(nights[2], nights[3])
	if cmp.Compared != 1 || len(cmp.Regressions) != 1 || cmp.Regressions[0].Kind != FenceFailed {
		t.Errorf("compare: %+v", cmp)
	}
	if self := Compare(nights[3], nights[3]); len(self.Regressions) != 0 || self.Compared != 1 {
		t.Errorf("compared with itself: %+v", self)
	}
}

func TestSummarize(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	k := func(fencing string) Key {
		return Key{Target: "redis", Resource: "lock-store", Nemesis: "pause-holder,kill", Fencing: fencing, Run: 1}
	}
	none, token, cas := k("none"), k("token"), k("cas")
	// A second fenced cell (run 2): valid, unknown, invalid.
	token2 := token
	token2.Run = 2
	nights := []Night{
		{Dir: "n1", Cells: []Cell{
			{Key: none, Verdict: Invalid, Lost: 2, FirstLostS: f(6), OpsPerS: f(3), Run: "r/1"},
			{Key: token, Verdict: Valid, MustBeValid: true, OpsPerS: f(2)},
			{Key: cas, Verdict: Valid, MustBeValid: true},
			{Key: token2, Verdict: Valid, MustBeValid: true},
		}},
		{Dir: "n2", Cells: []Cell{
			{Key: none, Verdict: Invalid, Lost: 1, FirstLostS: f(8), OpsPerS: f(5)},
			{Key: token, Verdict: Error, MustBeValid: true},
			{Key: token2, Verdict: Unknown, MustBeValid: true},
		}},
		{Dir: "n3", Cells: []Cell{
			{Key: none, Verdict: Valid, Lost: 0, OpsPerS: f(4)},
			{Key: token, Verdict: Invalid, Lost: 1, MustBeValid: true, Ran: "redis-nopersist"},
			{Key: token2, Verdict: Invalid, MustBeValid: true},
		}},
	}
	s := Summarize(nights)
	if len(s.Nights) != 3 || len(s.Cells) != 4 {
		t.Fatalf("%d nights, %d cells", len(s.Nights), len(s.Cells))
	}
	byKey := map[Key]Trend{}
	for _, c := range s.Cells {
		byKey[c.Key] = c
	}
	if s.Cells[3].Key != cas {
		t.Errorf("a cell only older nights have comes last: %v", s.Cells[2].Key)
	}
	for _, c := range []struct {
		key                  Key
		strip                string
		runs                 int
		rate, first, opsPerS *float64
	}{
		{none, "IIV!", 3, f(2.0 / 3), f(7), f(4)},
		{token, "VEI!", 2, nil, nil, f(2)}, // the error night is skipped: valid on n1 is the baseline
		{cas, "V--", 1, nil, nil, nil},
		{token2, "VUI!", 3, nil, nil, nil}, // unknown decides nothing: invalid after valid
	} {
		tr := byKey[c.key]
		if got := tr.StripText(); got != c.strip || tr.Runs != c.runs {
			t.Errorf("%s: strip %s, %d runs; want %s, %d", c.key, got, tr.Runs, c.strip, c.runs)
		}
		for name, pair := range map[string][2]*float64{"detection": {tr.DetectionRate, c.rate}, "first lost": {tr.MedianFirstLostS, c.first}, "ops/s": {tr.MedianOpsPerS, c.opsPerS}} {
			got, want := pair[0], pair[1]
			if (got == nil) != (want == nil) || (got != nil && fmt.Sprintf("%.3f", *got) != fmt.Sprintf("%.3f", *want)) {
				t.Errorf("%s: %s %v, want %v", c.key, name, deref(got), deref(want))
			}
		}
	}
	if got := byKey[none].Strip[0].Run; got != "n1/r/1" {
		t.Errorf("run link %q", got)
	}
	if len(s.Regressions) != 3 {
		t.Fatalf("newest night's regressions: %+v", s.Regressions)
	}
	for _, r := range s.Regressions {
		if r.NowDir != "n3" {
			t.Errorf("regression %+v not on the newest night", r)
		}
		if r.Key == token && (r.WasDir != "n1" || r.Kind != FenceFailed || !strings.Contains(r.Message, "redis-nopersist")) {
			t.Errorf("token regression %+v: want from n1, fence-failed, naming the target that ran", r)
		}
		if r.Key == token2 && (r.WasDir != "n1" || r.Kind != FenceFailed) {
			t.Errorf("token run 2 regression %+v: want from n1 (n2 was unknown), fence-failed", r)
		}
		if r.Key == none && (r.WasDir != "n2" || r.Kind != StoppedDetecting) {
			t.Errorf("unfenced regression %+v: want from n2, stopped-detecting", r)
		}
	}
	// A regression on an older night stays in its strip, not in the
	// newest night's list.
	older := Summarize(nights[:2])
	if len(older.Regressions) != 0 {
		t.Errorf("nights 1-2: %+v", older.Regressions)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Register cells (matrix --workload register) are keyed by their read mode:
// two read modes of one target are two cells, and a lock-append cell of
// an older night (no workload field) keeps its key.
func TestRegisterKeys(t *testing.T) {
	dir := t.TempDir()
	night(t, dir, time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC),
		jcell(0, "etcd", "partition:leader", "none", "valid", 0, `, "workload": "register", "read_mode": "linearizable"`),
		jcell(1, "etcd", "partition:leader", "none", "invalid", 0, `, "workload": "register", "read_mode": "serializable"`),
		jcell(2, "etcd", "partition:leader", "none", "invalid", 2, ``),
		jcell(3, "etcd", "partition:leader", "none", "invalid", 2, `, "workload": "lock-append"`),
	)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	n, err := ReadNight(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range n.Cells {
		keys = append(keys, c.Key.String())
	}
	want := []string{
		"etcd register lock-store partition:leader linearizable #1",
		"etcd register lock-store partition:leader serializable #1",
		"etcd lock-store partition:leader none #1",
		"etcd lock-store partition:leader none #2",
	}
	if strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Errorf("keys %q, want %q", keys, want)
	}
}

// Cells of a version axis are keyed by their version, unless named
// (NAME=TARGET): a named cell keeps its key when its version changes.
func TestVersionKeys(t *testing.T) {
	dir := t.TempDir()
	night(t, dir, time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC),
		jcell(0, "etcd", "pause-holder", "token", "valid", 0, `, "version": "3.4.3"`),
		jcell(1, "etcd", "pause-holder", "token", "valid", 0, `, "version": "3.6.16"`),
		jcell(2, "etcd", "pause-holder", "token", "valid", 0, `, "version": "3.5.35", "label": "prod"`),
	)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	n, err := ReadNight(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range n.Cells {
		keys = append(keys, c.Key.Target)
	}
	if strings.Join(keys, " ") != "etcd@3.4.3 etcd@3.6.16 prod" {
		t.Errorf("keys %q", keys)
	}
}

// Cells that differ only by a knob the matrix varied (matrix --ttl 1s,2s)
// are two cells: two keys, each compared with its own cell of the
// baseline; a cell without axes keeps the key it had before axes existed.
func TestAxesKeys(t *testing.T) {
	dir := t.TempDir()
	was, now := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	t0 := time.Date(2026, 12, 1, 2, 17, 0, 0, time.UTC)
	night(t, was, t0,
		jcell(0, "etcd", "pause-holder", "token", "valid", 0, `, "axes": {"ttl": "1s"}`),
		jcell(1, "etcd", "pause-holder", "token", "valid", 0, `, "axes": {"ttl": "2s", "concurrency": "3"}`),
		jcell(2, "etcd", "pause-holder", "none", "invalid", 1, ``),
	)
	night(t, now, t0.Add(24*time.Hour),
		jcell(0, "etcd", "pause-holder", "token", "valid", 0, `, "axes": {"ttl": "1s"}`),
		jcell(1, "etcd", "pause-holder", "token", "invalid", 2, `, "axes": {"concurrency": "3", "ttl": "2s"}`),
		jcell(2, "etcd", "pause-holder", "none", "invalid", 1, ``),
	)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	a, err := ReadNight(root, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadNight(root, "b")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range b.Cells {
		keys = append(keys, c.Key.String())
	}
	want := []string{"etcd lock-store pause-holder token ttl=1s #1", "etcd lock-store pause-holder token concurrency=3 ttl=2s #1", "etcd lock-store pause-holder none #1"}
	if strings.Join(keys, "|") != strings.Join(want, "|") {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if b.Cells[2].Key != (Key{Target: "etcd", Resource: "lock-store", Nemesis: "pause-holder", Fencing: "none", Run: 1}) {
		t.Errorf("a cell without axes: key %+v", b.Cells[2].Key)
	}
	c := Compare(a, b)
	if len(c.Regressions) != 1 || c.Regressions[0].Key.Axes != "concurrency=3 ttl=2s" || len(c.New) != 0 || len(c.Missing) != 0 {
		t.Errorf("comparison %+v: want the ttl=2s cell's regression only", c)
	}
}
