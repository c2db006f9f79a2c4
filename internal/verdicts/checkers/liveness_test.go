package checkers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

// timed builds a history with explicit times (in ms), for the liveness
// checker, whose figures are times.
type timed struct {
	t      *testing.T
	events []history.Event
}

func (h *timed) add(atMS int64, p history.Process, typ history.Type, f string, v any) *timed {
	h.t.Helper()
	var raw json.RawMessage
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			h.t.Fatal(err)
		}
		raw = b
	}
	h.events = append(h.events, history.Event{Index: len(h.events), Time: atMS * ms, Process: p, Type: typ, F: f, Value: raw})
	return h
}

func (h *timed) invoke(at int64, p history.Process) *timed {
	return h.add(at, p, history.Invoke, lockappend.FAppend, lockappend.Invoke{Element: int64(len(h.events))})
}

func (h *timed) acquired(at int64, p history.Process) *timed {
	return h.add(at, p, history.Phase, lockappend.PhaseAcquired, lockappend.Acquired{Token: int64(len(h.events))})
}

func (h *timed) done(at int64, p history.Process, typ history.Type) *timed {
	return h.add(at, p, typ, lockappend.FAppend, lockappend.Completion{})
}

func (h *timed) fault(at int64, f string, start bool, rec history.FaultValue) *timed {
	fn := history.FStop
	if start {
		fn = history.FStart
	}
	rec.Fault, rec.Nodes = f, []string{"x"}
	return h.add(at, history.Nemesis, history.Info, fn, rec)
}

// killOf is the record of a kill of holder p, with the lock's TTL and
// lease (0: not recorded).
func killOf(p history.Process, ttl, lease time.Duration) history.FaultValue {
	return history.FaultValue{Holder: &history.Aim{Process: p, TTL: history.Duration(ttl), Lease: history.Duration(lease)}}
}

// cycle adds critical sections of process p every period ms from from to
// to: invoke, acquired 1 ms later, ok half a period later.
func (h *timed) cycle(p history.Process, from, to, period int64) *timed {
	for at := from; at+period/2 < to; at += period {
		h.invoke(at, p).acquired(at+1, p).done(at+period/2, p, history.Ok)
	}
	return h
}

func TestCheckLiveness(t *testing.T) {
	killed := killOf(0, time.Second, time.Second)
	cfg := LivenessConfig{TTL: 2 * time.Second, Lease: 4 * time.Second}
	for _, tc := range []struct {
		name  string
		build func(h *timed)
		nil_  bool
		want  Validity
		check func(t *testing.T, r *LivenessResult)
	}{
		{
			name: "no measured fault: no block",
			build: func(h *timed) {
				h.invoke(0, 0).acquired(1, 0).fault(5, "pause-holder", true, history.FaultValue{}).fault(900, "pause-holder", false, history.FaultValue{}).done(1000, 0, history.Ok)
			},
			nil_: true,
		},
		{
			name: "holder crash: from the killed operation's end to the next grant, in the fault's own TTL",
			build: func(h *timed) {
				h.invoke(0, 0).acquired(1, 0).invoke(2, 1).
					done(100, 0, history.Info).fault(150, "kill-holder", true, killed).
					acquired(2100, 1).done(2200, 1, history.Ok).fault(3000, "kill-holder", false, history.FaultValue{})
			},
			want: Valid,
			check: func(t *testing.T, r *LivenessResult) {
				ev := r.Events[0]
				if ev.Kind != LivenessHolderCrash || ev.FromNS != 100*ms || !ev.Recovered || !ev.Waiting || *ev.GrantProcess != 1 {
					t.Errorf("event %+v", ev)
				}
				if ev.S != 2 || ev.TTLs != 2 || ev.Leases != 2 || ev.TTL != "1s" || *ev.Process != 0 {
					t.Errorf("S %v TTLs %v leases %v ttl %s: want 2 s, 2, 2 in a 1s TTL", ev.S, ev.TTLs, ev.Leases, ev.TTL)
				}
				if s := r.HolderCrash; s == nil || s.Count != 1 || s.MedianS != 2 || s.MaxTTLs != 2 || r.ServerKill != nil {
					t.Errorf("summaries %+v %+v", r.HolderCrash, r.ServerKill)
				}
			},
		},
		{
			name: "holder crash: from the fault's start when it comes first; a grant before it does not count",
			build: func(h *timed) {
				h.invoke(0, 1).acquired(1, 1).done(50, 1, history.Ok).
					invoke(60, 0).acquired(61, 0).invoke(62, 1).
					fault(100, "kill-holder", true, killOf(0, 0, 0)).done(130, 0, history.Info).
					acquired(1100, 1).done(1200, 1, history.Ok).fault(3000, "kill-holder", false, history.FaultValue{})
			},
			want: Valid,
			check: func(t *testing.T, r *LivenessResult) {
				ev := r.Events[0]
				// No ttl in the params: the run's TTL and lease.
				if ev.FromNS != 100*ms || ev.S != 1 || ev.TTLs != 0.5 || ev.Leases != 0.25 {
					t.Errorf("from %d S %v TTLs %v leases %v, want from 100ms, 1 s, 0.5 TTL, 0.25 lease", ev.FromNS, ev.S, ev.TTLs, ev.Leases)
				}
			},
		},
		{
			name: "holder crash never recovered: unknown, the time to the end a lower bound",
			build: func(h *timed) {
				h.invoke(0, 0).acquired(1, 0).invoke(2, 1).
					fault(100, "kill-holder", true, killed).done(100, 0, history.Info).
					fault(2000, "kill-holder", false, history.FaultValue{}).done(5100, 1, history.Fail)
			},
			want: Unknown,
			check: func(t *testing.T, r *LivenessResult) {
				ev := r.Events[0]
				if ev.Recovered || ev.GrantNS != nil || ev.S != 5 {
					t.Errorf("event %+v: want unrecovered, S 5 s (to the end)", ev)
				}
				if s := r.HolderCrash; s.Count != 0 || s.Unrecovered != 1 {
					t.Errorf("summary %+v", s)
				}
			},
		},
		{
			name: "nobody waiting: reported, not summed up",
			build: func(h *timed) {
				h.invoke(0, 0).acquired(1, 0).
					fault(100, "kill-holder", true, killed).done(100, 0, history.Info).
					invoke(3000, 1).acquired(3001, 1).done(3100, 1, history.Ok).fault(3500, "kill-holder", false, history.FaultValue{})
			},
			want: Unknown,
			check: func(t *testing.T, r *LivenessResult) {
				if ev := r.Events[0]; ev.Waiting || !ev.Recovered {
					t.Errorf("event %+v: want recovered, nobody waiting", ev)
				}
				if s := r.HolderCrash; s.Count != 0 || s.NotWaited != 1 {
					t.Errorf("summary %+v", s)
				}
			},
		},
		{
			name: "server kill: start to the first grant, minus the normal gap",
			build: func(h *timed) {
				// Grants every 300 ms before; the holder at the kill
				// finishes, a waiter gets the lock 1.5 s after the kill.
				h.cycle(0, 0, 1900, 300).invoke(1850, 1).
					fault(2000, "kill:leader", true, history.FaultValue{Hold: history.Duration(3 * time.Second)}).
					acquired(3500, 1).done(3600, 1, history.Ok).
					fault(5000, "kill:leader", false, history.FaultValue{}).cycle(0, 5100, 6500, 300)
			},
			want: Valid,
			check: func(t *testing.T, r *LivenessResult) {
				ev := r.Events[0]
				if r.NormalGapS == nil || *r.NormalGapS != 0.3 {
					t.Fatalf("normal gap %v, want 0.3 s", r.NormalGapS)
				}
				if ev.Kind != LivenessServerKill || ev.S != 1.5 || ev.ExcessS == nil || *ev.ExcessS != 1.2 || ev.TTLs != 0.75 {
					t.Errorf("event %+v: want 1.5 s (0.75 TTL), excess 1.2 s", ev)
				}
				if s := r.ServerKill; s.Count != 1 || *s.MedianExcess != 1.2 || s.MedianLeases != 0.375 {
					t.Errorf("summary %+v", s)
				}
			},
		},
		{
			name: "two holder crashes: median and max",
			build: func(h *timed) {
				h.invoke(0, 0).acquired(1, 0).invoke(2, 1).
					fault(100, "kill-holder", true, killed).done(100, 0, history.Info).
					acquired(1100, 1).fault(1500, "kill-holder", false, history.FaultValue{}).invoke(1550, 2).done(1600, 1, history.Info).
					fault(1800, "kill-holder", true, killOf(1, time.Second, 0)).
					acquired(4800, 2).done(4900, 2, history.Ok).fault(6000, "kill-holder", false, history.FaultValue{})
			},
			want: Valid,
			check: func(t *testing.T, r *LivenessResult) {
				// The second kill is from 1600 (p1's info) to 4800.
				s := r.HolderCrash
				if s.Count != 2 || s.MedianS != 2.1 || s.MaxS != 3.2 || s.MaxTTLs != 3.2 {
					t.Errorf("summary %+v: want median 2.1 s of 1 s and 3.2 s", s)
				}
			},
		},
		{
			name: "no grant at all (a workload that takes no lock): no block",
			build: func(h *timed) {
				h.add(0, 0, history.Invoke, "read", nil).fault(5, "kill:leader", true, history.FaultValue{}).
					fault(900, "kill:leader", false, history.FaultValue{}).add(1000, 0, history.Ok, "read", nil)
			},
			nil_: true,
		},
		{
			name: "kill of the resource is not the lock's",
			build: func(h *timed) {
				h.invoke(0, 0).fault(5, "kill:resource", true, history.FaultValue{}).fault(900, "kill:resource", false, history.FaultValue{}).done(1000, 0, history.Ok)
			},
			nil_: true,
		},
		{
			name: "a history that does not pair: unknown with the reason",
			build: func(h *timed) {
				h.invoke(0, 0).invoke(1, 0).fault(5, "kill:one", true, history.FaultValue{})
			},
			want: Unknown,
			check: func(t *testing.T, r *LivenessResult) {
				if r.Error == "" || len(r.Events) != 0 {
					t.Errorf("result %+v: want the error and no event", r)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &timed{t: t}
			tc.build(h)
			r := CheckLiveness(h.events, cfg)
			if tc.nil_ {
				if r != nil {
					t.Fatalf("got %+v, want nil", r)
				}
				return
			}
			if r == nil {
				t.Fatal("nil result")
			}
			if r.Valid != tc.want {
				t.Errorf("valid %s, want %s (%s %s)", r.Valid, tc.want, r.Message, r.Error)
			}
			t.Logf("%s", r.Message)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}
