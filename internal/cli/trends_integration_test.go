package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Three nights of a real nightly matrix on Redis, unfenced and
// token-fenced, under holder pauses and server kills
// ("pause-holder,kill", seed 4: a pause, then a kill). Nights 1 and 2 run
// redis, whose server fsyncs its tokens; night 3 runs redis-nopersist
// under the same name (--target redis=redis-nopersist), as if the
// service's persistence had been turned off: the kill restarts it empty,
// tokens are granted again from 1, and the token-fenced cell turns
// invalid.
//
// matrix --baseline: night 2 against the root of nights (its newest night
// is night 1) exits 0; night 3 against night 1 exits 1, naming the cell.
// fencecheck trends on the root: exit 1, the three nights in order, the
// token cell's strip valid, valid, invalid with its regression, the
// unfenced cell detecting on every night, medians, and the page with a
// link to night 3's failing report.
//
// Six runs, night 1's two one after the other and then nights 2 and 3's
// beside each other: on a fresh, busy machine a chain of 26 minutes, the
// longest of make test's, so it runs in make test-all; the trends of
// stored nights are tested without containers in internal/base/trends and in
// TestTrendsCommand and TestCompareBaseline.
func TestTrendsAcrossNights(t *testing.T) {
	suite.All(t, "three nights of a matrix, six runs in a chain (26 minutes on a fresh, busy machine)")
	requireDocker(t)
	t.Parallel()
	root := t.TempDir()
	matrix := func(t *testing.T, night, target string, extra ...string) cliResult {
		args := []string{"matrix", "--target", target, "--nodes", "1", "--fencing", "none,token", "--nemesis", "pause-holder,kill",
			"--nemesis-interval", "2s", "--time-limit", "20s", "--seed", "4", "--results", filepath.Join(root, night), "--quiet"}
		r := runCLI(t, nil, append(args, extra...)...)
		assertRunsGone(t, filepath.Join(root, night))
		return r
	}
	if r := matrix(t, "night-1", "redis"); r.code != exitValid {
		t.Fatalf("night 1: exit %d, want 0", r.code)
	}
	var n2, n3 cliResult
	t.Run("nights", func(t *testing.T) {
		t.Run("2", func(t *testing.T) {
			t.Parallel()
			n2 = matrix(t, "night-2", "redis", "--baseline", root)
		})
		t.Run("3", func(t *testing.T) {
			t.Parallel()
			time.Sleep(time.Second) // starts after night 2
			n3 = matrix(t, "night-3", "redis=redis-nopersist", "--baseline", filepath.Join(root, "night-1"))
		})
	})

	// Night 2 against the root's newest night, night 1: nothing regressed.
	s2 := readMatrix(t, filepath.Join(root, "night-2"))
	if n2.code != exitValid || s2.Baseline == nil || s2.Baseline.BaselineNight != "night-1" || s2.Baseline.Compared != 2 || len(s2.Baseline.Regressions) != 0 {
		t.Errorf("night 2: exit %d, comparison %+v; want 0, night-1, 2 compared, none regressed", n2.code, s2.Baseline)
	}
	// Night 3 against night 1: the token cell regressed, and its run shows
	// why: reused tokens.
	s3 := readMatrix(t, filepath.Join(root, "night-3"))
	if n3.code != exitInvalid || s3.ExitCode != exitInvalid || s3.Baseline == nil || len(s3.Baseline.Regressions) != 1 {
		t.Fatalf("night 3: exit %d, comparison %+v; want 1 with one regression", n3.code, s3.Baseline)
	}
	reg := s3.Baseline.Regressions[0]
	if reg.Kind != trends.FenceFailed || reg.Key.Target != "redis" || reg.Key.Fencing != "token" || reg.Now.Ran != "redis-nopersist" {
		t.Errorf("regression %+v", reg)
	}
	if !strings.Contains(n3.stdout, "REGRESSION  redis lock-store pause-holder,kill token #1: must be valid: was valid, now invalid") {
		t.Errorf("night 3's output does not name the regression:\n%s", n3.stdout)
	}
	var tokenRun string
	for _, c := range s3.Cells {
		if c.Label != "redis" || c.Target != "redis-nopersist" || c.OpsOK == nil || c.ClientS == nil || *c.ClientS != 20 {
			t.Errorf("night 3 cell %+v: want label redis, target redis-nopersist, ops and client seconds", c)
		}
		if c.Fencing == "token" {
			tokenRun = c.RunDir
		}
	}
	var tr tokenResults
	if b, err := os.ReadFile(filepath.Join(tokenRun, "results.json")); err != nil || json.Unmarshal(b, &tr) != nil {
		t.Fatalf("night 3's token run: %v", err)
	}
	// The restart forgets the token counter: a grant after it reuses a
	// token. On a loaded machine the server can come back too late for
	// any grant before the time limit (seen in a fresh CI run: lost 28 of
	// 28, no grant after the restart); then the run shows why by its
	// lost updates alone.
	after, lost := grantsAfterRestart(t, tokenRun)
	tm := tr.Checkers.TokenMonotonic
	switch {
	case after > 0 && (tm.Valid != checkers.Invalid || tm.Count == 0):
		t.Errorf("night 3's token run: %d grants after the restart, token-monotonic %s with %d violations; want invalid (tokens reused after the restart)", after, tm.Valid, tm.Count)
	case after == 0 && lost == 0:
		t.Errorf("night 3's token run: no grant after the restart and no update lost: it shows no regression")
	}

	// The trends of the three nights.
	r := runCLI(t, nil, "trends", root)
	if r.code != exitInvalid {
		t.Errorf("trends: exit %d, want 1", r.code)
	}
	var s trends.Summary
	b, err := os.ReadFile(filepath.Join(root, trends.JSONFile))
	if err != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("trends.json: %v", err)
	}
	var dirs []string
	for _, n := range s.Nights {
		dirs = append(dirs, n.Dir)
	}
	if strings.Join(dirs, " ") != "night-1 night-2 night-3" || len(s.Cells) != 2 {
		t.Fatalf("nights %v, %d cells", dirs, len(s.Cells))
	}
	for _, c := range s.Cells {
		switch c.Key.Fencing {
		case "token":
			if c.StripText() != "VVI!" || len(c.Regressions) != 1 || c.Regressions[0].WasDir != "night-2" || c.Regressions[0].NowDir != "night-3" {
				t.Errorf("token cell: strip %s, regressions %+v; want VVI! from night-2 to night-3", c.StripText(), c.Regressions)
			}
		case "none":
			if c.StripText() != "III" || c.Detected == nil || *c.Detected != 3 || c.MedianFirstLostS == nil {
				t.Errorf("unfenced cell: strip %s, detected %v of %d; want III, 3 of 3, a median first lost update", c.StripText(), c.Detected, c.Runs)
			}
		}
		if c.MedianOpsPerS == nil || *c.MedianOpsPerS <= 0 {
			t.Errorf("cell %s: no throughput", c.Key)
		}
	}
	if len(s.Regressions) != 1 || s.Regressions[0].Key.Fencing != "token" {
		t.Errorf("newest night's regressions: %+v; want the token cell alone", s.Regressions)
	}
	page, err := os.ReadFile(filepath.Join(root, report.TrendsFile))
	if err != nil {
		t.Fatal(err)
	}
	link := "night-3/" + s.Regressions[0].Now.Run + "/report.html"
	for _, want := range []string{`id="regression-count">1<`, `data-strip="VVI!"`, `data-strip="III"`, `3 of 3 (100%)`, `href="` + link + `"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("trends.html lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(link))); err != nil {
		t.Errorf("the page links to a report that is not there: %v", err)
	}
	if index, _ := os.ReadFile(filepath.Join(root, report.IndexFile)); string(index) != string(page) {
		t.Error("the root's index.html is not the trends page")
	}
}

// grantsAfterRestart counts the grants of a run's history after its last
// kill healed (the server back), and the run's lost updates.
func grantsAfterRestart(t *testing.T, dir string) (after, lost int) {
	t.Helper()
	got := readResults(t, dir)
	healed := int64(-1)
	for _, f := range got.Faults {
		if strings.HasPrefix(f.Fault, "kill") && f.Stop > healed {
			healed = f.Stop
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		var e struct {
			Time int64  `json:"time_ns"`
			Type string `json:"type"`
			F    string `json:"f"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Type == "phase" && e.F == "acquired" && healed >= 0 && e.Time > healed {
			after++
		}
	}
	return after, got.LostUpdates.Lost
}
