package cli

// Hostile input through the built binary: each case asserts the exit code,
// the cause on stderr, that the input files and any stored results are
// byte-for-byte unchanged, and bounds on time and memory. They need no
// Docker: DOCKER_HOST points at a socket that does not exist and
// FENCECHECK_SKIP_DOCKER is unset, so a command that reached Docker would
// fail with 255, not pass.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// hostileResult is what a run of the binary did.
type hostileResult struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration // wall time: logged, never bounded below runHangs
	cpu            time.Duration // the child's CPU time, user and system
	maxRSS         int64         // bytes
}

// noDockerEnv is the environment of the binary under test: this process's,
// without FENCECHECK_SKIP_DOCKER, with Docker pointing nowhere.
func noDockerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCECHECK_SKIP_DOCKER=") && !strings.HasPrefix(kv, "DOCKER_HOST=") {
			env = append(env, kv)
		}
	}
	return append(env, "DOCKER_HOST=unix:///nonexistent/fencecheck-test/docker.sock")
}

// startHostile starts the binary in the directory dir ("": this one);
// wait with finish.
func startHostile(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(fencecheckBinary(t), args...)
	cmd.Env = noDockerEnv()
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errb
}

// hwm is the peak resident set of process pid's own memory (VmHWM), in
// bytes; 0 once it is gone.
func hwm(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// finish waits for cmd, killing it after limit (runHangs at least). The max RSS it reports is
// the child's own: the kernel's figure for a child (wait4's ru_maxrss)
// also counts the test process's peak at the fork, since the child ran in
// the parent's memory until it exec'd; when that figure is no higher than
// the test process's own peak, the child's own peak, sampled from
// /proc every 2 ms while it ran, is taken instead.
func finish(t *testing.T, cmd *exec.Cmd, out, errb *bytes.Buffer, start time.Time, limit time.Duration) hostileResult {
	t.Helper()
	// A kill is a hang limit, never a speed test: at least runHangs.
	limit = max(limit, runHangs)
	parentPeak := hwm(os.Getpid())
	var sampled atomic.Int64
	stopSampling := make(chan struct{})
	sampling := make(chan struct{})
	var overMemory atomic.Bool
	go func() {
		defer close(sampling)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := hwm(cmd.Process.Pid); v > sampled.Load() {
				sampled.Store(v)
			}
			if sampled.Load() > maxHostileRSS && !overMemory.Swap(true) {
				cmd.Process.Kill() // the machine is shared: no test may take it all
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		close(stopSampling)
		<-sampling
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("fencecheck %s: still running after %s; killed\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args[1:], " "), limit, out, lastLines(errb.String(), 15))
	}
	if overMemory.Load() {
		t.Fatalf("fencecheck %s: killed at a resident set over %d MB\nstderr:\n%s", strings.Join(shorten(cmd.Args[1:]), " "), maxHostileRSS>>20, lastLines(errb.String(), 15))
	}
	r := hostileResult{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start), cpu: bound.ChildCPU(cmd.ProcessState)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("fencecheck %v: %v", cmd.Args[1:], err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = int64(ru.Maxrss) << 10 // Linux counts kilobytes
		if r.maxRSS <= parentPeak {
			r.maxRSS = sampled.Load()
		}
	}
	t.Logf("fencecheck %s: exit %d in %s (%s of CPU), max RSS %d MB\n%s%s", strings.Join(shorten(cmd.Args[1:]), " "), r.code, r.elapsed.Round(time.Millisecond), r.cpu.Round(time.Millisecond), r.maxRSS>>20, r.stdout, lastLines(r.stderr, 15))
	return r
}

// maxHostileRSS is the resident set past which finish kills the binary:
// input that grows it without bound must not take the machine with it.
const maxHostileRSS = 1 << 30

// runHostile runs the binary to its end (killed after limit).
func runHostile(t *testing.T, limit time.Duration, args ...string) hostileResult {
	t.Helper()
	return runHostileIn(t, "", limit, args...)
}

// runHostileIn runs the binary in the directory dir.
func runHostileIn(t *testing.T, dir string, limit time.Duration, args ...string) hostileResult {
	t.Helper()
	fencecheckBinary(t) // built before the clock starts
	debug.FreeOSMemory()
	start := time.Now()
	cmd, out, errb := startHostile(t, dir, args...)
	return finish(t, cmd, out, errb, start, limit)
}

// writeInput writes a file made of parts; a part may be a repeat, so that
// a 20 MB input never sits in this process's memory (the child's maximum
// RSS, as Linux counts it, includes this process's at the fork).
func writeInput(t *testing.T, path string, parts ...any) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			w.WriteString(p)
		case repeat:
			chunk := strings.Repeat(p.s, max(1, (64<<10)/len(p.s)))
			per := len(chunk) / len(p.s)
			for n := p.n; n > 0; n -= per {
				w.WriteString(chunk[:min(n, per)*len(p.s)])
			}
		default:
			t.Fatalf("part %T", p)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// repeat is s, n times.
type repeat struct {
	s string
	n int
}

func shorten(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) > 120 {
			a = a[:120] + "..."
		}
		out[i] = a
	}
	return out
}

// expect checks the exit code, that stderr holds every one of want, and
// bounds on the child's CPU time (cpu) and memory: what a loaded machine
// does not change.
func (r hostileResult) expect(t *testing.T, code int, cpu time.Duration, want ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d", r.code, code)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", lastLines(r.stderr, 5), w)
		}
	}
	if r.cpu > cpu {
		t.Errorf("used %s of CPU time, want under %s", r.cpu.Round(time.Millisecond), cpu)
	}
	// The binary alone takes some 20-40 MB; hostile input must not add
	// hundreds. (Linux's figure is an upper bound of the child's: it
	// includes the test process's RSS at the fork.)
	if r.maxRSS > 200<<20 {
		t.Errorf("max RSS %d MB, want under 200 MB", r.maxRSS>>20)
	}
}

// snapshot records every file under the given paths (files or
// directories): its content's hash, a symbolic link's target, or that it
// is missing.
func snapshot(t *testing.T, paths ...string) map[string]string {
	t.Helper()
	s := map[string]string{}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					s[path] = "missing"
					return nil
				}
				return err
			}
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(path)
				if err != nil {
					return err
				}
				s[path] = "-> " + target
			case d.Type()&fs.ModeNamedPipe != 0:
				s[path] = "fifo"
			case d.Type().IsRegular():
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				defer f.Close()
				h := sha256.New()
				if _, err := f.WriteTo(h); err != nil {
					return err
				}
				s[path] = hex.EncodeToString(h.Sum(nil))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// unchanged checks that the files under paths are as before.
func unchanged(t *testing.T, before map[string]string, paths ...string) {
	t.Helper()
	after := snapshot(t, paths...)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed: %s, before %s", p, after[p], h)
		}
	}
	for p, h := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared (%s)", p, h)
		}
	}
}

// Jepsen histories with hostile lines exit 254 naming FILE:LINE, in bounded
// time and memory (a 10 MB line of '[' once overflowed the Go stack; 400 KB
// of them took 500 MB).
func TestJepsenHostileLines(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, parts ...any) string { return writeInput(t, filepath.Join(dir, name), parts...) }
	const kvOK = `{:process 0, :type :invoke, :f :get, :key "1", :value nil}` + "\n"
	const logOK = "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n"
	cases := []struct {
		name, file, model, want string
	}{
		{"kv: 10 MB of nesting", write("nest10m.edn", kvOK, "{:process ", repeat{"[", 10 << 20}, "\n"), "kv", ":2: line longer than 1048576 bytes"},
		{"log: 10 MB of nesting", write("nest10m.log", "INFO  jepsen.util - 1\t:invoke\t:cas\t", repeat{"[", 10 << 20}, "\n"), "cas-register", ":1: line longer than 1048576 bytes"},
		{"kv: 1000 lines of 10 KB of nesting", write("nest-lines.edn", repeat{"{:process " + strings.Repeat("[", 10<<10) + "\n", 1000}), "kv", ":1: column 74: vectors and maps nested more than 64 deep"},
		{"log: 900 KB of nesting", write("nest900k.log", logOK, "INFO  jepsen.util - 1\t:invoke\t:cas\t", repeat{"[", 900 << 10}, "\n"), "cas-register", ":2: jepsen.util line: column 100: vectors and maps nested more than 64 deep"},
		{"kv: a 20 MB line", write("line20m.edn", kvOK, kvOK[:len(kvOK)-1]+" ;", repeat{"x", 20 << 20}, "\n"), "kv", ":2: line longer than 1048576 bytes"},
		{"log: a 20 MB line", write("line20m.log", logOK, repeat{"y", 20 << 20}), "cas-register", ":2: line longer than 1048576 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			r := runHostile(t, time.Minute, "check", "--jepsen-history", c.file, "--model", c.model)
			// 30 s: a bound on the parse (a quadratic one of 20 MB takes
			// minutes), not on a loaded machine's speed.
			r.expect(t, exitBadArgs, 30*time.Second, c.file+c.want)
			unchanged(t, before, dir)
		})
	}
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// --viz never writes over the history (by any name) and, without --force,
// over no existing file.
func TestJepsenVizRefusals(t *testing.T) {
	dir := t.TempDir()
	hist := copyFile(t, filepath.Join(jepsenTestdata(t), "jepsen-kv", "c10-bad.txt"), filepath.Join(dir, "c10-bad.txt"))
	other := filepath.Join(dir, "other.html")
	if err := os.WriteFile(other, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(hist, filepath.Join(dir, "hardlink.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("c10-bad.txt", filepath.Join(dir, "symlink.html")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nothing-here", filepath.Join(dir, "dangling.html")); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, viz string
		force     bool
		want      string
	}{
		{"the history", hist, false, "is the history " + hist + " itself"},
		{"the history, forced", hist, true, "is the history " + hist + " itself"},
		{"the history by another path", sub + "/../c10-bad.txt", true, "itself: refusing to write over an input"},
		{"a hard link to the history", filepath.Join(dir, "hardlink.txt"), true, "itself: refusing to write over an input"},
		{"a symbolic link to the history", filepath.Join(dir, "symlink.html"), true, "itself: refusing to write over an input"},
		{"an existing file", other, false, "--viz " + other + " exists: refusing to overwrite it (--force replaces it)"},
		{"a dangling link", filepath.Join(dir, "dangling.html"), false, "exists (a link to nothing): refusing to replace it"},
		{"a directory", sub, true, "--viz " + sub + " is a directory"},
		{"a missing directory", filepath.Join(dir, "none", "viz.html"), false, "cannot write in its directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			args := []string{"check", "--viz", c.viz, "--jepsen-history", hist, "--model", "kv"}
			if c.force {
				args = append(args[:1], append([]string{"--force"}, args[1:]...)...)
			}
			r := runHostile(t, time.Minute, args...)
			r.expect(t, exitBadArgs, refuseCPU, c.want)
			unchanged(t, before, dir)
		})
	}

	// --force replaces an existing file (not the history), through a
	// rename: no temporary file is left.
	before := snapshot(t, hist)
	r := runHostile(t, time.Minute, "check", "--force", "--viz", other, "--jepsen-history", hist, "--model", "kv")
	r.expect(t, exitInvalid, 10*time.Second)
	unchanged(t, before, hist)
	if b, err := os.ReadFile(other); err != nil || !bytes.Contains(b, []byte("<html")) {
		t.Errorf("--force: %s is not the visualization (%v): %.40q", other, err, b)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// A dangling link is replaced too (the link, not its target).
	r = runHostile(t, time.Minute, "check", "--force", "--viz", filepath.Join(dir, "dangling.html"), "--jepsen-history", hist, "--model", "kv")
	r.expect(t, exitInvalid, 10*time.Second)
	if st, err := os.Lstat(filepath.Join(dir, "dangling.html")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("dangling.html after --force: %v %v", st, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nothing-here")); err == nil {
		t.Errorf("--force wrote through the link")
	}
}

// Flags that would reach Docker, or fail late with 255, exit 254 at once,
// naming the flag, before anything is written (the working directory,
// where ./results would go, stays empty).
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "results-file")
	if err := os.WriteFile(file, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	served := filepath.Join(dir, "served")
	if err := os.Mkdir(served, 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 300)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"negative rpc timeout", []string{"run", "--rpc-timeout", "-1s"}, "--rpc-timeout must be positive, not -1s"},
		{"1ns rpc timeout", []string{"run", "--rpc-timeout", "1ns"}, "--rpc-timeout 1ns: at least 1ms"},
		{"huge rpc timeout", []string{"run", "--rpc-timeout", "2000000h"}, "--rpc-timeout 2000000h0m0s: at most 168h0m0s"},
		{"negative ready timeout", []string{"run", "--ready-timeout", "-5s"}, "--ready-timeout must be positive, not -5s"},
		{"1ns ready timeout", []string{"run", "--ready-timeout", "1ns"}, "--ready-timeout 1ns: at least 1ms"},
		{"huge ttl", []string{"run", "--ttl", "2000000h"}, "--ttl 2000000h0m0s: at most 1h0m0s"},
		{"huge ttl on consul", []string{"run", "--target", "consul", "--ttl", "2562047h"}, "--ttl 2562047h0m0s: at most 1h0m0s"},
		{"results is a regular file", []string{"run", "--results", file}, "--results " + file + ": is not a directory"},
		{"results under a regular file", []string{"run", "--results", file + "/sub"}, "--results " + file + "/sub: " + file + " is not a directory"},
		{"over-long name", []string{"run", "--name", long}, "--name: run name of 300 bytes"},
		{"matrix: 1ns rpc timeout", []string{"matrix", "--rpc-timeout", "1ns"}, "--rpc-timeout 1ns: at least 1ms"},
		{"matrix: results is a regular file", []string{"matrix", "--results", file}, "--results " + file + ": is not a directory"},
		{"matrix: seeds past 2^64-1", []string{"matrix", "--seed", "18446744073709551615", "--runs", "2"}, "--seed 18446744073709551615 with --runs 2: the seeds 18446744073709551615, 0, ... would wrap past 2^64-1"},
		{"serve: port out of range", []string{"serve", "--addr", ":99999", served}, `--addr ":99999": port "99999": want a number from 0 to 65535`},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			r := runHostileIn(t, work, time.Minute, c.args...)
			r.expect(t, exitBadArgs, refuseCPU, c.want)
			unchanged(t, before, dir)
		})
	}
}

// newRoot makes a results root the way a run does (store.NewRun: with its
// latest link) holding a copy of a recorded run; it returns the run
// directory.
func newRoot(t *testing.T, root, recorded string) string {
	t.Helper()
	src := copyRun(t, filepath.Join("testdata", "runs", recorded))
	run, err := store.NewRun(root, recorded, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{store.TestFile, store.HistoryFile} {
		copyFile(t, filepath.Join(src, f), run.Path(f))
	}
	return run.Dir
}

// editLines rewrites a history.jsonl line by line.
func editLines(t *testing.T, path string, edit func(lines []string) []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := edit(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noTemporaries checks that no temporary file is left in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A history that reads but that the checkers cannot judge (events
// reversed, a completion with nothing outstanding, a value that does not
// decode) exits 254 with the cause, and leaves the stored results, report,
// junit.xml, linearizability.html and index.html as they were.
func TestCheckCannotJudgeKeepsResults(t *testing.T) {
	for _, c := range []struct {
		name, recorded string
		edit           func([]string) []string
		want           string
	}{
		{"events reversed", "etcd-none-pause-holder", func(l []string) []string { slices.Reverse(l); return l }, "which has nothing outstanding"},
		{"an ok with nothing outstanding", "etcd-none-pause-holder", func(l []string) []string {
			return append(l, `{"index":99999,"time_ns":99999999999,"process":77,"type":"ok","f":"append","value":{"element":1}}`)
		}, "event 99999: ok of process 77, which has nothing outstanding"},
		{"a value that does not decode", "etcd-none-pause-holder", func(l []string) []string {
			return append(l, `{"index":99998,"time_ns":99999999998,"process":77,"type":"invoke","f":"append","value":{"element":"x"}}`,
				`{"index":99999,"time_ns":99999999999,"process":77,"type":"ok","f":"append","value":{"element":"x"}}`)
		}, "checkers: bad history"},
		{"register: events reversed", "etcd-register-serializable-partition", func(l []string) []string { slices.Reverse(l); return l }, "which has nothing outstanding"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := newRoot(t, root, c.recorded)
			// A first check stores an invalid verdict, with its
			// visualization, and the root's index.
			r := runHostile(t, time.Minute, "check", dir)
			if r.code != exitInvalid {
				t.Fatalf("first check: exit %d, want 1", r.code)
			}
			for _, f := range []string{store.ResultsFile, store.ReportFile, report.JUnitFile, store.LinFile, "../../" + report.IndexFile} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatalf("first check: %v", err)
				}
			}
			editLines(t, filepath.Join(dir, store.HistoryFile), c.edit)
			before := snapshot(t, root)
			r = runHostile(t, time.Minute, "check", dir)
			r.expect(t, exitBadArgs, 10*time.Second, filepath.Join(dir, store.HistoryFile)+": cannot check, nothing written: ", c.want)
			unchanged(t, before, root)
			if strings.Contains(r.stdout, "report") {
				t.Errorf("stdout names a report:\n%s", r.stdout)
			}
		})
	}
}

// A history in which two events share an index (a line copied, or one
// event's index written over another's) is bad input: check exits 254
// naming the index and both lines, and writes nothing.
func TestCheckRefusesDuplicateIndexes(t *testing.T) {
	root := t.TempDir()
	dir := newRoot(t, root, "etcd-none-pause-holder")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", dir}, &stdout, &stderr); code != exitInvalid {
		t.Fatalf("first check: exit %d, want 1: %s", code, stderr.String())
	}
	var index int
	editLines(t, filepath.Join(dir, store.HistoryFile), func(l []string) []string {
		// The fifth event takes the second's index.
		var second, fifth map[string]any
		if json.Unmarshal([]byte(l[1]), &second) != nil || json.Unmarshal([]byte(l[4]), &fifth) != nil {
			t.Fatal("recorded history does not decode")
		}
		index = int(second["index"].(float64))
		fifth["index"] = second["index"]
		b, _ := json.Marshal(fifth)
		l[4] = string(b)
		return l
	})
	before := snapshot(t, root)
	stdout.Reset()
	stderr.Reset()
	code := run([]string{"check", dir}, &stdout, &stderr)
	want := fmt.Sprintf("line 5: index %d is also line 2's", index)
	if code != exitBadArgs || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q: want 254 and %q", code, stderr.String(), want)
	}
	unchanged(t, before, root)
}

// A history that pairs but whose completion is timed before its
// invocation breaks an assumption of the checkers: unknown (2), the reason
// on stdout, and every stored file as it was (the README says so beside
// the 254 of a history that does not pair).
func TestCheckBrokenAssumptionIsUnknown(t *testing.T) {
	root := t.TempDir()
	dir := newRoot(t, root, "etcd-none-pause-holder")
	if r := runHostile(t, time.Minute, "check", dir); r.code != exitInvalid {
		t.Fatalf("first check: exit %d, want 1", r.code)
	}
	editLines(t, filepath.Join(dir, store.HistoryFile), func(l []string) []string {
		// The first invocation, timed after everything else.
		var e map[string]any
		if err := json.Unmarshal([]byte(l[0]), &e); err != nil {
			t.Fatal(err)
		}
		e["time_ns"] = int64(1e15)
		b, _ := json.Marshal(e)
		l[0] = string(b)
		return l
	})
	before := snapshot(t, root)
	r := runHostile(t, time.Minute, "check", dir)
	if r.code != exitUnknown || !strings.Contains(r.stdout, "cannot check, nothing written") || !strings.Contains(r.stdout, "before its invocation") {
		t.Errorf("exit %d, stdout %q: want 2 and the broken assumption", r.code, r.stdout)
	}
	unchanged(t, before, root)
}

// A check that can judge replaces every output, linearizability.html
// included: a stale one goes when the new check wrote none. Nothing
// temporary is left.
func TestCheckReplacesOutputs(t *testing.T) {
	root := t.TempDir()
	dir := newRoot(t, root, "etcd-token-pause-holder")
	stale := map[string]string{store.ResultsFile: `{"valid": false}`, store.ReportFile: "old report", report.JUnitFile: "old junit", store.LinFile: "old visualization"}
	for f, content := range stale {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runHostile(t, time.Minute, "check", dir)
	r.expect(t, exitValid, 10*time.Second)
	for f, content := range stale {
		b, err := os.ReadFile(filepath.Join(dir, f))
		switch {
		case f == store.LinFile && !errors.Is(err, fs.ErrNotExist):
			t.Errorf("the stale %s is still there (%v)", f, err)
		case f != store.LinFile && (err != nil || string(b) == content):
			t.Errorf("%s not rewritten (%v)", f, err)
		}
	}
	var res struct {
		Valid any `json:"valid"`
	}
	readJSONFile(t, filepath.Join(dir, store.ResultsFile), &res)
	if res.Valid != true {
		t.Errorf("results.json: valid %v", res.Valid)
	}
	noTemporaries(t, dir)
}

// check DIR updates the index of a results root fencecheck made (its
// latest link points at a run inside it), and no other: a run directory
// elsewhere is checked without scanning or writing two levels up.
func TestCheckIndexOnlyInResultsRoot(t *testing.T) {
	t.Run("a results root", func(t *testing.T) {
		root := t.TempDir()
		dir := newRoot(t, root, "etcd-token-pause-holder")
		r := runHostile(t, time.Minute, "check", dir)
		r.expect(t, exitValid, 10*time.Second)
		index := filepath.Join(root, report.IndexFile)
		if b, err := os.ReadFile(index); err != nil || !strings.Contains(string(b), "etcd-token-pause-holder/20261130T090000.000Z/report.html") {
			t.Errorf("index.html does not list the run (%v)", err)
		}
		if !strings.Contains(r.stdout, "  index            "+index+"\n") {
			t.Errorf("stdout does not name the index:\n%s", r.stdout)
		}
	})
	for _, c := range []struct {
		name   string
		latest string // the latest link's target; "" for none
	}{
		{"no latest link", ""},
		{"a latest link out of the directory", "../elsewhere/run"},
		{"a latest link to an absolute path", "/tmp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "name", "stamp")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			src := copyRun(t, filepath.Join("testdata", "runs", "etcd-token-pause-holder"))
			for _, f := range []string{store.TestFile, store.HistoryFile} {
				copyFile(t, filepath.Join(src, f), filepath.Join(dir, f))
			}
			// Another "run" beside it, which an index would list.
			other := filepath.Join(base, "other", "x")
			if err := os.MkdirAll(other, 0o755); err != nil {
				t.Fatal(err)
			}
			copyFile(t, filepath.Join(src, store.TestFile), filepath.Join(other, store.TestFile))
			if c.latest != "" {
				if err := os.Symlink(c.latest, filepath.Join(base, store.Latest)); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, base)
			r := runHostile(t, time.Minute, "check", dir)
			r.expect(t, exitValid, 10*time.Second)
			want := "  index            not updated: " + base + ` is not a results directory fencecheck made (no "latest" link to a run in it)`
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
			// Only the run's own outputs appeared.
			after := snapshot(t, base)
			for p := range after {
				if _, ok := before[p]; !ok && filepath.Dir(p) != dir {
					t.Errorf("%s appeared", p)
				}
			}
			delete(before, filepath.Join(dir, store.ResultsFile))
			for p, h := range before {
				if after[p] != h {
					t.Errorf("%s changed", p)
				}
			}
			noTemporaries(t, dir)
		})
	}
}

// waitOpeningFIFO waits until a thread of process pid is blocked opening a
// FIFO (the kernel's wait_for_partner): then it reads its input, its
// signal handling set up. Where /proc does not tell, it waits a second.
func waitOpeningFIFO(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
		if len(tasks) == 0 {
			break
		}
		for _, w := range tasks {
			if b, _ := os.ReadFile(w); string(b) == "wait_for_partner" {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("cannot see process %d opening the FIFO; waiting a second", pid)
	time.Sleep(time.Second)
}

// mkfifo makes a FIFO at path.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A FIFO as input (no writer yet, or one that stops writing) no longer
// makes check deaf to SIGTERM and Ctrl-C: it ends at once, with exit 2
// (unknown: nothing was checked), the cause on stderr, nothing written.
func TestCheckFIFOSignals(t *testing.T) {
	for _, c := range []struct {
		name   string
		jepsen bool // --jepsen-history, else RUN_DIR
		writer bool // a writer opens the FIFO, writes a line and stops
		sig    syscall.Signal
	}{
		{"run dir, no writer, SIGTERM", false, false, syscall.SIGTERM},
		{"run dir, no writer, Ctrl-C", false, false, syscall.SIGINT},
		{"run dir, a writer that stops, SIGTERM", false, true, syscall.SIGTERM},
		{"jepsen history, no writer, SIGTERM", true, false, syscall.SIGTERM},
		{"jepsen history, a writer that stops, SIGTERM", true, true, syscall.SIGTERM},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := newRoot(t, root, "etcd-none-pause-holder")
			args := []string{"check", dir}
			fifo := filepath.Join(dir, store.HistoryFile)
			line := ""
			if c.jepsen {
				fifo = filepath.Join(root, "history.edn")
				args = []string{"check", "--jepsen-history", fifo, "--model", "kv"}
				line = `{:process 0, :type :invoke, :f :get, :key "1", :value nil}` + "\n"
			} else {
				// Stored results from a first check must survive.
				if r := runHostile(t, time.Minute, "check", dir); r.code != exitInvalid {
					t.Fatalf("first check: exit %d", r.code)
				}
				b, err := os.ReadFile(fifo)
				if err != nil {
					t.Fatal(err)
				}
				line, _, _ = strings.Cut(string(b), "\n")
				line += "\n"
			}
			mkfifo(t, fifo)
			before := snapshot(t, root)

			fencecheckBinary(t)
			start := time.Now()
			cmd, out, errb := startHostile(t, "", args...)
			if c.writer {
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for the reader
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close() // open, silent, until the end
				if _, err := w.WriteString(line); err != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond) // it reads the line, waits for more
			} else {
				waitOpeningFIFO(t, cmd.Process.Pid)
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			// The FIFO's writer stays open and silent until the test
			// ends, so only the signal can end the read: the exit
			// itself, with the message below, shows the signal was
			// heeded (a hang fails at finish's hang limit).
			r := finish(t, cmd, out, errb, start, runHangs)
			r.expect(t, exitUnknown, time.Minute, "interrupted ("+c.sig.String()+" signal received) while reading "+fifo+": nothing checked, nothing written")
			unchanged(t, before, root)
		})
	}
}

// A test.json that is not a regular file (a FIFO would block) is bad input,
// found at once.
func TestCheckTestJSONFIFO(t *testing.T) {
	root := t.TempDir()
	dir := newRoot(t, root, "etcd-token-pause-holder")
	mkfifo(t, filepath.Join(dir, store.TestFile))
	before := snapshot(t, root)
	r := runHostile(t, time.Minute, "check", dir)
	r.expect(t, exitBadArgs, refuseCPU, filepath.Join(dir, store.TestFile)+" is not a regular file")
	unchanged(t, before, root)
}

// Error messages on stderr are cut, saying how much more there was.
func TestClip(t *testing.T) {
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip of a short message: %q", got)
	}
	got := clip(strings.Repeat("é", 3000), maxMessage)
	if !strings.HasSuffix(got, "… (1904 bytes more)") || len(got) > maxMessage+40 || !utf8.ValidString(got) {
		t.Errorf("clip: %d bytes, ending %q", len(got), got[len(got)-30:])
	}
}

// check of a run whose history holds a 50 MB string in a fault's
// parameters (it once made a 2.25 GB report.html before it was killed)
// writes a report of a few hundred KB, in bounded time and memory, and
// leaves the history as it was.
func TestCheckHugeFaultParam(t *testing.T) {
	root := t.TempDir()
	dir := newRoot(t, root, "etcd-none-pause-holder")
	hist := filepath.Join(dir, store.HistoryFile)
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	// Streamed, so that the 50 MB never sit in this process (whose RSS
	// Linux counts in the child's).
	at := strings.Index(string(b), `"params":{`)
	if at < 0 || !strings.Contains(string(b[strings.LastIndex(string(b[:at]), "\n")+1:at]), `"process":"nemesis"`) {
		t.Fatal("no fault with parameters in the history")
	}
	at += len(`"params":{`)
	writeInput(t, hist, string(b[:at]), `"junk":"J`, repeat{"j", 50 << 20}, `",`, string(b[at:]))
	b = nil
	before := snapshot(t, hist)
	r := runHostile(t, 5*time.Minute, "check", dir)
	if r.code != exitInvalid {
		t.Errorf("exit %d, want 1 (the run lost updates)", r.code)
	}
	// CPU time, not wall time (which a loaded runner stretched past a
	// minute once): the report of the 50 MB parameter takes seconds of
	// CPU; one that multiplied the parameter would take minutes.
	if r.cpu > time.Minute {
		t.Errorf("used %s of CPU time", r.cpu)
	}
	// The history's line, its event, the fault and results.json each
	// hold the 50 MB; the report must not multiply them.
	if r.maxRSS > 1<<30 {
		t.Errorf("max RSS %d MB, want under 1 GB", r.maxRSS>>20)
	}
	unchanged(t, before, hist)
	st, err := os.Stat(filepath.Join(dir, store.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report.html: %d KB", st.Size()>>10)
	if st.Size() > 2<<20 {
		t.Errorf("report.html is %d KB, want under 2 MB", st.Size()>>10)
	}
	b, _ = os.ReadFile(filepath.Join(dir, store.ReportFile))
	if !strings.Contains(string(b), "junk=Jjjj") || !strings.Contains(string(b), " bytes more)") {
		t.Errorf("the report does not show the parameter cut")
	}
}

// Errors keep both their causes: errors.Is finds the usage error (exit
// 254) and what went wrong underneath.
func TestErrorsKeepCauses(t *testing.T) {
	_, err := cmdCheck(t.Context(), []string{filepath.Join(t.TempDir(), "none")}, io.Discard, io.Discard)
	for _, target := range []error{errUsage, store.ErrNoRun, fs.ErrNotExist} {
		if !errors.Is(err, target) {
			t.Errorf("check of a missing directory: %v is not %v", err, target)
		}
	}
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = cmdCheck(t.Context(), []string{"--check-timeout", "1s", "--jepsen-history", f, "--model", "kv", "--viz", f + "/x"}, io.Discard, io.Discard)
	if !errors.Is(err, errUsage) || !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("--viz under a file: %v, want usage and ENOTDIR", err)
	}
}
