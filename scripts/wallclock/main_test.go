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

// The comparisons it refuses, and the ones it lets be.
func TestWallclock(t *testing.T) {
	refused := []struct{ name, body, want string }{
		{"time.Since against seconds", `func TestA(t *testing.T) {
	start := time.Now()
	if time.Since(start) > 10*time.Second {
		t.Fatal("slow")
	}
}`, "p_test.go:10: wall-clock time time.Since(...) bounded by 10*time.Second (10s)"},
		{"a variable, >=", `func TestA(t *testing.T) {
	start := time.Now()
	took := time.Since(start).Round(time.Millisecond)
	if took >= time.Minute {
		t.Fatal("slow")
	}
}`, "wall-clock time took bounded by time.Minute (1m0s)"},
		{"a bound on the left", `func TestA(t *testing.T) {
	d := time.Now().Sub(time.Now())
	if 3*time.Second < d {
		t.Fatal("slow")
	}
}`, "bounded by 3*time.Second (3s)"},
		{"a struct field and a package constant", `const within = 10 * time.Second
type result struct{ elapsed time.Duration }
func run() result { s := time.Now(); return result{elapsed: time.Since(s)} }
func TestA(t *testing.T) {
	if r := run(); r.elapsed > within {
		t.Fatal("slow")
	}
}`, "wall-clock time r.elapsed bounded by within (10s)"},
		{"a bound that is no constant", `func check(t *testing.T, limit time.Duration) {
	start := time.Now()
	if time.Since(start) > limit {
		t.Fatal("slow")
	}
}`, "bounded by limit, which is not a constant"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			dir := tree(t, map[string]string{"p/p_test.go": header + c.body + "\n"})
			var out bytes.Buffer
			code, err := run(&out, dir, "")
			if err != nil || code != 1 || !strings.Contains(out.String(), c.want) {
				t.Errorf("exit %d (%v), want 1 saying %q:\n%s", code, err, c.want, out.String())
			}
		})
	}

	allowed := []struct{ name, body string }{
		{"the hang limit", `func TestA(t *testing.T) {
	start := time.Now()
	if time.Since(start) > 5*time.Minute {
		t.Fatal("hung")
	}
}`},
		{"a lower bound", `func TestA(t *testing.T) {
	start := time.Now()
	took := time.Since(start)
	if took < 2*time.Second {
		t.Fatal("too soon")
	}
}`},
		{"two wall-clock durations", `func TestA(t *testing.T) {
	var slowest time.Duration
	for range 3 {
		start := time.Now()
		took := time.Since(start)
		if took > slowest {
			slowest = took
		}
	}
}`},
		{"CPU time", `func cpu() time.Duration { return 0 }
func TestA(t *testing.T) {
	start := cpu()
	if used := cpu() - start; used > time.Second {
		t.Fatal("costly")
	}
}`},
		{"a variable of the same name elsewhere", `func TestA(t *testing.T) {
	start := time.Now()
	took := time.Since(start)
	_ = took
}
func TestB(t *testing.T) {
	took := 3 * time.Second
	if took > time.Second {
		t.Fatal("x")
	}
}`},
	}
	for _, c := range allowed {
		t.Run(c.name, func(t *testing.T) {
			dir := tree(t, map[string]string{"p/p_test.go": header + c.body + "\n"})
			var out bytes.Buffer
			if code, err := run(&out, dir, ""); err != nil || code != 0 {
				t.Errorf("exit %d (%v), want 0:\n%s", code, err, out.String())
			}
		})
	}

	// Outside tests, a wall-clock bound is a program's own business.
	dir := tree(t, map[string]string{"p/p.go": header + "func f(start time.Time) bool { return time.Since(start) > time.Second }\n"})
	var out bytes.Buffer
	if code, _ := run(&out, dir, ""); code != 0 {
		t.Errorf("non-test file: exit %d:\n%s", code, out.String())
	}
}

// An allow-list entry lets its function's comparison be; an entry that
// matches nothing is refused, so the list only shrinks.
func TestWallclockAllowList(t *testing.T) {
	body := header + `func TestSlow(t *testing.T) {
	start := time.Now()
	if time.Since(start) > 10*time.Second {
		t.Fatal("slow")
	}
}
`
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
