package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/kept"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// TestKeptDataShown: a run's kept data is in its Files, each node's
// directory as data/NODE/ with its regular files' size (a link in it not
// followed) and no link of its own; the "Data kept" section says what was
// kept; a stored record of thousands of nodes and long names renders
// bounded.
func TestKeptDataShown(t *testing.T) {
	dir := t.TempDir()
	n1 := filepath.Join(dir, store.DataDir, "n1")
	if err := os.MkdirAll(filepath.Join(n1, "member"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"a": 10, "member/b": 5} {
		if err := os.WriteFile(filepath.Join(n1, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(n1, "etc")); err != nil {
		t.Fatal(err)
	}
	files := RunFiles(dir, nil)
	if len(files) != 1 || files[0] != (File{Name: "data/n1/", Size: 15, Dir: true}) {
		t.Fatalf("files %+v, want data/n1/ of 15 bytes", files)
	}

	ev, res := lockappendtest.Synthetic(50, 3)
	kd := &kept.Data{Mode: "always", Limit: 1 << 20, Took: "1s"}
	for range 5000 {
		kd.Nodes = append(kd.Nodes, kept.Node{Node: "n1", From: strings.Repeat("/d", 10_000),
			Copied: runtime.Copied{LeftOut: make([]runtime.Skipped, 1000), LeftOutCount: 1000}})
	}
	res.Records = res.Records.Put(kd)
	var buf bytes.Buffer
	if err := Render(&buf, Input{Test: lockappendtest.TestInfo("none", 3), Results: res, Events: ev, Files: files}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"<h2>Data kept</h2>", "--keep-data always: 32 nodes copied in 1s before teardown", "data/n1/ <span class=\"muted\">15 B in files</span>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(page, `href="data/`) {
		t.Error("the report links a data directory")
	}
	if len(page) > 4<<20 {
		t.Errorf("the report of a hostile record is %d bytes", len(page))
	}
}
