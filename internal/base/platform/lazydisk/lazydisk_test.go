package lazydisk

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// mount mounts a lazy disk over a fresh backing directory. Without root or
// FUSE the test fails in CI (the disk faults need both there) and skips,
// saying why, elsewhere.
func mount(t *testing.T) (*Disk, string, string) {
	t.Helper()
	if err := Supported(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return d, backing, mnt
}

func write(t *testing.T, path string, flag int, off int64, data string, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(data), off); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLoseUnsynced: after a power loss every file shows what it had at its
// last fsync, whatever came after (overwrites, appends, truncations across
// pages, a new file, O_TRUNC), and names stay.
func TestLoseUnsynced(t *testing.T) {
	d, backing, mnt := mount(t)
	a, b, c, e := filepath.Join(mnt, "a"), filepath.Join(mnt, "b"), filepath.Join(mnt, "c"), filepath.Join(mnt, "e")
	big := string(bytes.Repeat([]byte("0123456789abcdef"), 1000)) // 16000 bytes: four pages

	write(t, a, os.O_RDWR|os.O_CREATE, 0, "durable", true)
	write(t, a, os.O_RDWR, 0, "DUR", false)       // overwrite, unsynced
	write(t, a, os.O_RDWR, 7, " and lost", false) // append, unsynced
	write(t, b, os.O_RDWR|os.O_CREATE, 0, big, true)
	if err := os.Truncate(b, 5000); err != nil { // cut across pages, unsynced
		t.Fatal(err)
	}
	write(t, b, os.O_RDWR, 9000, "x", false) // grow again with a hole
	write(t, c, os.O_RDWR|os.O_CREATE, 0, "never synced", false)
	write(t, e, os.O_RDWR|os.O_CREATE, 0, "kept", true)
	write(t, e, os.O_RDWR|os.O_TRUNC, 0, "new", false)

	if got := read(t, a); got != "DURable and lost" {
		t.Fatalf("before the loss, a reads %q", got)
	}
	lost, err := d.LoseUnsynced()
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, a); got != "durable" {
		t.Errorf("a = %q, want what its fsync made durable, %q", got, "durable")
	}
	if got := read(t, b); got != big {
		t.Errorf("b has %d bytes after the loss, want its durable %d, unchanged", len(got), len(big))
	}
	if got := read(t, c); got != "" {
		t.Errorf("c, created and never synced, = %q, want empty", got)
	}
	if got := read(t, e); got != "kept" {
		t.Errorf("e, opened O_TRUNC after its fsync, = %q, want %q", got, "kept")
	}
	if got := read(t, filepath.Join(backing, "a")); got != "durable" {
		t.Errorf("the backing file reads %q, want %q", got, "durable")
	}
	if lost.Files != 4 || lost.Bytes == 0 {
		t.Errorf("lost = %+v, want 4 files and their bytes", lost)
	}
	// Once more: nothing is left to lose, and new writes work.
	write(t, a, os.O_RDWR, 0, "again", true)
	if lost, err := d.LoseUnsynced(); err != nil || lost.Files != 0 {
		t.Errorf("a second loss right after an fsync lost %+v, %v", lost, err)
	}
	if got := read(t, a); got != "againle" {
		t.Errorf("a = %q, want %q", got, "againle")
	}
	if st := d.Stats(); st.Ops == 0 || st.Syncs < 4 {
		t.Errorf("stats %+v: the disk saw no writes or too few fsyncs", st)
	}
}

// TestSyncDelay: an fsync takes at least the delay, and counts as slowed;
// without the delay it is held no more (counted, not timed: a loaded
// machine can make any fsync slow, while a held one is counted however
// fast the machine).
func TestSyncDelay(t *testing.T) {
	d, _, mnt := mount(t)
	p := filepath.Join(mnt, "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d.SetSyncDelay(300 * time.Millisecond)
	start := time.Now()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("a slowed fsync took %s, want at least 300ms", took)
	}
	d.SetSyncDelay(0)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Slowed != 1 || st.Syncs != 2 {
		t.Errorf("stats %+v, want 2 fsyncs, 1 slowed: the delay, lifted, held the second", st)
	}
}

// TestStale: a mounted disk is in the mount table under FsName, and
// UnmountStale takes it out.
func TestStale(t *testing.T) {
	_, _, mnt := mount(t)
	ms, err := Stale()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ms, mnt) {
		t.Fatalf("Stale() = %v, want it to list %s", ms, mnt)
	}
	if err := UnmountStale(mnt); err != nil {
		t.Fatal(err)
	}
	if ms, _ := Stale(); slices.Contains(ms, mnt) {
		t.Errorf("%s still mounted after UnmountStale", mnt)
	}
}
