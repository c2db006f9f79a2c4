package harness

import (
	"os"
	"path/filepath"
)

// WorkerBinaryName is the file name of the worker binary
// (cmd/fencecheck-worker), which `make build` puts beside bin/fencecheck.
const WorkerBinaryName = "fencecheck-worker"

// FindWorkerBinary returns the binary the worker image is built from for
// the fencecheck binary at self: WorkerBinaryName in self's directory (after
// symlinks) when it is an executable regular file, and beside true; else
// self, which runs the worker's commands too but links the whole harness
// (the Docker SDK, the report), so that its image changes with any edit of
// fencecheck. A Go API user's binary (recipes added) must use itself: the
// worker binary knows only the built-in targets.
func FindWorkerBinary(self string) (path string, beside bool) {
	dir := filepath.Dir(self)
	if real, err := filepath.EvalSymlinks(self); err == nil {
		dir = filepath.Dir(real)
	}
	p := filepath.Join(dir, WorkerBinaryName)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return p, true
	}
	return self, false
}
