package harness

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func valid() *store.Results {
	return &store.Results{Workload: "lock-append", Result: &lockappend.Result{Valid: checkers.Valid}}
}

func fault(name string, start, stop int64, rec history.FaultValue) history.Fault {
	rec.Fault, rec.Nodes = name, []string{"w1"}
	return history.Fault{FaultValue: rec, Start: start, Stop: stop}
}

// aimed is the record of a fault aimed at a holder, which hit it or not.
func aimed(hit bool) history.FaultValue {
	return history.FaultValue{Holder: &history.Aim{Process: 0, Hit: &hit}}
}

// ok is a completed operation of process p at time t.
func okAt(p history.Process, t int64) []history.Event {
	v, _ := json.Marshal(map[string]int{"element": int(t)})
	return []history.Event{{Time: t - 1, Process: p, Type: history.Invoke, F: "append", Value: v}, {Time: t, Process: p, Type: history.Ok, F: "append", Value: v}}
}

// A run that tested nothing says so: unknown, never valid.
func TestJudge(t *testing.T) {
	test := store.TestInfo{Spec: spec.Spec{Nemesis: "pause-holder", WorkerKnobs: spec.WorkerKnobs{Concurrency: 2}}}
	var busy []history.Event
	for _, p := range []history.Process{0, 1} {
		busy = append(busy, okAt(p, 50)...)
	}

	t.Run("no fault injected", func(t *testing.T) {
		res := valid()
		Judge(test, busy, res)
		if res.Valid() != checkers.Unknown || !strings.Contains(res.Note, "no fault was injected") {
			t.Errorf("%s: %q", res.Valid(), res.Note)
		}
	})
	t.Run("--nemesis none asked for", func(t *testing.T) {
		res := valid()
		Judge(store.TestInfo{Spec: spec.Spec{Nemesis: "none", WorkerKnobs: spec.WorkerKnobs{Concurrency: 2}}}, busy, res)
		if res.Valid() != checkers.Valid {
			t.Errorf("%s: %q", res.Valid(), res.Note)
		}
	})
	t.Run("no fault hit", func(t *testing.T) {
		res := valid()
		res.Faults = []history.Fault{fault("pause-holder", 10, 20, aimed(false)), fault("partition-client", 30, 40, aimed(false))}
		Judge(test, busy, res)
		if res.Valid() != checkers.Unknown || !strings.Contains(res.Note, "no fault reached a critical section") {
			t.Errorf("%s: %q", res.Valid(), res.Note)
		}
		if h := res.FaultHits; h == nil || h.Aimed != 2 || h.Missed != 2 {
			t.Errorf("fault hits %+v", h)
		}
	})
	t.Run("a fault hit", func(t *testing.T) {
		res := valid()
		res.Faults = []history.Fault{fault("pause-holder", 10, 20, aimed(false)), fault("pause-holder", 30, 40, aimed(true))}
		Judge(test, busy, res)
		if res.Valid() != checkers.Valid || res.FaultHits.Hit != 1 {
			t.Errorf("%s: %q %+v", res.Valid(), res.Note, res.FaultHits)
		}
	})
	t.Run("a server fault has no aim", func(t *testing.T) {
		res := valid()
		res.Faults = []history.Fault{fault("kill:leader", 10, 20, history.FaultValue{})}
		Judge(store.TestInfo{Spec: spec.Spec{Nemesis: "kill:leader", WorkerKnobs: spec.WorkerKnobs{Concurrency: 2}}}, busy, res)
		if res.Valid() != checkers.Valid || res.FaultHits != nil {
			t.Errorf("%s: %q %+v", res.Valid(), res.Note, res.FaultHits)
		}
	})
	t.Run("clients idle after the first fault", func(t *testing.T) {
		res := valid()
		res.Faults = []history.Fault{fault("kill:all", 60, 70, history.FaultValue{})}
		Judge(store.TestInfo{Spec: spec.Spec{Nemesis: "kill:all", WorkerKnobs: spec.WorkerKnobs{Concurrency: 2}}}, busy, res)
		if res.Valid() != checkers.Unknown || !strings.Contains(res.Note, "dead or idle") || res.Workers.Idle != 2 {
			t.Errorf("%s: %q %+v", res.Valid(), res.Note, res.Workers)
		}
	})
	t.Run("an invalid run stays invalid", func(t *testing.T) {
		res := &store.Results{Result: &lockappend.Result{Valid: checkers.Invalid}}
		Judge(test, busy, res)
		if res.Valid() != checkers.Invalid {
			t.Errorf("%s", res.Valid())
		}
	})
}
