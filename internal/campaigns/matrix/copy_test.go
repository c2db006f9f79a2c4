package matrix

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// merge copies a run's file byte for byte, and a file of mostly zeros (a
// kept etcd WAL segment) stays mostly holes in the copy.
func TestCopyRegularKeepsHoles(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	const size = 8 << 20
	f, err := os.Create(filepath.Join(from, "0000.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("record"), 4096); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src, err := os.OpenRoot(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenRoot(to)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	fi, err := src.Lstat("0000.wal")
	if err != nil {
		t.Fatal(err)
	}
	if err := copyRegular(src, dst, "0000.wal", fi); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(from, "0000.wal"))
	b, err := os.ReadFile(filepath.Join(to, "0000.wal"))
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("the copy differs (%d of %d bytes, %v)", len(b), len(a), err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(to, "0000.wal"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > size/8 {
		t.Errorf("the copy takes %d bytes on disk for %d of length, 6 of them not zero", st.Blocks*512, size)
	}
}
