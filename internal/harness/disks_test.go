package harness

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/platform/lazydisk"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// CleanDisks unmounts the lazy disks a dead harness left under a run's
// directory, and removes it, and leaves other runs' disks alone.
func TestCleanDisks(t *testing.T) {
	if err := lazydisk.Supported(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	mountAt := func(run runtime.RunID) string {
		base := filepath.Join(DisksDir(), run.String(), "n1")
		backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
		for _, d := range []string{backing, mnt} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := lazydisk.Mount(backing, mnt); err != nil { // never unmounted: the harness "died"
			t.Fatal(err)
		}
		return mnt
	}
	deadID, otherID := runtime.NewRunID(), runtime.NewRunID()
	dead, other := mountAt(deadID), mountAt(otherID)
	t.Cleanup(func() {
		_ = lazydisk.UnmountStale(other)
		_ = os.RemoveAll(filepath.Dir(filepath.Dir(other)))
	})
	n, err := CleanDisks(deadID)
	if err != nil || n != 1 {
		t.Fatalf("CleanDisks = %d, %v; want 1 unmounted", n, err)
	}
	ms, _ := lazydisk.Stale()
	if slices.Contains(ms, dead) || !slices.Contains(ms, other) {
		t.Errorf("mounted after cleaning one run: %v", ms)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(dead))); !os.IsNotExist(err) {
		t.Errorf("the dead run's disk directory is still there: %v", err)
	}
}
