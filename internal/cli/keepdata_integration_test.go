package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// onlyFilesAndDirs fails for anything under dir that is neither a
// directory nor a regular file, and returns the regular files' names
// relative to dir.
func onlyFilesAndDirs(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsRegular():
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		case !d.IsDir():
			t.Errorf("%s: kept as %s, not a file or a directory", p, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestKeepData: --keep-data on real etcd runs, unfenced under
// pause-holder, at once. always keeps each node's etcd data directory
// (its WAL and its bolt database) under data/n1..n3, says so in the
// summary, results.json and the report, and check keeps the record;
// never keeps nothing; auto with a small limit keeps an invalid run's data
// up to the limit and lists what it left out, and keeps nothing of a
// valid one. Every run's containers are gone after it.
func TestKeepData(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	run := func(t *testing.T, keep ...string) (cliResult, string) {
		res := t.TempDir()
		args := append([]string{"run", "--target", "etcd", "--fencing", "none", "--nemesis", "pause-holder",
			"--nemesis-interval", "2s", "--time-limit", "20s", "--seed", "7", "--results", res}, keep...)
		r := runCLI(t, nil, args...)
		if r.code != exitValid && r.code != exitInvalid {
			t.Fatalf("exit %d, want 0 or 1", r.code)
		}
		assertRunsGone(t, res)
		return r, filepath.Join(res, "latest")
	}
	t.Run("always", func(t *testing.T) {
		t.Parallel()
		r, dir := run(t, "--keep-data", "always")
		k := readResults(t, dir).KeptData
		if k == nil || k.Mode != "always" || len(k.Nodes) != 3 {
			t.Fatalf("results.json's kept_data: %+v, want always, 3 nodes", k)
		}
		for i, n := range k.Nodes {
			name := []string{"n1", "n2", "n3"}[i]
			if n.Node != name || n.From != "/var/lib/etcd" || n.Error != "" || n.LeftOutCount != 0 || n.RefusedCount != 0 {
				t.Errorf("node %d: %+v", i, n)
			}
			if n.Stored <= 0 || n.Stored > n.Size || uint64(n.Stored) > k.Limit {
				t.Errorf("%s: %d bytes stored of %d, limit %d", name, n.Stored, n.Size, k.Limit)
			}
			files := onlyFilesAndDirs(t, filepath.Join(dir, store.DataDir, name))
			var wal, db bool
			for _, f := range files {
				wal = wal || strings.HasPrefix(f, "member/wal/") && strings.HasSuffix(f, ".wal")
				db = db || f == "member/snap/db"
			}
			if !wal || !db || len(files) != n.Files {
				t.Errorf("data/%s holds %q: want member/wal/*.wal and member/snap/db, %d files as recorded", name, files, n.Files)
			}
		}
		if !strings.Contains(r.stdout, "data kept        --keep-data always") || !strings.Contains(r.stdout, "data/n1 from n1:/var/lib/etcd: ") {
			t.Errorf("the summary does not say what was kept:\n%s", r.stdout)
		}
		report, err := os.ReadFile(filepath.Join(dir, store.ReportFile))
		if err != nil || !strings.Contains(string(report), "<h2>Data kept</h2>") || !strings.Contains(string(report), "data/n3/ <span") {
			t.Errorf("the report has no Data kept section or no data/n3/ in its files (err %v)", err)
		}
		// A check of the stored run keeps the record.
		runCLI(t, nil, "check", dir)
		if again := readResults(t, dir).KeptData; again == nil || len(again.Nodes) != 3 {
			t.Errorf("after check, kept_data is %+v", again)
		}
	})
	t.Run("never", func(t *testing.T) {
		t.Parallel()
		r, dir := run(t, "--keep-data", "never")
		if _, err := os.Lstat(filepath.Join(dir, store.DataDir)); err == nil {
			t.Errorf("--keep-data never made %s", store.DataDir)
		}
		if k := readResults(t, dir).KeptData; k != nil || strings.Contains(r.stdout, "data kept") {
			t.Errorf("--keep-data never: kept_data %+v, summary\n%s", k, r.stdout)
		}
	})
	t.Run("auto-limited", func(t *testing.T) {
		t.Parallel()
		const limit = 64 << 10 // less than one etcd node's 84 KiB
		r, dir := run(t, "--keep-data-limit", "64KiB")
		k := readResults(t, dir).KeptData
		if r.code == exitValid {
			// No loss this time: auto keeps nothing of a valid run.
			if _, err := os.Lstat(filepath.Join(dir, store.DataDir)); err == nil || k != nil {
				t.Errorf("a valid run under auto kept %+v", k)
			}
			return
		}
		if k == nil || k.Mode != "auto" || k.Limit != limit || len(k.Nodes) != 3 {
			t.Fatalf("an invalid run under auto kept %+v, want its 3 nodes up to 64KiB", k)
		}
		var stored int64
		left := 0
		for _, n := range k.Nodes {
			stored += n.Stored
			left += n.LeftOutCount
		}
		if stored > limit || left == 0 {
			t.Errorf("stored %d bytes of the %d limit, left out %d files: want at most the limit, some left out", stored, limit, left)
		}
		if !strings.Contains(r.stdout, "left out past the 64.0 KiB limit (--keep-data-limit): ") {
			t.Errorf("the summary does not list what the limit left out:\n%s", r.stdout)
		}
	})
}
