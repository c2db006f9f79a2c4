package cli

// Integration tests of the election workload: a deposed leader, paused
// during its leader work, forks the log or erases entries without fencing,
// and is refused with --fencing term. Each runs the real binary against a
// real etcd cluster (the recipes of the other targets are tested in their
// own packages).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestElectionRun(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	for _, fencing := range []string{"none", "term"} {
		t.Run("etcd-"+fencing, func(t *testing.T) {
			t.Parallel()
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--target", "etcd", "--workload", "election", "--fencing", fencing,
				"--nemesis", "pause-holder", "--time-limit", "20s", "--results", res, "--seed", "1")
			dir := filepath.Join(res, "latest")
			got := readResults(t, dir)
			var el struct {
				Leaderships int `json:"leaderships"`
				Forks       int `json:"forks"`
				Checkers    map[string]struct {
					Valid any `json:"valid"`
				} `json:"checkers"`
			}
			b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
			if err := json.Unmarshal(b, &el); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"linearizable", "lost-updates", "terms", "forked-log", "split-brain", "stats"} {
				if _, ok := el.Checkers[name]; !ok {
					t.Errorf("results.json has no checker %q", name)
				}
			}
			if el.Leaderships < 2 {
				t.Errorf("%d leaderships, want several", el.Leaderships)
			}
			report, _ := os.ReadFile(filepath.Join(dir, "report.html"))
			if !strings.Contains(string(report), `<section id="fencing-chart"><h2>Tokens over time</h2>`) || !strings.Contains(string(report), `id="tokens-main"`) {
				t.Errorf("report.html has no fencing chart")
			}
			if fencing == "none" {
				if r.code != exitInvalid || got.LostUpdates.Lost+el.Forks < 1 {
					t.Fatalf("unfenced: exit %d, lost %d, forks %d; want 1 with a fork or a lost entry\n%s", r.code, got.LostUpdates.Lost, el.Forks, r.stdout)
				}
				// The story names the deposed leader by its worker (w1 ... wN).
				if !regexp.MustCompile(`The old leader, w\d+ \(term \d+\)`).Match(report) || !strings.Contains(string(report), "accepted") {
					t.Errorf("report.html tells no deposed leader's story")
				}
				// The fencing chart marks each forking entry of a deposed
				// leader as a stale write accepted.
				if n := strings.Count(string(report), `class="tw w-stale"`); el.Forks > 0 && n < 1 {
					t.Errorf("the fencing chart marks no stale entry, the log forked %d times", el.Forks)
				}
			} else {
				if r.code != exitValid || got.LostUpdates.Lost != 0 || el.Forks != 0 || got.FenceRejections < 1 {
					t.Fatalf("term: exit %d, lost %d, forks %d, refused %d; want 0, 0, 0, >= 1\n%s", r.code, got.LostUpdates.Lost, el.Forks, got.FenceRejections, r.stdout)
				}
				if !strings.Contains(string(report), "rejected by the log") {
					t.Errorf("report.html tells no refused entry")
				}
				if n := strings.Count(string(report), `class="tw w-fenced`); n != got.FenceRejections {
					t.Errorf("the fencing chart draws %d refused entries, results.json counts %d", n, got.FenceRejections)
				}
			}
			assertRunsGone(t, res)
		})
	}
}

// fencecheck demo --election plays the seed's Raft example on etcd: exit 0
// only if the unfenced log forked and the term-fenced log refused the old
// leader's entry, each confirmed by the checkers.
func TestDemoElection(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "demo", "--election", "--results", res)
	if r.code != exitValid {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"wins the election: leader with term", "cuts w1 off from every server",
		"ACCEPTED, the log forked", "REJECTED, the log has seen term", "fencing term: the old leader's entry"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, f := range []string{"none", "term"} {
		dirs, _ := filepath.Glob(filepath.Join(res, "demo-"+f, "*", "results.json"))
		if len(dirs) != 1 {
			t.Fatalf("demo-%s: %d results.json, want 1", f, len(dirs))
		}
		readResults(t, filepath.Dir(dirs[0]))
	}
	assertRunsGone(t, res)
}
