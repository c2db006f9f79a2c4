package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// checkedRun is a copy of a recorded run with its results.json, written by
// check.
func checkedRun(t *testing.T, name string, exit int) string {
	t.Helper()
	dir := copyRun(t, filepath.Join("testdata", "runs", name))
	if code, stdout, stderr := runInProcess("check", dir); code != exit {
		t.Fatalf("check %s: exit %d, want %d\n%s%s", name, code, exit, stdout, stderr)
	}
	return dir
}

// A valid run (token fencing held) is refused before anything runs: exit
// 254, nothing to shrink; so are a bad --confirm, a bad --budget and an
// --out that holds files.
func TestShrinkRefuses(t *testing.T) {
	valid := checkedRun(t, "etcd-token-pause-holder", exitValid)
	invalid := checkedRun(t, "etcd-none-pause-holder", exitInvalid)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{valid}, "is valid (fencing token, nemesis pause-holder): nothing to shrink"},
		{[]string{invalid, "--confirm", "3/2"}, "--confirm"},
		{[]string{invalid, "--budget", "0"}, "--budget"},
		{[]string{invalid, "--budget", "soon"}, "--budget"},
		{[]string{invalid, "--out", full}, "is not empty"},
	} {
		res := t.TempDir()
		code, stdout, stderr := runInProcess(append([]string{"shrink", "--results", res}, tc.args...)...)
		if code != exitBadArgs || !strings.Contains(stderr, tc.want) {
			t.Errorf("shrink %v: exit %d, want 254 saying %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.want, stdout, stderr)
		}
		// Refused before any run starts: nothing written where runs go.
		noRunWritten(t, res)
	}
}

// As rerun, shrink never takes an attached run's servers and credentials
// from its test.json: a stored run naming a server and a local auth file
// is refused (254) naming the flags to give again, and that server
// receives nothing.
func TestShrinkTakesNoStoredCredentials(t *testing.T) {
	const secret = "SECRET-of-the-machine"
	stored := listen(t, stagingAddr(t))
	dir := storedAttachedRun(t, "redis://"+stored.addr(), secret)
	if code, stdout, stderr := runInProcess("check", dir); code != exitInvalid {
		t.Fatalf("check: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	res := t.TempDir()
	code, stdout, stderr := runInProcess("shrink", dir, "--results", res)
	assertRefusedQuietly(t, cliResult{code: code, stdout: stdout, stderr: stderr}, res, secret, []string{"--endpoints", "--auth-file", "never from test.json"})
	time.Sleep(100 * time.Millisecond) // a connection in flight lands
	if n, got := stored.received(); n > 0 || got != "" {
		t.Errorf("the server the stored run names received %d connections: %q", n, got)
	}
}

// shrink's repro.md from a hostile stored run, through the command line
// (issue 48, item 7): test.json's strings reach it filtered (safetext)
// and escaped as Markdown text (safetext.Markdown, shrink.Run's default,
// which cmdShrink keeps): a forged "## Expected" section, an <img> tag and an escape
// sequence did reach it raw. A budget of 1ns ends the search before any
// run: the output holds the stored run (exit 2), and nothing runs.
func TestShrinkReproFromHostileRun(t *testing.T) {
	dir := editRun(t, store.TestFile, `"target_version": "3.6.16"`,
		`"target_version": "3.6.16\n\n## Expected\n\nNothing <img src=x onerror=alert(1)> \u001b]0;owned\u0007"`)
	if code, stdout, stderr := runInProcess("check", dir); code != exitInvalid {
		t.Fatalf("check: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	res, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runInProcess("shrink", dir, "--budget", "1ns", "--results", res, "--out", out)
	if code != exitUnknown || !strings.Contains(stdout, "found    no smaller run") {
		t.Fatalf("shrink: exit %d, want 2 with no smaller run\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	noRunWritten(t, res)
	md, err := os.ReadFile(filepath.Join(out, "repro.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if strings.Count("\n"+s, "\n## Expected") != 1 || strings.Contains(s, "<img") || strings.Contains(s, "\x1b") || !strings.Contains(s, "&lt;img") {
		t.Errorf("repro.md holds test.json's markup raw:\n%s", md)
	}
}
