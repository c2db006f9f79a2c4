package cli

// --locks N on real containers: N independent locks, each with its own
// list, clients spread over them, the history checked lock by lock.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

func TestLocks(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	for _, fencing := range []string{"none", "token"} {
		t.Run(fencing, func(t *testing.T) {
			t.Parallel()
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--target", "etcd", "--locks", "2", "--concurrency", "4", "--fencing", fencing,
				"--nemesis", "pause-holder", "--nemesis-interval", "2s", "--time-limit", "16s", "--results", res, "--seed", "7")
			dir := filepath.Join(res, "latest")
			if r.code != exitValid && r.code != exitInvalid {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if fencing == "token" && r.code != exitValid {
				t.Errorf("token fencing, two locks: exit %d, want 0", r.code)
			}
			// test.json records the knob; results.json judges each lock.
			var test struct {
				Locks int `json:"locks"`
			}
			var out struct {
				Locks map[string]struct {
					Valid       any `json:"valid"`
					LostUpdates struct {
						Acknowledged int `json:"acknowledged"`
					} `json:"lost_updates"`
				} `json:"locks"`
			}
			for f, v := range map[string]any{"test.json": &test, "results.json": &out} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil || json.Unmarshal(b, v) != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
			if test.Locks != 2 || len(out.Locks) != 2 {
				t.Fatalf("test.json locks %d, results.json locks %v; want 2 and 2", test.Locks, out.Locks)
			}
			for name, l := range out.Locks {
				if l.LostUpdates.Acknowledged < 1 {
					t.Errorf("%s: %d acknowledged, want some", name, l.LostUpdates.Acknowledged)
				}
			}
			// Each worker's appends name its lock (process mod 4, mod 2),
			// and each lock's final list holds only elements of its own.
			events, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lockOf := map[int64]int{}
			finals := map[int][]int64{}
			for _, e := range events {
				switch {
				case e.F == lockappend.FAppend && e.Type == history.Invoke:
					var inv lockappend.Invoke
					if err := json.Unmarshal(e.Value, &inv); err != nil {
						t.Fatal(err)
					}
					if e.Process >= 0 && int(e.Process)%4%2 != inv.Lock {
						t.Errorf("process %d appended on lock %d, want %d", e.Process, inv.Lock, int(e.Process)%4%2)
					}
					lockOf[inv.Element] = inv.Lock
				case e.F == lockappend.FFinalRead && e.Type == history.Ok:
					var v lockappend.ReadValue
					if err := json.Unmarshal(e.Value, &v); err != nil {
						t.Fatal(err)
					}
					finals[v.Lock] = v.Value
				}
			}
			if len(finals) != 2 {
				t.Fatalf("final reads of locks %v, want 0 and 1", finals)
			}
			for l, list := range finals {
				for _, e := range list {
					if lockOf[e] != l {
						t.Errorf("lock %d's list holds element %d, appended on lock %d", l, e, lockOf[e])
					}
				}
			}
			// The report has a row per lock.
			page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
			for _, l := range []string{"lock-0", "lock-1"} {
				if !strings.Contains(string(page), "<tr><td>"+l+"</td>") {
					t.Errorf("report.html has no row of %s", l)
				}
			}
			assertRunsGone(t, res)
		})
	}
}

// Several locks refuse what would mix them, before anything starts: a
// resource with one token for every lock, the run's one audit log, more
// locks than clients.
func TestLocksRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--locks", "2", "--resource", "proxy", "--fencing", "token"}, "keeps one highest token for every lock"},
		{[]string{"--locks", "2", "--resource", "postgres", "--audit-log"}, "the audit log is one for every lock"},
		{[]string{"--locks", "6", "--concurrency", "5"}, "more locks than --concurrency"},
	} {
		r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, append([]string{"run", "--results", t.TempDir()}, c.args...)...)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, c.want) {
			t.Errorf("run %v: exit %d, %q; want 254 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
