package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// sparse is a file of size bytes at path that takes no room on disk.
func sparse(t *testing.T, path string, size int64) string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHugeStoredFilesRefused (issue 48, item 3): every stored file is
// read within its bound, enforced while it is read: a 20 GB sparse
// experiment file, test.json or results.json is refused (254) with the
// binary's resident set under 100 MB (the old code read them whole: 3 GB
// for 1.5 GB).
func TestHugeStoredFilesRefused(t *testing.T) {
	const huge = 20 << 30
	tmp := t.TempDir()
	exp := sparse(t, filepath.Join(tmp, "huge.yaml"), huge)
	root := filepath.Join(tmp, "results")
	hugeTest := newRoot(t, filepath.Join(tmp, "r1"), "etcd-token-pause-holder")
	sparse(t, filepath.Join(hugeTest, store.TestFile), huge)
	hugeResults := newRoot(t, filepath.Join(tmp, "r2"), "etcd-token-pause-holder")
	sparse(t, filepath.Join(hugeResults, store.ResultsFile), huge)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"run -f", []string{"run", "-f", exp, "--results", root}, "huge.yaml"},
		{"matrix -f --list", []string{"matrix", "-f", exp, "--list"}, "huge.yaml"},
		{"check test.json", []string{"check", hugeTest}, store.TestFile},
		{"rerun test.json", []string{"rerun", hugeTest, "--results", root}, store.TestFile},
		{"check results.json", []string{"check", hugeResults}, store.ResultsFile},
		{"shrink results.json", []string{"shrink", hugeResults, "--results", root}, store.ResultsFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := stats(t, hugeTest, hugeResults) // not hashed: 20 GB of zeros
			r := runHostile(t, hangLimit, c.args...)
			r.expect(t, exitBadArgs, hangLimit, c.want, "at most")
			if r.maxRSS > 100<<20 {
				t.Errorf("max RSS %d MB, want under 100 MB", r.maxRSS>>20)
			}
			if after := stats(t, hugeTest, hugeResults); after != before {
				t.Errorf("the stored runs changed:\n%s\nbefore:\n%s", after, before)
			}
		})
	}
}

// stats lists every file under dirs with its size and modification time.
func stats(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s %d %s\n", path, info.Size(), info.ModTime().Format(time.RFC3339Nano))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
