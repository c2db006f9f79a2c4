package harness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindWorkerBinary(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "fencecheck")
	if err := os.WriteFile(self, []byte("self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, beside := FindWorkerBinary(self); p != self || beside {
		t.Errorf("no worker binary: got %s, %v; want %s itself", p, beside, self)
	}
	w := filepath.Join(dir, WorkerBinaryName)
	if err := os.WriteFile(w, []byte("worker"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, beside := FindWorkerBinary(self); p != self || beside {
		t.Errorf("a worker binary that is not executable: got %s, %v; want %s itself", p, beside, self)
	}
	if err := os.Chmod(w, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, beside := FindWorkerBinary(self); p != w || !beside {
		t.Errorf("got %s, %v; want %s beside it", p, beside, w)
	}
	// Through a symlink (a fencecheck linked into ~/bin): the worker beside
	// the real binary.
	link := filepath.Join(t.TempDir(), "fencecheck")
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	if p, beside := FindWorkerBinary(link); p != w || !beside {
		t.Errorf("through a symlink: got %s, %v; want %s", p, beside, w)
	}
}
