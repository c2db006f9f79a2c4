package cli

// Liveness end to end, on real etcd clusters: kill-holder (a holder's
// container killed inside its critical section) and kill:leader.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/leaders"
)

// livenessOf reads results.json's liveness block.
func livenessOf(t *testing.T, dir string) *checkers.LivenessResult {
	t.Helper()
	var r struct {
		Liveness *checkers.LivenessResult `json:"liveness"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Liveness == nil {
		t.Fatalf("results.json has no liveness block")
	}
	return r.Liveness
}

// kill-holder with token fencing stays valid: each killed holder's
// operation ends info, a fresh process continues on its restarted worker,
// and the lock passes on once the dead holder's lease expires (about a TTL:
// etcd renews every TTL/3). kill:leader: etcd elects another leader and the
// lock is granted again, within 8 leases. Both runs are measured in
// results.json's liveness block.
func TestLiveness(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, tc := range []struct {
		nemesis string
		check   func(t *testing.T, l *checkers.LivenessResult)
	}{
		{"kill-holder", func(t *testing.T, l *checkers.LivenessResult) {
			s := l.HolderCrash
			if s == nil || s.Count < 1 || l.ServerKill != nil {
				t.Fatalf("holder crashes %+v, server kills %+v: want 1 or more measured", s, l.ServerKill)
			}
			neverRecovered(t, l, checkers.LivenessHolderCrash, 3*2*time.Second)
			// etcd expires a lease at most a TTL after its last renewal
			// (checked every 500 ms), and the waiter then takes the lock
			// (seen: 0.71-1.21 TTLs; on a loaded CI machine the waiter's
			// own acquire adds to it).
			if s.MedianTTLs < 0.5 || s.MedianTTLs > 2 || s.MaxTTLs > 3 {
				t.Errorf("recovery after a holder crash: median %.2f TTLs, max %.2f: want about 1 TTL (median 0.5-2, none past 3)", s.MedianTTLs, s.MaxTTLs)
			}
		}},
		{"kill:leader", func(t *testing.T, l *checkers.LivenessResult) {
			s := l.ServerKill
			if s == nil || s.Count < 1 || l.HolderCrash != nil {
				t.Fatalf("server kills %+v, holder crashes %+v: want 1 or more measured", s, l.HolderCrash)
			}
			neverRecovered(t, l, checkers.LivenessServerKill, 16*time.Second)
			// Bounded by the 2 L a killed server stays down, the 4 L RPC
			// timeout of a holder's request stuck on it, and 2 L for the
			// election and a dead holder's lease (seen: 1-10.3 s).
			if s.MaxS > 16 || s.MedianExcess == nil {
				t.Errorf("unavailability after a leader kill: max %.2fs, excess measured %v: want within 8 leases (16 s), with an excess", s.MaxS, s.MedianExcess != nil)
			}
		}},
	} {
		t.Run(tc.nemesis, func(t *testing.T) {
			t.Parallel()
			dir, got, r := seededRun(t, "--target", "etcd", "--fencing", "token", "--nemesis", tc.nemesis,
				"--nemesis-interval", "2s", "--time-limit", "20s")
			if r.code != exitValid || got.Valid != true || got.LostUpdates.Lost != 0 {
				t.Fatalf("exit %d, valid %v, lost %d: want a valid run", r.code, got.Valid, got.LostUpdates.Lost)
			}
			for _, f := range got.Faults {
				// A fault the run's end cut short (its signal sent as
				// the time limit came) is recorded so, and healed.
				if strings.HasPrefix(f.Error, cutShort) {
					t.Logf("fault %s on %v at %d: %s", f.Fault, f.Nodes, f.Start, f.Error)
					continue
				}
				if f.Stop < 0 || f.Error != "" {
					t.Errorf("fault %s on %v: stop %d, error %q", f.Fault, f.Nodes, f.Stop, f.Error)
				}
			}
			l := livenessOf(t, dir)
			t.Logf("liveness: %s", l.Message)
			// Unknown when a fault had no grant before the history
			// ended: tc.check tells a censored one from a lock that never
			// came back.
			if l.Valid != checkers.Valid && l.Valid != checkers.Unknown {
				t.Errorf("liveness %s: %s %s", l.Valid, l.Message, l.Error)
			}
			tc.check(t, l)
			if tc.nemesis == "kill-holder" {
				killedContinue(t, dir, 5)
			} else {
				leaderChangedOrReplay(t, dir, got, func() (string, resultsJSON) {
					dir, got, _ := seededRun(t, "--target", "etcd", "--fencing", "token", "--nemesis", tc.nemesis,
						"--nemesis-interval", "2s", "--time-limit", "20s", "--seed", "2")
					return dir, got
				})
			}
		})
	}
}

// leaderChangedOrReplay is leaderChanged of a run, and of replay's run
// (seed 2) when the first had no leader fault to check; it fails when
// neither had.
func leaderChangedOrReplay(t *testing.T, dir string, got resultsJSON, replay func() (string, resultsJSON)) {
	t.Helper()
	if leaderChanged(t, dir, got) {
		return
	}
	if dir, got = replay(); !leaderChanged(t, dir, got) {
		t.Errorf("seeds 1 and 2: no leader fault took the leader in place")
	}
}

// cutShort begins the error of a fault that the run's end cut short after
// it may have taken effect (nemesis.Fault's Inject).
const cutShort = "cut short: "

// neverRecovered fails the test for each fault of kind that a client
// waited for and that no grant followed within bound. A fault that no
// grant followed because the history ended sooner than bound after it (a
// late kill; a loaded machine) is censored: no evidence either way, and
// logged.
func neverRecovered(t *testing.T, l *checkers.LivenessResult, kind string, bound time.Duration) {
	t.Helper()
	for _, ev := range l.Events {
		if ev.Kind != kind || !ev.Waiting || ev.Recovered {
			continue
		}
		if time.Duration(ev.S*float64(time.Second)) >= bound {
			t.Errorf("%s on %v: no grant in the %.2fs from it to the history's end (bound %s)", ev.Fault, ev.Nodes, ev.S, bound)
		} else {
			t.Logf("%s on %v: the history ended %.2fs after it, before any grant: censored", ev.Fault, ev.Nodes, ev.S)
		}
	}
}

// killedContinue checks a kill-holder run's history: every killed
// holder's operation ended info, and a fresh process completed operations
// on its worker after the restart.
func killedContinue(t *testing.T, dir string, workers int) {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := history.Pair(events)
	if err != nil {
		t.Fatal(err)
	}
	faults, err := history.Faults(events)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range faults {
		if strings.HasPrefix(f.Error, cutShort) {
			continue // the kill may or may not have landed
		}
		p, ok := f.HeldProcess()
		if !ok {
			t.Fatalf("fault %v: no holder's process", f.Nodes)
		}
		var last *history.Op
		later := false
		for i := range ops {
			o := &ops[i]
			if o.Process == p {
				last = o
			}
			if int(o.Process)%workers == int(p)%workers && o.Process > p && o.Type() == history.Ok && o.Invoke.Time > f.Stop {
				later = true
			}
		}
		if last == nil || last.Type() != history.Info {
			t.Errorf("killed process %d: its last operation %v, want info", p, last)
		}
		// A restarted container's fresh worker reconnects before its
		// first operation: checked for restarts 10 s or more before the
		// history's end (5 s was too little at load 28: a restart at
		// 12.8 s of 20, nothing completed after it).
		if !later && f.Stop < events[len(events)-1].Time-int64(10e9) {
			t.Errorf("worker of killed process %d: no fresh process completed an operation in the 10s or more from its restart at %d to the history's end", p, f.Stop)
		}
	}
}

// lastLeaderBefore is the last recorded change at or before t that named a
// leader, or nil: a poll that found none (an election, a server that does
// not serve) says nothing of which node leads.
func lastLeaderBefore(ls []leaders.Seen, t int64) *leaders.Seen {
	var last *leaders.Seen
	for i := range ls {
		if ls[i].Time <= t && ls[i].Leader != "" {
			last = &ls[i]
		}
	}
	return last
}

// leaderChanged checks the leaders a run with faults aimed at the leader
// recorded (results.json) and its report draws: the first answer names a
// server; the first such fault that was in place names the node it took
// as the leader (its record's leader, or its one node; the first whose
// node the polls had not seen replaced before its injection began: its
// start less its took), and from a poll before that (the kill comes
// before its start is recorded) the
// target named another node, or none, before the run ended; every change
// is on the report's server lanes (a crown titled "NODE became leader
// at", a hollow one titled "no leader at").
//
// It returns false, failing nothing, when every leader fault of the run
// took a node the polls had already seen replaced (a starved machine's
// election between the nemesis's question and its fault, with no later
// fault in the time limit): the caller plays the run again with another
// seed (leaderRun), and a second such run fails.
func leaderChanged(t *testing.T, dir string, got resultsJSON) bool {
	t.Helper()
	ls := got.Leaders
	t.Logf("leaders: %+v", ls)
	if len(ls) == 0 || !slices.ContainsFunc(ls, func(l leaders.Seen) bool { return strings.HasPrefix(l.Leader, "n") }) {
		t.Fatalf("leaders %+v: want an answer naming a server", ls)
	}
	var aimed *history.Fault
	node := ""
	raced := 0
	for i, f := range got.Faults {
		if !strings.Contains(f.Fault, "leader") || f.Error != "" {
			continue
		}
		switch {
		case f.Leader != "":
			node = f.Leader
		case len(f.Nodes) == 1:
			node = f.Nodes[0]
		default:
			continue
		}
		// The leader may move between the nemesis's question and its
		// kill (an election on a starved machine): a fault whose node
		// the polls had already seen replaced is not the one checked.
		// The fault asked for the leader, and may have killed it, up to
		// its took before its recorded start (an Engine call that lagged
		// on a loaded machine).
		if last := lastLeaderBefore(ls, f.Start-int64(f.Took)-int64(leaders.Poll)); last != nil && last.Leader != node {
			t.Logf("%s took %s at %d ns, but the polls saw %q lead from %d ns: not checked", f.Fault, node, f.Start, last.Leader, last.Time)
			raced++
			continue
		}
		aimed = &got.Faults[i]
		break
	}
	if aimed == nil && raced > 0 {
		t.Logf("every leader fault took a node already replaced (%d): nothing to check in this run", raced)
		return false
	}
	if aimed == nil {
		t.Fatalf("no fault aimed at the leader in place that names it: %+v", got.Faults)
	}
	from := aimed.Start - int64(aimed.Took) - int64(leaders.Poll)
	moved := false
	for _, l := range ls {
		moved = moved || (l.Time > from && l.Leader != node)
	}
	if !moved {
		t.Errorf("%s of %s at %d ns: the recorded leaders %+v never named another node or none after it", aimed.Fault, node, aimed.Start, ls)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls[1:] {
		want := "no leader at " + report.Secs(l.Time)
		if l.Leader != "" {
			want = l.Leader + " became leader at " + report.Secs(l.Time)
		}
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html does not draw the change %q", want)
		}
	}
	return true
}
