package cli

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper process of TestClosedPipeEndsNothing: it runs commands whose
// output goes to stdout and stderr, both a pipe nobody reads any more,
// then leaves a mark that it lived to the end.
func TestClosedPipeHelper(t *testing.T) {
	mark := os.Getenv("FENCECHECK_TEST_PIPE_MARK")
	if mark == "" {
		t.Skip("the helper process of TestClosedPipeEndsNothing")
	}
	help := run([]string{"help"}, os.Stdout, os.Stderr)          // stdout
	unknown := run([]string{"frobnicate"}, os.Stdout, os.Stderr) // stderr
	if err := os.WriteFile(mark, []byte{byte(help), byte(unknown)}, 0o600); err != nil {
		os.Exit(3)
	}
	os.Exit(0)
}

// A closed output pipe (`fencecheck run ... | head -3`) ends no command:
// a write to stdout or stderr that meets it fails (EPIPE, which every
// print ignores) instead of killing the process with SIGPIPE (exit 141),
// which left a run's containers, network, paused processes and keys
// behind. The commands' own exit codes come through.
func TestClosedPipeEndsNothing(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "mark")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first write
	cmd := exec.Command(os.Args[0], "-test.run", "^TestClosedPipeHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FENCECHECK_TEST_PIPE_MARK="+mark)
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("the process was killed by %v", ws.Signal())
		}
	}
	if err != nil {
		t.Fatalf("the helper: %v", err)
	}
	b, err := os.ReadFile(mark)
	if err != nil || len(b) != 2 || b[0] != exitValid || b[1] != exitBadArgs {
		t.Errorf("the commands' exit codes: %v (%v), want help %d and an unknown command %d", b, err, exitValid, exitBadArgs)
	}
}

// On real containers: a run whose stdout and stderr go to a pipe whose
// reader leaves once the cluster is ready (`2>&1 | head -5`) runs to its
// end: it exits with a verdict, writes results.json, and leaves no
// container or network of its run (so no paused process either). It used
// to die of SIGPIPE at its next line, mid-run.
func TestRunSurvivesAClosedOutputPipe(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	runPipeClosedAtReady(t, res, "run", "--target", "etcd", "--nemesis", "pause-holder", "--time-limit", "12s",
		"--fencing", "none", "--seed", "1", "--results", res)
}

// The same run attached to servers fencecheck did not start (a Redis with
// a password, outside any run): cut at the same line, it still deletes
// its keys from the server at its end, whose other keys keep their values.
func TestAttachedRunSurvivesAClosedOutputPipe(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	const password = "pipe-staging-pw"
	addr, rdb := stagingRedis(t, "staging-redis-pipe", password)
	ctx := context.Background()
	authFile := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(authFile, []byte(":"+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := t.TempDir()
	runPipeClosedAtReady(t, res, "run", "--target", "redis", "--endpoints", "redis://"+addr, "--auth-file", authFile,
		"--nemesis", "pause-holder", "--time-limit", "12s", "--fencing", "none", "--seed", "1", "--results", res)
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rdb.Get(ctx, "team:config").Result(); len(keys) != 1 || v != "keep me" {
		t.Errorf("the staging redis holds %q (team:config %q): want the team's key alone, the run's deleted", keys, v)
	}
}

// runPipeClosedAtReady runs fencecheck with args, its stdout and stderr a
// pipe read like head -N, N the line that says the cluster is ready (from
// then on the run has containers and keys to leave behind), and checks
// that it ran to its end: a verdict, results.json in res, and nothing of
// the run left on the machine.
func runPipeClosedAtReady(t *testing.T, res string, args ...string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fencecheckBinary(t), args...)
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	br := bufio.NewReader(pr)
	for i := 1; ; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		t.Logf("read: %s", strings.TrimSpace(line))
		if strings.Contains(line, "cluster ready") {
			break
		}
	}
	pr.Close() // head exits
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		cmd.Process.Signal(os.Interrupt)
		t.Fatalf("still running 5 minutes on: interrupted (%v)", <-done)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled():
		t.Errorf("the run was killed by %v", ee.Sys().(syscall.WaitStatus).Signal())
	case errors.As(err, &ee) && ee.ExitCode() > exitUnknown:
		t.Errorf("exit %d, want a verdict", ee.ExitCode())
	case err != nil && ee == nil:
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(res, "latest", "results.json")); err != nil {
		t.Errorf("no results.json: %v", err)
	}
	assertRunsGone(t, res)
}
