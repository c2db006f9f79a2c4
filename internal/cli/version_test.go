package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// version prints the module version, the revision (or that it is
// unknown), the Go version, the worker binary and the tags images tags
// prints, in that order.
func TestVersionLines(t *testing.T) {
	code, out, stderr := runInProcess("version")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "fencecheck ") || len(lines[0]) == len("fencecheck ") {
		t.Errorf("first line %q: want fencecheck VERSION", lines[0])
	}
	if !strings.HasPrefix(lines[1], "revision   ") {
		t.Errorf("second line %q: want the revision", lines[1])
	}
	if !strings.Contains(out, "\ngo         "+runtime.Version()+"\n") {
		t.Errorf("no go line with %s:\n%s", runtime.Version(), out)
	}
	if !strings.Contains(out, "\nworker     ") {
		t.Errorf("no worker line:\n%s", out)
	}
	code, tags, stderr := runInProcess("images", "tags")
	if code != 0 {
		t.Fatalf("images tags: exit %d: %s", code, stderr)
	}
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l, "images ") || strings.HasPrefix(l, "        ") {
			got = append(got, strings.TrimSpace(strings.TrimPrefix(l, "images")))
		}
	}
	if want := strings.Fields(tags); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("image tags %q, want images tags' %q", got, want)
	}
	if code, _, _ := runInProcess("version", "extra"); code != exitBadArgs {
		t.Errorf("version extra: exit %d, want %d", code, exitBadArgs)
	}
}

// A binary built in a git clone prints the revision the go command stamped
// (the vcs.* settings), and it wins over one given through -ldflags -X
// (what make build adds for a worktree, where the go command stamps
// nothing). The module's files are committed to a new repository, so that
// the test holds in a worktree too and sees this tree's edits.
func TestVersionOfABuildWithVCS(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The tracked files, and new Go files not yet added.
	files, err := exec.Command("git", "-C", root, "ls-files", "-c").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	added, err := exec.Command("git", "-C", root, "ls-files", "-o", "--exclude-standard", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files = append(files, added...)
	repo := t.TempDir()
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		if st, err := os.Lstat(filepath.Join(root, f)); err != nil || !st.Mode().IsRegular() {
			continue // deleted in the tree, not yet in the index
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(repo, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "version test")
	rev := git("rev-parse", "HEAD")

	bin := filepath.Join(t.TempDir(), "fencecheck")
	// -trimpath as make build, so that the packages compiled already are
	// reused; -buildvcs=true whatever GOFLAGS or go.env say.
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=true",
		"-ldflags=-X github.com/fencecheck/fencecheck/internal/base/buildinfo.revision=0123456789abcdef0123456789abcdef01234567",
		"-o", bin, "./cmd/fencecheck")
	build.Dir = repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	s := string(out)
	if !strings.Contains(s, "\nrevision   "+rev+"\n") {
		t.Errorf("want revision %s (unmodified), the go command's:\n%s", rev, s)
	}
	if !strings.Contains(s, "\ncommitted  ") {
		t.Errorf("no commit time:\n%s", s)
	}
	// The go command's pseudo-version names the revision.
	if first, _, _ := strings.Cut(s, "\n"); !strings.Contains(first, rev[:12]) {
		t.Errorf("first line %q: want the pseudo-version of %s", first, rev[:12])
	}
}
