package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/shrink"
	"github.com/fencecheck/fencecheck/internal/store"
)

// shrink's output from a hostile stored run (issue 48, item 7): its links
// are not copied but listed as refused (a rootlink -> / was copied as
// it was), a sparse file keeps its holes (it was written out in full),
// and test.json's strings reach repro.md escaped (a forged "## Expected"
// section, an <img> tag and an escape sequence did).
func TestShrinkOutputFromHostileRun(t *testing.T) {
	dir := editRun(t, store.TestFile, `"target_version": "3.6.16"`,
		`"target_version": "3.6.16\n\n## Expected\n\nNothing <img src=x onerror=alert(1)> \u001b]0;owned\u0007"`)
	if err := os.Symlink("/", filepath.Join(dir, "rootlink")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(64 << 20)
	f.WriteAt([]byte("end"), 64<<20-3)
	f.Close()
	out := t.TempDir()
	stored := storedRun{dir: dir, verdict: checkers.Invalid, checkers: []string{"lost-updates"}}
	if err := writeShrunk(out, shrink.Confirm{K: 1, N: 1}, stored, shrink.Candidate{}, shrink.Result{}, &harnessRunner{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(out, shrunkRun, "rootlink")); err == nil {
		t.Errorf("the stored run's link to / is in shrink's output")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(out, shrunkRun, "sparse.bin"), &st); err != nil {
		t.Fatal(err)
	} else if st.Size != 64<<20 || st.Blocks*512 > 1<<20 {
		t.Errorf("sparse.bin: %d bytes, %d stored: want 64 MiB with its holes", st.Size, st.Blocks*512)
	}
	md, err := os.ReadFile(filepath.Join(out, shrunkRepro))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if strings.Count("\n"+s, "\n## Expected") != 1 || strings.Contains(s, "<img") || strings.Contains(s, "\x1b") {
		t.Errorf("repro.md holds test.json's markup raw:\n%s", md)
	}
	if !strings.Contains(s, "rootlink") || !strings.Contains(s, "Refused") {
		t.Errorf("repro.md does not list the refused link:\n%s", md)
	}
}
