package report

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// A run with a holder crash shows its liveness table: the kill, the grant
// that ended it and the wait in seconds and TTLs; a run without one has no
// such section.
func TestLivenessSection(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Section(0, 1, 10, nil, 0.1, 0.2, 0.4, 1)
	h.Section(0, 2, 11, []int64{1}, 0.5, 0.6, 0.8, 2)
	h.Section(0, 3, 12, []int64{1, 2}, 0.9, 1.0, 1.2, 3)
	h.Section(0, 4, 13, []int64{1, 2, 3}, 1.3, 1.4, 1.6, 4)
	h.Begin(0, 5, 14, []int64{1, 2, 3, 4}, 1.7, 1.8)
	h.Invoke(1.75, 1, 6)
	h.Add(1.9, 0, history.Info, lockappend.FAppend, lockappend.Completion{Element: 5, Reason: "worker connection ended"})
	token, hit := int64(14), true
	v := history.FaultValue{Fault: "kill-holder", Nodes: []string{"w1"}, Holder: &history.Aim{Process: 0, Token: &token,
		TTL: history.Duration(2 * time.Second), Lease: history.Duration(2 * time.Second), Hit: &hit}}
	h.Add(1.95, history.Nemesis, history.Info, history.FStart, v)
	h.Phase(4.4, 1, lockappend.PhaseAcquired, lockappend.Acquired{Token: 15})
	h.Add(4.6, 1, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 6, Token: 15, Read: []int64{1, 2, 3, 4}})
	h.Add(5, history.Nemesis, history.Info, history.FStop, v)
	h.Final(5.5, []int64{1, 2, 3, 4, 6})
	ev := h.Sorted()
	res := lockappendtest.Check(t, ev)
	res.Liveness = checkers.CheckLiveness(ev, checkers.LivenessConfig{TTL: 2 * time.Second, Lease: 2 * time.Second})
	page := render(t, Input{Test: lockappendtest.TestInfo("token", 2), Results: res, Events: ev})
	for _, want := range []string{`id="liveness"`, "holder-crash", "<td>w1</td>", "1.90s", "4.40s to w2", "2.500s", "1.25 (TTL 2s)", "Holder crashes: 1 measured, median 2.50s = 1.25 TTLs"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	res.Liveness = nil
	if page := render(t, Input{Test: lockappendtest.TestInfo("token", 2), Results: res, Events: ev}); strings.Contains(page, `id="liveness"`) {
		t.Errorf("a run without a liveness block has a liveness section")
	}
}
