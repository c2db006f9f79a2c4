package report

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// The report of an invalid run shows the commands that reproduce it: the
// rerun of its directory and the run with its flags and seed; a valid run's
// shows neither, and a rerun's configuration names the run it repeats.
func TestReportShowsHowToReproduce(t *testing.T) {
	lost := lockappendtest.SeedHistory(t, "2.1s")
	h := &lockappendtest.Hist{T: t} // one section, kept
	h.Section(0, 1, 4, []int64{}, 0.01, 0.02, 0.3, 5)
	h.Final(0.4, []int64{1})
	kept := h.Sorted()
	test := lockappendtest.TestInfo("none", 3)
	test.Seed = 11
	rerunCmd := "fencecheck rerun &#39;/tmp/my results/etcd/1&#39; --runs 5"
	runCmd := "fencecheck run --target etcd --workload lock-append --fencing none --nemesis pause-holder --concurrency 3 --nodes 3 --time-limit 20s --ttl 2s --margin 500ms --seed 11"
	for _, tc := range []struct {
		name  string
		ev    []history.Event
		dir   string
		shown bool
	}{
		{"invalid", lost, "/tmp/my results/etcd/1", true},
		{"valid", kept, "/tmp/my results/etcd/1", false},
		{"invalid, no directory", lost, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := lockappendtest.Check(t, tc.ev)
			page := render(t, Input{Test: test, Results: res, Events: tc.ev, Dir: tc.dir})
			for _, want := range []string{`id="reproduce"`, rerunCmd, runCmd} {
				if strings.Contains(page, want) != tc.shown {
					t.Errorf("verdict %s: report holds %q: %v, want %v", res.Valid(), want, !tc.shown, tc.shown)
				}
			}
		})
	}
	rerunOf := test
	rerunOf.Rerun = &store.RerunInfo{Of: "/r/etcd/1", Schedule: "replayed", Faults: []string{"pause-holder on the holder (was w1) after 3.2s, held 5.583s"}}
	page := render(t, Input{Test: rerunOf, Results: lockappendtest.Check(t, kept), Events: kept})
	if want := "/r/etcd/1 (replayed schedule: pause-holder on the holder (was w1) after 3.2s, held 5.583s)"; !strings.Contains(page, want) {
		t.Errorf("a rerun's report lacks %q", want)
	}
}
