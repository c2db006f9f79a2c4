package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes files (path -> content) under a new directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const header = "package p\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n"

// fixture reads testdata/NAME: a test file's body, after header. A first
// line "// want: TEXT" is what the refusal must say, and is not part of it.
// The fixtures live in testdata (which the check skips) so that the
// comparisons they plant are not in the repository's own test files.
func fixture(t *testing.T, name string) (body, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	body = string(b)
	if w, rest, ok := strings.Cut(body, "\n"); ok && strings.HasPrefix(w, "// want: ") {
		want, body = strings.TrimPrefix(w, "// want: "), rest
	}
	return header + body, want
}

// The comparisons it refuses (testdata/refused: an upper bound on
// time.Since against seconds, a variable with >=, a bound on the left, a
// struct field against a package constant, a bound that is no constant),
// and the ones it lets be (testdata/allowed: the hang limit, a lower
// bound, two wall-clock durations, CPU time, a variable of the same name
// in another function).
func TestWallclock(t *testing.T) {
	for _, kind := range []string{"refused", "allowed"} {
		names, err := filepath.Glob(filepath.Join("testdata", kind, "*.txt"))
		if err != nil || len(names) < 5 {
			t.Fatalf("%s fixtures: %v %v", kind, names, err)
		}
		for _, p := range names {
			name := filepath.Join(kind, filepath.Base(p))
			t.Run(name, func(t *testing.T) {
				body, want := fixture(t, name)
				dir := tree(t, map[string]string{"p/p_test.go": body})
				var out bytes.Buffer
				code, err := run(&out, dir, "")
				switch {
				case kind == "allowed" && (err != nil || code != 0):
					t.Errorf("exit %d (%v), want 0:\n%s", code, err, out.String())
				case kind == "refused" && (want == "" || err != nil || code != 1 || !strings.Contains(out.String(), want)):
					t.Errorf("exit %d (%v), want 1 saying %q:\n%s", code, err, want, out.String())
				}
			})
		}
	}
	// The first refusal names its file and line.
	body, _ := fixture(t, "refused/time-since-against-seconds.txt")
	var out bytes.Buffer
	if code, _ := run(&out, tree(t, map[string]string{"p/p_test.go": body}), ""); code != 1 || !strings.Contains(out.String(), "p/p_test.go:10: wall-clock time time.Since(...) bounded by 10*time.Second (10s)") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}

	// Outside tests, a wall-clock bound is a program's own business.
	body, _ = fixture(t, "nontest.txt")
	out.Reset()
	if code, _ := run(&out, tree(t, map[string]string{"p/p.go": body}), ""); code != 0 {
		t.Errorf("non-test file: exit %d:\n%s", code, out.String())
	}
}

// An allow-list entry lets its function's comparison be; an entry that
// matches nothing is refused, so the list only shrinks.
func TestWallclockAllowList(t *testing.T) {
	body, _ := fixture(t, "slow.txt")
	dir := tree(t, map[string]string{
		"p/p_test.go": body,
		"allow.txt":   "# reviewed\np/p_test.go TestSlow the bound is the property\n",
		"stale.txt":   "p/p_test.go TestSlow the bound is the property\np/p_test.go TestGone once needed\n",
		"bad.txt":     "p/p_test.go\n",
	})
	var out bytes.Buffer
	if code, err := run(&out, dir, filepath.Join(dir, "allow.txt")); err != nil || code != 0 {
		t.Errorf("allowed: exit %d (%v):\n%s", code, err, out.String())
	}
	out.Reset()
	if code, _ := run(&out, dir, filepath.Join(dir, "stale.txt")); code != 1 || !strings.Contains(out.String(), `"p/p_test.go TestGone" matches no comparison`) {
		t.Errorf("a stale entry: exit %d:\n%s", code, out.String())
	}
	if code, err := run(&out, dir, filepath.Join(dir, "bad.txt")); code != 2 || err == nil {
		t.Errorf("a malformed entry: exit %d (%v)", code, err)
	}
}

// The repository itself passes, with its allow-list: what make lint runs.
func TestRepositoryHasNoWallclockBound(t *testing.T) {
	var out bytes.Buffer
	code, err := run(&out, "../..", "allow.txt")
	if err != nil || code != 0 {
		t.Errorf("exit %d (%v):\n%s", code, err, out.String())
	}
}
