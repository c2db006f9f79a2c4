package store_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/election"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/register"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// TestSummaryReadBack: each workload's result, written as results.json and
// read back undecoded, gives the same workload-neutral summary as the
// typed result: the figures are at the JSON names checkers.Summary lists.
func TestSummaryReadBack(t *testing.T) {
	first := int64(1_500_000_000)
	lost := checkers.LostUpdates{Acknowledged: 40, Lost: 2, Elements: []checkers.LostElement{
		{Element: 7, Process: 3, Token: 12}, {Element: 9, Process: 4, Token: 13},
	}}
	la := &lockappend.Result{Valid: checkers.Invalid, LostUpdates: lost, FenceRejections: 5, FirstLostUpdateNS: &first}
	la.Checkers.Stats.Ok, la.Checkers.Stats.Fail, la.Checkers.Stats.Info = 40, 6, 1
	el := &election.Result{Valid: checkers.Invalid, LostUpdates: lost, FenceRejections: 3, FirstLostUpdateNS: &first}
	el.Checkers.Stats.Ok, el.Checkers.Stats.Fail, el.Checkers.Stats.Info = 9, 2, 3
	reg := &register.Result{Valid: checkers.Valid}
	reg.Checkers.Stats.Ok, reg.Checkers.Stats.Fail, reg.Checkers.Stats.Info = 100, 20, 4
	for name, r := range map[string]store.WorkloadResult{"lock-append": la, "election": el, "register": reg} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(store.Results{Workload: name, Result: r, Faults: []history.Fault{}})
			if err != nil {
				t.Fatal(err)
			}
			var back store.Results
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			want, got := r.Summary(), back.Result.Summary()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back:\n got %+v\nwant %+v", got, want)
			}
			if want.Updates != (name != "register") || want.Ops == nil {
				t.Errorf("summary %+v: updates or operations missing", want)
			}
		})
	}
}
