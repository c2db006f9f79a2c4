package lockappend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/testkit/histtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// verdicts are the expected verdicts of a scenario, by checker.
type verdicts struct {
	all, lin, lost, tokens, stats checkers.Validity
}

func (w verdicts) check(t *testing.T, r Result) {
	t.Helper()
	c := r.Checkers
	for _, x := range []struct {
		name      string
		got, want checkers.Validity
		v         checkers.Verdict
	}{
		{"overall", r.Valid, w.all, checkers.Verdict{Message: r.Error}},
		{checkers.NameLinearizable, c.Linearizable.Valid, w.lin, c.Linearizable.Verdict},
		{checkers.NameLostUpdates, c.LostUpdates.Valid, w.lost, c.LostUpdates.Verdict},
		{checkers.NameTokenMonotonic, c.TokenMonotonic.Valid, w.tokens, c.TokenMonotonic.Verdict},
		{checkers.NameStats, c.Stats.Valid, w.stats, c.Stats.Verdict},
		{checkers.NameOverlap, c.Overlap.Valid, checkers.Valid, c.Overlap.Verdict},
	} {
		if x.got != x.want {
			t.Errorf("%s: got %s, want %s (%s %s)", x.name, x.got, x.want, x.v.Message, x.v.Error)
		}
	}
}

var allValid = verdicts{checkers.Valid, checkers.Valid, checkers.Valid, checkers.Valid, checkers.Valid}

// lostUpdate is the classic story: A (process 0) gets token 10, reads [],
// and is paused; its lease expires; B (process 1) gets token 12, reads [],
// writes [2] and is acknowledged; A wakes and writes [1] over it. With
// fenced, the resource refuses A's write.
func lostUpdate(t *testing.T, fenced bool) *histtest.Hist {
	h := histtest.New(t).
		Invoke(0, 1).Acquired(0, 10).Read(0).
		Invoke(1, 2).Acquired(1, 12).Read(1).WriteSent(1).Released(1).Ok(1, 2, 12).
		WriteSent(0).Released(0)
	if fenced {
		return h.Fail(0, 1, 10, la.ReasonFenced).FinalRead(9, 2)
	}
	return h.Ok(0, 1, 10).FinalRead(9, 1)
}

func TestCheckLockAppend(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     *histtest.Hist
		want  verdicts
		check func(t *testing.T, r Result)
	}{
		{
			name: "sequential legal",
			h: histtest.New(t).Section(0, 1, 1).Section(1, 2, 2, 1).Section(2, 3, 3, 1, 2).
				Section(0, 4, 4, 1, 2, 3).Section(1, 5, 5, histtest.Seq(4)...).FinalRead(9, histtest.Seq(5)...),
			want: allValid,
			check: func(t *testing.T, r Result) {
				if r.LostUpdates.Acknowledged != 5 || r.LostUpdates.Lost != 0 || r.Overlaps != 0 || r.FenceRejections != 0 {
					t.Errorf("got %+v, overlaps %d, fence rejections %d", r.LostUpdates, r.Overlaps, r.FenceRejections)
				}
				if got := r.Checkers.Linearizable.Ops; got != 6 {
					t.Errorf("linearizable checked %d ops, want 6", got)
				}
			},
		},
		{
			name: "classic lost update",
			h:    lostUpdate(t, false),
			want: verdicts{all: checkers.Invalid, lin: checkers.Invalid, lost: checkers.Invalid, tokens: checkers.Valid, stats: checkers.Valid},
			check: func(t *testing.T, r Result) {
				lu := r.LostUpdates
				if lu.Acknowledged != 2 || lu.Lost != 1 || len(lu.Elements) != 1 {
					t.Fatalf("lost updates %+v, want 1 of 2 lost", lu)
				}
				e := lu.Elements[0]
				if e.Element != 2 || e.Process != 1 || e.Token != 12 {
					t.Errorf("lost element %+v, want element 2 of process 1 token 12", e)
				}
				want := checkers.Overwrite{Element: 1, Known: true, Process: 0, Token: 10, Type: history.Ok, Stale: true}
				if e.OverwrittenBy == nil || *e.OverwrittenBy != want {
					t.Errorf("overwritten by %+v, want %+v", e.OverwrittenBy, want)
				}
				if p := r.Checkers.LostUpdates.Percent; p != 50 {
					t.Errorf("percent %v, want 50", p)
				}
				if r.Overlaps != 1 {
					t.Errorf("overlaps %d, want 1", r.Overlaps)
				}
			},
		},
		{
			name: "lost update fenced",
			h:    lostUpdate(t, true),
			want: allValid,
			check: func(t *testing.T, r Result) {
				if r.FenceRejections != 1 || r.LostUpdates.Lost != 0 || r.LostUpdates.Acknowledged != 1 {
					t.Errorf("fence rejections %d, lost updates %+v; want 1 rejection, 0 of 1 lost", r.FenceRejections, r.LostUpdates)
				}
				if got := r.Checkers.Stats.FailReasons[la.ReasonFenced]; got != 1 {
					t.Errorf("fail reasons %v", r.Checkers.Stats.FailReasons)
				}
				if r.Overlaps != 1 {
					t.Errorf("overlaps %d, want 1: the paused holder believed it held the lock", r.Overlaps)
				}
			},
		},
		{
			// A times out after sending its write; it did land: B reads it.
			name: "info that happened",
			h: histtest.New(t).Invoke(0, 1).Acquired(0, 10).Read(0).WriteSent(0).Info(0, 1).
				Section(5, 2, 11, 1).
				Released(0).Late(0, history.Ok, la.Completion{Element: 1, Token: 10}).
				FinalRead(9, 1, 2),
			want: allValid,
			check: func(t *testing.T, r Result) {
				l := r.Checkers.Linearizable
				if l.Info != 1 || l.Inferred != 0 || l.NoEffect != 0 {
					t.Errorf("linearizable %+v, want one info op with a known read", l)
				}
				if r.Checkers.Stats.Info != 1 || r.Checkers.Stats.LateResults["ok"] != 1 {
					t.Errorf("stats %+v", r.Checkers.Stats)
				}
			},
		},
		{
			// A times out; its write never lands.
			name: "info that did not happen",
			h: histtest.New(t).Invoke(0, 1).Acquired(0, 10).Read(0).WriteSent(0).Info(0, 1).
				Section(5, 2, 11).FinalRead(9, 2),
			want: allValid,
			check: func(t *testing.T, r Result) {
				if l := r.Checkers.Linearizable; l.NoEffect != 1 || l.Info != 0 {
					t.Errorf("linearizable %+v, want the info op left out as a no-op", l)
				}
			},
		},
		{
			// A's info has no value and A never reported its read: where 1
			// sits in the final read says A read [].
			name: "info inferred from the final read",
			h: histtest.New(t).Invoke(0, 1).Acquired(0, 10).Add(0, history.Info, la.FAppend, nil).
				Section(5, 2, 11, 1).Section(6, 3, 12, 1, 2).FinalRead(9, 1, 2, 3),
			want: allValid,
			check: func(t *testing.T, r Result) {
				if l := r.Checkers.Linearizable; l.Inferred != 1 || l.Info != 1 {
					t.Errorf("linearizable %+v, want one inferred info op", l)
				}
			},
		},
		{
			// The read list of the late result is the one that counts
			// when the info completion carries none.
			name: "info read from the late result",
			h: histtest.New(t).Invoke(0, 1).Acquired(0, 10).Info(0, 1).
				Section(5, 2, 11, 1).
				Late(0, history.Ok, la.Completion{Element: 1, Token: 10, Read: []int64{}}).
				FinalRead(9, 1, 2),
			want: allValid,
			check: func(t *testing.T, r Result) {
				if l := r.Checkers.Linearizable; l.Inferred != 0 || l.Info != 1 {
					t.Errorf("linearizable %+v, want one info op read from its late result", l)
				}
			},
		},
		{
			// B reads [1] before A, which appends 1, was even invoked.
			name: "info invoked after its element was read",
			h:    histtest.New(t).Section(5, 2, 11, 1).Invoke(0, 1).Acquired(0, 12).Read(0).Info(0, 1).FinalRead(9, 1, 2),
			want: verdicts{all: checkers.Invalid, lin: checkers.Invalid, lost: checkers.Valid, tokens: checkers.Valid, stats: checkers.Valid},
		},
		{
			name: "fenced late result",
			h: histtest.New(t).Invoke(0, 1).Acquired(0, 10).Read(0).WriteSent(0).Info(0, 1).
				Section(5, 2, 11).
				Released(0).Late(0, history.Fail, la.Completion{Element: 1, Token: 10, Read: []int64{}, Reason: la.ReasonFenced}).
				FinalRead(9, 2),
			want: allValid,
			check: func(t *testing.T, r Result) {
				if r.FenceRejections != 1 {
					t.Errorf("fence rejections %d, want 1", r.FenceRejections)
				}
			},
		},
		{
			name: "no final read",
			h:    histtest.New(t).Section(0, 1, 1).Section(1, 2, 2, 1),
			want: verdicts{all: checkers.Unknown, lin: checkers.Valid, lost: checkers.Unknown, tokens: checkers.Valid, stats: checkers.Valid},
			check: func(t *testing.T, r Result) {
				if m := r.Checkers.LostUpdates.Message; !strings.Contains(m, "no final read") {
					t.Errorf("lost-updates message %q, want it to say there is no final read", m)
				}
			},
		},
		{
			name: "duplicate token",
			h:    histtest.New(t).Section(0, 1, 10).Section(1, 2, 10, 1).FinalRead(9, 1, 2),
			want: verdicts{all: checkers.Invalid, lin: checkers.Valid, lost: checkers.Valid, tokens: checkers.Invalid, stats: checkers.Valid},
			check: func(t *testing.T, r Result) {
				tr := r.Checkers.TokenMonotonic
				if tr.Count != 1 || tr.Violations[0].Kind != checkers.Duplicate || tr.Violations[0].A.Process != 0 || tr.Violations[0].B.Process != 1 {
					t.Errorf("token violations %+v, want one duplicate of process 0's grant by process 1", tr.Violations)
				}
			},
		},
		{
			name: "decreasing token",
			h:    histtest.New(t).Section(0, 1, 12).Section(1, 2, 10, 1).FinalRead(9, 1, 2),
			want: verdicts{all: checkers.Invalid, lin: checkers.Valid, lost: checkers.Valid, tokens: checkers.Invalid, stats: checkers.Valid},
			check: func(t *testing.T, r Result) {
				tr := r.Checkers.TokenMonotonic
				if tr.Count != 1 || tr.Violations[0].Kind != checkers.NotIncreasing || tr.Violations[0].A.Token != 12 || tr.Violations[0].B.Token != 10 {
					t.Errorf("token violations %+v, want 12 then 10 not increasing", tr.Violations)
				}
			},
		},
		{
			// B is invoked before A is granted: no order between them to
			// contradict.
			name: "concurrent grants may go either way",
			h: histtest.New(t).Invoke(1, 2).Invoke(0, 1).Acquired(0, 12).Read(0).Released(0).Ok(0, 1, 12).
				Acquired(1, 10).Read(1, 1).Released(1).Ok(1, 2, 10, 1).FinalRead(9, 1, 2),
			want: allValid,
		},
		{
			name: "nothing succeeded",
			h: histtest.New(t).Invoke(0, 1).Fail(0, 1, 0, la.ReasonNotAcquired).
				Invoke(1, 2).Acquired(1, 3).Read(1).Released(1).Fail(1, 2, 3, la.ReasonLeaseShort).FinalRead(9),
			want: verdicts{all: checkers.Unknown, lin: checkers.Valid, lost: checkers.Valid, tokens: checkers.Valid, stats: checkers.Unknown},
			check: func(t *testing.T, r Result) {
				if m := r.Checkers.Stats.Message; !strings.Contains(m, "no operation succeeded") {
					t.Errorf("stats message %q", m)
				}
			},
		},
		{
			name: "unpaired history",
			h:    histtest.New(t).Section(0, 1, 1).Ok(0, 1, 1),
			want: verdicts{checkers.Unknown, checkers.Unknown, checkers.Unknown, checkers.Unknown, checkers.Unknown},
			check: func(t *testing.T, r Result) {
				if r.Error == "" || r.Checkers.Linearizable.Error == "" {
					t.Errorf("want the pairing error, got %q", r.Error)
				}
			},
		},
		{
			name: "undecodable value",
			h:    histtest.New(t).Add(0, history.Invoke, la.FAppend, "not an object").Ok(0, 1, 1).FinalRead(9, 1),
			want: verdicts{checkers.Unknown, checkers.Unknown, checkers.Unknown, checkers.Unknown, checkers.Unknown},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h.Events, checkers.Options{Timeout: 10 * time.Second})
			if tc.want == (verdicts{checkers.Unknown, checkers.Unknown, checkers.Unknown, checkers.Unknown, checkers.Unknown}) {
				// Everything unknown includes overlap.
				if r.Valid != checkers.Unknown || r.Checkers.Overlap.Valid != checkers.Unknown || r.Error == "" {
					t.Errorf("got %s (overlap %s), error %q; want unknown everywhere with an error", r.Valid, r.Checkers.Overlap.Valid, r.Error)
				}
			} else {
				tc.want.check(t, r)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestLockAppendResultJSON(t *testing.T) {
	r := Check(lostUpdate(t, false).Events, checkers.Options{})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		return strings.Join(sorted(ks), ",")
	}
	if k := keys(got); k != "checkers,fence_rejections,first_lost_update_ns,lost_updates,overlaps,valid" {
		t.Errorf("top-level keys %s", k)
	}
	if got["valid"] != false {
		t.Errorf("valid is %v, want false", got["valid"])
	}
	byName := got["checkers"].(map[string]any)
	if k := keys(byName); k != "linearizable,lost-updates,overlap,stats,token-monotonic" {
		t.Errorf("checker names %s", k)
	}
	for name, c := range byName {
		if _, ok := c.(map[string]any)["valid"]; !ok {
			t.Errorf("checker %s has no valid: %v", name, c)
		}
	}
	lu := got["lost_updates"].(map[string]any)
	if k := keys(lu); k != "acknowledged,elements,lost" {
		t.Errorf("lost_updates keys %s", k)
	}
	if lu["acknowledged"] != 2.0 || lu["lost"] != 1.0 || len(lu["elements"].([]any)) != 1 {
		t.Errorf("lost_updates %v", lu)
	}
	if got["overlaps"] != 1.0 || got["fence_rejections"] != 0.0 {
		t.Errorf("overlaps %v, fence_rejections %v", got["overlaps"], got["fence_rejections"])
	}

	// Valid history: elements is [], not null; valid is true.
	b, _ = json.Marshal(Check(histtest.New(t).Section(0, 1, 1).FinalRead(9, 1).Events, checkers.Options{}))
	if s := string(b); !strings.HasPrefix(s, `{"valid":true,`) || !strings.Contains(s, `"lost_updates":{"acknowledged":1,"lost":0,"elements":[]}`) {
		t.Errorf("valid result JSON %s", s)
	}
	// And the result reads back.
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back.Valid != checkers.Valid || back.Checkers.Stats.Ok != 1 {
		t.Errorf("read back %+v, %v", back, err)
	}
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func TestVisualization(t *testing.T) {
	path := filepath.Join(t.TempDir(), "linearizability.html")
	r := Check(lostUpdate(t, false).Events, checkers.Options{VisualizationPath: path})
	l := r.Checkers.Linearizable
	if l.Valid != checkers.Invalid || l.Visualization != "linearizability.html" || l.Error != "" {
		t.Fatalf("linearizable %+v, want invalid with a visualization", l)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"append 1 to []", "append 2 to []", "final read [1]"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("visualization lacks %q", want)
		}
	}

	// A valid history writes nothing.
	path = filepath.Join(t.TempDir(), "ok.html")
	r = Check(lostUpdate(t, true).Events, checkers.Options{VisualizationPath: path})
	if r.Checkers.Linearizable.Visualization != "" {
		t.Errorf("valid history got a visualization")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("valid history wrote %s: %v", path, err)
	}
}

func TestLargeHistoryIsFast(t *testing.T) {
	events := histtest.Synthetic(t, 2000, 400)
	// CPU time, not wall time: on a busy machine the wall clock measures
	// the other work too.
	start := cpuTime(t)
	// The check's own time limit far past what it needs: a loaded
	// machine's wall clock must not turn the verdict Unknown (its speed
	// is bounded below, in CPU time).
	r := Check(events, checkers.Options{Timeout: 2 * time.Minute})
	took := cpuTime(t) - start
	allValid.check(t, r)
	if r.LostUpdates.Acknowledged != 1995 || r.Checkers.Stats.Info != 5 || r.Checkers.Linearizable.Info != 3 || r.Checkers.Linearizable.NoEffect != 2 {
		t.Errorf("acknowledged %d, stats %+v, linearizable %+v", r.LostUpdates.Acknowledged, r.Checkers.Stats, r.Checkers.Linearizable)
	}
	t.Logf("2000 critical sections (%d events) checked in %s of CPU time", len(events), took)
	if limit := 500 * time.Millisecond; took > limit && !histtest.RaceEnabled {
		t.Errorf("checking took %s of CPU time, want under %s", took, limit)
	}
}

func BenchmarkCheckLockAppend(b *testing.B) {
	events := histtest.Synthetic(b, 2000, 400)
	b.ResetTimer()
	for b.Loop() {
		if r := Check(events, checkers.Options{}); r.Valid != checkers.Valid {
			b.Fatalf("got %s", r.Valid)
		}
	}
}

// cpuTime is the CPU time (user and system) the test process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
