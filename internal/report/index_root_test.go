package report

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// The index (served, and index.html) reads the runs' files through the
// results directory's os.Root: a results.json or test.json linked out of
// it, a run or a name linked out of it, are not read; a FIFO is not waited
// for.
func TestIndexThroughRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "results")
	outside := filepath.Join(base, "outside")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	const secretResults = `{"valid": false, "workload": "lock-append", "lost_updates": {"acknowledged": 777, "lost": 666}, "fence_rejections": 4242}`
	const secretTest = `{"target": "OUTSIDE-TARGET", "fencing": "OUTSIDE-FENCING"}`
	write(filepath.Join(outside, "results.json"), secretResults)
	write(filepath.Join(outside, "test.json"), secretTest)
	write(filepath.Join(outside, "run", "history.jsonl"), "")
	write(filepath.Join(outside, "run", "results.json"), secretResults)
	write(filepath.Join(outside, "names", "20261130T090000.000Z", "results.json"), secretResults)

	stamp := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	linked, err := store.NewRun(root, "linked-files", stamp)
	if err != nil {
		t.Fatal(err)
	}
	write(linked.Path(store.HistoryFile), "")
	link(filepath.Join(outside, "results.json"), linked.Path(store.ResultsFile))
	link("../../../outside/test.json", linked.Path(store.TestFile))
	link(filepath.Join(outside, "run"), filepath.Join(root, "linked-stamp", "20261130T090000.000Z"))
	link(filepath.Join(outside, "names"), filepath.Join(root, "linked-name"))
	fifo, err := store.NewRun(root, "fifo-results", stamp)
	if err != nil {
		t.Fatal(err)
	}
	write(fifo.Path(store.HistoryFile), "")
	if err := syscall.Mkfifo(fifo.Path(store.ResultsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, outside)

	check := func(what, page string) {
		t.Helper()
		for _, secret := range []string{"OUTSIDE-TARGET", "OUTSIDE-FENCING", "4242", "666 of 777", "linked-stamp", "linked-name"} {
			if strings.Contains(page, secret) {
				t.Errorf("%s shows %q, from outside the results directory", what, secret)
			}
		}
		for _, want := range []string{"linked-files", "fifo-results", "results.json: "} {
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %q", what, want)
			}
		}
	}
	// Served.
	srv, err := NewServer(root)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	done := make(chan string, 1)
	go func() {
		resp, err := ts.Client().Get(ts.URL + "/")
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	select {
	case page := <-done:
		check("the served index", page)
	case <-time.After(10 * time.Second):
		t.Fatal("GET / still waiting after 10s")
	}
	// Written.
	written := make(chan error, 1)
	go func() { written <- WriteIndex(root) }()
	select {
	case err := <-written:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WriteIndex still running after 10s")
	}
	b, err := os.ReadFile(filepath.Join(root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	check("index.html", string(b))
	after := snapshotDir(t, outside)
	if len(after) != len(before) {
		t.Errorf("the outside changed")
	}
	for p, c := range before {
		if after[p] != c {
			t.Errorf("%s changed", p)
		}
	}
}

// snapshotDir returns the contents of the files under dir.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	s := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		s[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
