package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The careful holder (--recheck) on the built-in recipes, a holder paused
// past its lease, unfenced: after the pause, right before its write, the
// holder asks its recipe whether it still holds the lock; the recipe's
// own deadline has passed, it says no, and the holder writes nothing
// (not-held): no update is lost where the same run without --recheck loses
// one (TestRedisPauseHolder, TestLockAppendFencingModes). Every answer is
// in the history, and the belief record finds no holder told "held" after
// the next grant: fencecheck's recipes judge their lease by their own
// clock, from when their last renewal was sent.
func TestRecheckCarefulHolder(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, target := range []string{"etcd", "redis"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			dir, got, r := seededRun(t, "--target", target, "--recheck", "--fencing", "none", "--nemesis", "pause-holder")
			if r.code != exitValid || got.LostUpdates.Lost != 0 {
				t.Errorf("exit %d, lost %d of %d; want 0, none lost:\n%s", r.code, got.LostUpdates.Lost, got.LostUpdates.Acknowledged, r.stdout)
			}
			b := got.Belief
			if b == nil || b.Answers == 0 || b.Grants == 0 || b.Stale != 0 || b.Unknown != "" || b.ToleranceNS != 100e6 {
				t.Fatalf("belief record %+v: want answers over handovers, none stale, judged with the default tolerance", b)
			}
			if !strings.Contains(r.stdout, "not-held") || !strings.Contains(r.stdout, "belief ") {
				t.Errorf("the summary names no holder that found it no longer held the lock, or no belief line:\n%s", r.stdout)
			}
			h, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(h), `"f":"held"`); n != b.Answers {
				t.Errorf("the history holds %d held phases, the record counts %d", n, b.Answers)
			}
			if !strings.Contains(string(h), `"recheck":true`) {
				t.Error("no careful holder's question in the history")
			}
			// check derives the record again from the history.
			if code, out, _ := runInProcess("check", dir); code != exitValid || !strings.Contains(out, "belief ") {
				t.Errorf("check: exit %d:\n%s", code, out)
			}
			if again := readResults(t, dir).Belief; again == nil || again.Answers != b.Answers || again.Stale != 0 {
				t.Errorf("check's belief record %+v, the run's %+v", again, b)
			}
		})
	}
}

// --recheck goes with the lock-append workload only.
func TestRecheckRefusedElsewhere(t *testing.T) {
	for _, wl := range []string{"register", "election"} {
		res := t.TempDir()
		r := runCLI(t, nil, "run", "--workload", wl, "--recheck", "--results", res)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, "--recheck goes with the lock-append workload") || r.cpu > refuseCPU {
			t.Errorf("%s: exit %d after %s of CPU: %s", wl, r.code, r.cpu, lastLines(r.stderr, 3))
		}
		noRunWritten(t, res)
	}
}

// --recheck with a client program (the client protocol's held): one that
// implements held is asked, through its process, by the careful holder and
// the belief sampler, and its answers are judged; one that does not is
// never valid: its belief windows are unknown, and so is a run that
// nothing else made invalid.
func TestRecheckThroughClientProtocol(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	t.Run("rueidislock answers", func(t *testing.T) {
		t.Parallel()
		dir, got, r := seededRun(t, "--target", "redis", "--client-dir", example("go-rueidislock"), "--recheck", "--fencing", "none", "--nemesis", "pause-holder")
		b := got.Belief
		if b == nil || b.Answers == 0 || b.Grants == 0 || b.Unknown != "" {
			t.Fatalf("belief record %+v: want the program's answers over handovers, judged", b)
		}
		if !strings.Contains(r.stdout, "belief ") {
			t.Errorf("no belief line in the summary:\n%s", r.stdout)
		}
		h, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(h), `"f":"held"`); n != b.Answers || !strings.Contains(string(h), `"recheck":true`) {
			t.Errorf("the history holds %d held phases (the record counts %d), careful holder's questions: %v", n, b.Answers, strings.Contains(string(h), `"recheck":true`))
		}
	})
	// sh-redis answers with its own deadline; with a PostgreSQL resource,
	// whose object in init has endpoints of its own, it still talks to
	// Redis (it once read the database's address and acquired nothing).
	t.Run("sh-redis with a postgres resource answers", func(t *testing.T) {
		t.Parallel()
		_, got, _ := seededRun(t, "--target", "redis", "--client-dir", example("sh-redis"), "--resource", "postgres", "--recheck", "--fencing", "none",
			"--nemesis", "pause-holder")
		b := got.Belief
		if got.LostUpdates.Acknowledged == 0 || b == nil || b.Answers == 0 || b.Grants == 0 || b.Unknown != "" {
			t.Fatalf("%d acknowledged, belief record %+v: want the program's writes and its answers over handovers, judged", got.LostUpdates.Acknowledged, b)
		}
	})
	t.Run("a program that cannot answer", func(t *testing.T) {
		t.Parallel()
		// sh-redis without held in its init reply: it is never asked.
		dir := exampleCopy(t, "sh-redis", func(m string) string { return m })
		script := filepath.Join(dir, "lock.sh")
		src, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		mute := strings.Replace(string(src), `[\"lock\",\"held\"]`, `[\"lock\"]`, 1)
		if mute == string(src) {
			t.Fatal("lock.sh's init reply does not implement held")
		}
		if err := os.WriteFile(script, []byte(mute), 0o644); err != nil {
			t.Fatal(err)
		}
		res := t.TempDir()
		r := runCLI(t, nil, "run", "--target", "redis", "--client-dir", dir, "--recheck", "--fencing", "none",
			"--time-limit", "10s", "--seed", "1", "--results", res, "--quiet")
		t.Cleanup(func() { assertRunsGone(t, res) })
		if r.code == exitValid || (r.code != exitUnknown && r.code != exitInvalid) {
			t.Fatalf("exit %d, want unknown (or invalid on its own): %s", r.code, lastLines(r.stderr, 10))
		}
		b := readResults(t, filepath.Join(res, "latest")).Belief
		if b == nil || !strings.Contains(b.Unknown, "cannot say whether it holds the lock") {
			t.Errorf("belief record %+v: want unknown, the library cannot be asked", b)
		}
	})
}
