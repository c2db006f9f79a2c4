package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// entry is one entry of a test archive.
type entry struct {
	name, link string
	kind       byte
	data       []byte
	mode       int64
}

func archive(t *testing.T, es ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, e := range es {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.kind, Linkname: e.link, Mode: mode, ModTime: mtime, Size: int64(len(e.data))}
		if e.kind != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func filled(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// TestExtractBounded: a node's directory as the Engine archives it, with
// a preallocated file, links, a device, a FIFO, a name outside the
// directory, one named twice, a set-id file and a file past the limit:
// only directories and regular files are made, inside dst; the file past
// the limit is left out whole and a later one that fits is copied; zeros
// do not count against the limit and are holes; set-id bits are dropped.
func TestExtractBounded(t *testing.T) {
	wal := make([]byte, 1<<20) // 1 MiB, one block of data then zeros
	copy(wal, filled(holeBlock, 'w'))
	wal[len(wal)-1] = 'e' // and a last block with data in it
	db := filled(10_000, 'd')
	small := filled(100, 's')
	escaped := []byte("through the link")
	// Room for what fits, not for big.
	limit := int64(2*holeBlock + len(db) + len(small) + len(escaped))
	in := archive(t,
		entry{name: "etcd/", kind: tar.TypeDir, mode: 0o700},
		entry{name: "etcd/member/", kind: tar.TypeDir, mode: 0o700},
		entry{name: "etcd/member/wal/0.wal", kind: tar.TypeReg, data: wal, mode: 0o600},
		entry{name: "etcd/member/snap/db", kind: tar.TypeReg, data: db, mode: 0o4755}, // no entry for its directory
		entry{name: "etcd/member/big", kind: tar.TypeReg, data: filled(3*holeBlock, 'b')},
		entry{name: "etcd/small", kind: tar.TypeReg, data: small},
		entry{name: "etcd/small", kind: tar.TypeReg, data: filled(10, 'x')},
		entry{name: "etcd/passwd", kind: tar.TypeSymlink, link: "/etc/passwd"},
		entry{name: "etcd/up", kind: tar.TypeSymlink, link: "../.."},
		entry{name: "etcd/up/escaped", kind: tar.TypeReg, data: escaped},
		entry{name: "etcd/hard", kind: tar.TypeLink, link: "etcd/small"},
		entry{name: "etcd/null", kind: tar.TypeChar},
		entry{name: "etcd/sda", kind: tar.TypeBlock},
		entry{name: "etcd/fifo", kind: tar.TypeFifo},
		entry{name: "etcd/../../escape", kind: tar.TypeReg, data: []byte("out")},
		entry{name: "other/file", kind: tar.TypeReg, data: []byte("out")},
		entry{name: "etcd/" + strings.Repeat("d/", runtime.MaxCopyDepth) + "deep", kind: tar.TypeReg, data: []byte("deep")},
	)
	base := t.TempDir()
	dst := filepath.Join(base, "data", "n1")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	budget := runtime.NewBudget(limit)
	got, err := extractBounded(context.Background(), in, dst, budget)
	if err != nil {
		t.Fatal(err)
	}
	// What is on disk: directories and regular files only, all in dst.
	var made []string
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			t.Errorf("%s: made of kind %s", p, d.Type())
		}
		if rel, _ := filepath.Rel(dst, p); !d.IsDir() {
			made = append(made, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(made)
	// "up/escaped" is a plain file under a plain directory: the link
	// before it was not made, so nothing leads out of dst.
	want := []string{"member/snap/db", "member/wal/0.wal", "small", "up/escaped"}
	if !slices.Equal(made, want) {
		t.Fatalf("files made %q, want %q", made, want)
	}
	for name, data := range map[string][]byte{"member/wal/0.wal": wal, "member/snap/db": db, "small": small} {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || !bytes.Equal(b, data) {
			t.Errorf("%s: %d bytes read back (err %v), want the %d archived", name, len(b), err, len(data))
		}
	}
	st, err := os.Stat(filepath.Join(dst, "member/snap/db"))
	if err != nil || st.Mode().Perm() != 0o644 || st.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		t.Errorf("db's mode %v (err %v), want 0644 (0755 masked) without its set-id bit", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(dst, "member/wal/0.wal")); err == nil {
		if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks >= int64(len(wal))/2 {
			t.Errorf("the 1 MiB file of zeros takes %d bytes on disk: its zeros were written, not left as holes", blocks)
		}
	}
	// Directories: member, member/snap and up are made, member/wal and
	// snap without an entry of their own (only entries are counted).
	if got.Files != 4 || got.Dirs != 1 || got.Stored != limit {
		t.Errorf("copied %d files, %d directories, %d bytes stored; want 4, 1, %d", got.Files, got.Dirs, got.Stored, limit)
	}
	if wantSize := int64(len(wal) + len(db) + len(small) + len(escaped)); got.Size != wantSize {
		t.Errorf("size %d, want %d", got.Size, wantSize)
	}
	if budget.Take(1) {
		t.Error("the budget is not used up: fewer bytes were taken than stored")
	}
	if got.LeftOutCount != 1 || got.LeftOut[0] != (runtime.Skipped{Path: "member/big", Size: 3 * holeBlock, Why: "limit"}) {
		t.Errorf("left out %d: %+v, want member/big for the limit", got.LeftOutCount, got.LeftOut)
	}
	var refused []string
	for _, s := range got.Refused {
		refused = append(refused, s.Path+": "+s.Why)
	}
	wantRefused := []string{
		"small: named twice",
		`passwd: symbolic link to "/etc/passwd"`,
		`up: symbolic link to "../.."`,
		"hard: hard link",
		"null: device",
		"sda: device",
		"fifo: FIFO",
		"etcd/../../escape: named outside the directory",
		"other/file: named outside the directory",
		strings.Repeat("d/", runtime.MaxCopyDepth) + "deep: nested more than 12 deep",
	}
	if !slices.Equal(refused, wantRefused) || got.RefusedCount != len(wantRefused) {
		t.Errorf("refused %d:\n%q\nwant\n%q", got.RefusedCount, refused, wantRefused)
	}
}

// A file left out gives back what it took of the budget: the next copy
// sharing it has it whole.
func TestExtractBoundedGivesBack(t *testing.T) {
	budget := runtime.NewBudget(2*holeBlock + 1)
	got, err := extractBounded(context.Background(), archive(t, entry{name: "etcd/", kind: tar.TypeDir},
		entry{name: "etcd/big", kind: tar.TypeReg, data: filled(3*holeBlock, 'b')}), t.TempDir(), budget)
	if err != nil || got.Files != 0 || got.LeftOutCount != 1 {
		t.Fatalf("copied %d files, left out %d, err %v; want big left out", got.Files, got.LeftOutCount, err)
	}
	if !budget.Take(2*holeBlock + 1) {
		t.Error("the two blocks big wrote before it was left out were not given back")
	}
}

// TestExtractBoundedStops: an archive that is not of a directory is
// refused before anything is made, and a cancelled copy stops with the
// file it was writing removed.
func TestExtractBoundedStops(t *testing.T) {
	dst := t.TempDir()
	if _, err := extractBounded(context.Background(), archive(t, entry{name: "etcd", kind: tar.TypeReg, data: []byte("x")}), dst, runtime.NewBudget(1<<20)); err == nil {
		t.Error("an archive of a file was extracted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := extractBounded(ctx, archive(t, entry{name: "etcd/", kind: tar.TypeDir}, entry{name: "etcd/f", kind: tar.TypeReg, data: filled(10, 'f')}), dst, runtime.NewBudget(1<<20))
	if err == nil || got.Files != 0 {
		t.Errorf("a cancelled copy copied %d files, err %v", got.Files, err)
	}
	if es, _ := os.ReadDir(dst); len(es) != 0 {
		t.Errorf("left %d entries in dst", len(es))
	}
}

// Kept data keeps no world-writable mode (issue 48, item 8): files at
// most 0644, directories at most 0755, no set-id or sticky bit, whatever
// the node's archive says.
func TestExtractMasksModes(t *testing.T) {
	in := archive(t,
		entry{name: "d/", kind: tar.TypeDir, mode: 0o1777},
		entry{name: "d/open", kind: tar.TypeReg, data: []byte("x"), mode: 0o777},
		entry{name: "d/setid", kind: tar.TypeReg, data: []byte("x"), mode: 0o6777},
		entry{name: "d/private", kind: tar.TypeReg, data: []byte("x"), mode: 0o400},
		entry{name: "d/sub/", kind: tar.TypeDir, mode: 0o2777},
	)
	dst := t.TempDir()
	if _, err := extractBounded(context.Background(), in, dst, runtime.NewBudget(1<<20)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{".": fs.ModeDir | 0o755, "open": 0o644, "setid": 0o644, "private": 0o600, "sub": fs.ModeDir | 0o755} {
		fi, err := os.Lstat(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
}
