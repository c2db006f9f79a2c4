package cli

// Integration tests of the Redis targets (redis, redis-nopersist,
// redis-sentinel, redlock): the fencecheck binary, run as a user runs it,
// against real Redis servers in Docker (see integration_test.go for the
// binary and the Docker requirement). The runs of one test go in parallel,
// three at a time at most: about 3 minutes for all of them.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// redisRun runs fencecheck with args plus a results directory, a fixed
// seed, 20 s of operations and 2 s between faults, and returns the run's
// directory, its results and its exit code.
func redisRun(t *testing.T, args ...string) (string, resultsJSON, cliResult) {
	t.Helper()
	res := t.TempDir()
	args = append([]string{"run", "--workload", "lock-append", "--nemesis-interval", "2s", "--time-limit", "20s",
		"--results", res, "--seed", "7", "--quiet"}, args...)
	r := runCLI(t, nil, args...)
	t.Cleanup(func() { assertRunsGone(t, res) })
	dir := filepath.Join(res, "latest")
	if r.code != exitValid && r.code != exitInvalid {
		t.Fatalf("exit %d: %s", r.code, lastLines(r.stderr, 20))
	}
	got := readResults(t, dir)
	if len(got.Faults) == 0 {
		t.Errorf("no fault recorded")
	}
	if r.elapsed > runHangs {
		t.Errorf("a 20s run took %s: hung", r.elapsed)
	}
	return dir, got, r
}

// wantLost checks an unfenced run: invalid, with lost updates.
func wantLost(t *testing.T, r cliResult, got resultsJSON) {
	t.Helper()
	if r.code != exitInvalid || got.Valid != false || got.LostUpdates.Lost < 1 {
		t.Errorf("exit %d, valid %v, lost %d of %d; want 1, invalid, lost >= 1",
			r.code, got.Valid, got.LostUpdates.Lost, got.LostUpdates.Acknowledged)
	}
}

// wantFenced checks a fenced run: valid, nothing lost, and the fence
// rejected at least one stale write (so a fault did hit a critical section).
func wantFenced(t *testing.T, r cliResult, got resultsJSON) {
	t.Helper()
	if r.code != exitValid || got.Valid != true || got.LostUpdates.Lost != 0 || got.FenceRejections < 1 {
		t.Errorf("exit %d, valid %v, lost %d, fence rejections %d; want 0, valid, 0, >= 1",
			r.code, got.Valid, got.LostUpdates.Lost, got.FenceRejections)
	}
}

// A holder paused past its lease: unfenced, an acknowledged update is
// lost; token and cas fencing refuse the stale write. On the single server
// and on Redlock (five masters; its token is an INCR on n1 taken right after
// the grant, before the pause).
func TestRedisPauseHolder(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, target := range []struct{ name, nodes string }{{"redis", "1"}, {"redlock", "5"}} {
		t.Run(target.name, func(t *testing.T) {
			for _, fencing := range []string{"none", "token", "cas"} {
				t.Run(fencing, func(t *testing.T) {
					t.Parallel()
					_, got, r := redisRun(t, "--target", target.name, "--nodes", target.nodes, "--fencing", fencing, "--nemesis", "pause-holder")
					if fencing == "none" {
						wantLost(t, r, got)
					} else {
						wantFenced(t, r, got)
					}
				})
			}
		})
	}
}

// tokenResults is results.json's token-monotonic checker.
type tokenResults struct {
	Checkers struct {
		TokenMonotonic checkers.TokensResult `json:"token-monotonic"`
	} `json:"checkers"`
}

// Where Redis tokens break, with token fencing: a Sentinel failover to a
// replica that had not received the last INCRs (the primary is partitioned
// away while clients still reach it), and a server without persistence that
// restarts empty. Both grant tokens again: token-monotonic is invalid, and
// results.json names both grants of each violation, with their times,
// none before the first fault or the first failover the run recorded.
func TestRedisTokenReuse(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, c := range []struct{ name, target, nodes, nemesis string }{
		{"sentinel-failover", "redis-sentinel", "2", "partition:leader"},
		{"restart-without-persistence", "redis-nopersist", "1", "kill"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, got, r := redisRun(t, "--target", c.target, "--nodes", c.nodes, "--fencing", "token", "--nemesis", c.nemesis)
			if r.code != exitInvalid || got.Valid != false {
				t.Errorf("exit %d, valid %v; want 1, invalid", r.code, got.Valid)
			}
			if !strings.Contains(r.stdout, "token-monotonic invalid") {
				t.Errorf("the summary does not say token-monotonic invalid:\n%s", r.stdout)
			}
			var tr tokenResults
			b, err := os.ReadFile(filepath.Join(dir, "results.json"))
			if err == nil {
				err = json.Unmarshal(b, &tr)
			}
			if err != nil {
				t.Fatal(err)
			}
			tm := tr.Checkers.TokenMonotonic
			if tm.Valid != checkers.Invalid || tm.Count < 1 || len(tm.Violations) == 0 {
				t.Fatalf("token-monotonic: %s, %d violations; want invalid with violations", tm.Valid, tm.Count)
			}
			// A token is reused only after a fault or a failover: one
			// the partition set off, or the restart, which may complete
			// after the fault's own end (Sentinel promotes the replica
			// after the heal on a loaded machine), or a failover the
			// Sentinels made on their own before any fault (a loaded
			// machine delays the primary's answers past
			// down-after-milliseconds: seen in a fresh CI run, the
			// recorded leaders changing at 12.5 s and the first fault at
			// 14.8 s).
			first := int64(1 << 62)
			for _, f := range got.Faults {
				first = min(first, f.Start)
			}
			if len(got.Leaders) > 1 {
				first = min(first, got.Leaders[1].Time)
			}
			across := 0
			for _, v := range tm.Violations {
				if v.B.Granted < first {
					t.Errorf("violation %+v: its second grant came before the first fault or failover (%d)", v, first)
				}
				switch {
				case v.Kind == checkers.Duplicate && v.A.Token == v.B.Token:
				case v.Kind == checkers.NotIncreasing && v.A.Token > v.B.Token && v.A.Granted < v.B.Invoked:
				default:
					t.Errorf("violation %+v does not hold", v)
				}
				if v.A.Granted <= 0 || v.B.Granted < v.A.Granted {
					t.Errorf("violation %+v: grant times missing or out of order", v)
				}
				for _, f := range got.Faults {
					stop := f.Stop
					if stop < 0 {
						stop = 1 << 62
					}
					if v.A.Granted < stop && v.B.Granted > f.Start {
						across++
						break
					}
				}
			}
			t.Logf("%s: %s; %d of %d violations have a fault between (or during) their two grants; first: %+v",
				c.name, tm.Message, across, len(tm.Violations), tm.Violations[0])
		})
	}
}

// The Redis server's wall clock jumps forward past the lease
// (clock-skew:server patches its vDSO): the lock key expires at once while
// its holder works, and another client takes the lock. Unfenced, updates
// are lost. cas refuses the old holder's write; so does token fencing,
// because the new holder's read already raised the fence: the old holder is
// not paused, and without fenced reads its lower token would arrive first,
// be accepted, and then be overwritten by the new holder's write.
func TestRedisClockJump(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, fencing := range []string{"none", "token", "cas"} {
		t.Run(fencing, func(t *testing.T) {
			t.Parallel()
			_, got, r := redisRun(t, "--target", "redis", "--nodes", "1", "--fencing", fencing, "--nemesis", "clock-skew:server")
			for _, f := range got.Faults {
				if f.Fault != "clock-skew:server" || f.Error != "" || f.Stop < 0 {
					t.Errorf("fault %+v", f)
				}
			}
			switch fencing {
			case "none":
				wantLost(t, r, got)
			default:
				wantFenced(t, r, got)
			}
		})
	}
}

// Settings the Redis targets cannot run are refused before anything
// starts.
func TestRedisBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "redis-nopersist", "--nodes", "2"}, "--nodes 1"},
		{[]string{"run", "--target", "redis", "--nodes", "1", "--ttl", "50ms"}, "whole milliseconds of at least"},
		{[]string{"run", "--target", "redis-sentinel", "--nodes", "1"}, "--nodes 2 to 5"},
		{[]string{"run", "--target", "redlock", "--nodes", "9"}, "1 to 7"},
	} {
		r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, c.args...)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 254 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
