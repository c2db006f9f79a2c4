package sweep

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func TestParsePauses(t *testing.T) {
	for _, c := range []struct {
		spec  string
		steps int
		want  []float64
	}{
		{"0.25..3", 12, []float64{0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75, 3}},
		{"0.5..2.5", 2, []float64{0.5, 2.5}},
		{"1..2", 4, []float64{1, 1.333, 1.667, 2}},
		{" 2, 0.5,1 ,1", 0, []float64{0.5, 1, 2}},
		{"0.9", 7, []float64{0.9}},
		{"0.5..1", 1, nil}, {"1..1", 3, nil}, {"2..1", 3, nil}, {"0..1", 3, nil}, {"-1,2", 0, nil},
		{"0.5,,1", 0, nil}, {"a..b", 3, nil}, {"NaN", 0, nil}, {"51", 0, nil}, {"0.1..1", 101, nil}, {"", 0, nil},
	} {
		got, err := ParsePauses(c.spec, c.steps, 50)
		if c.want == nil {
			if err == nil || !errors.Is(err, ErrBadSpec) {
				t.Errorf("ParsePauses(%q, %d) = %v, %v; want an ErrBadSpec", c.spec, c.steps, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParsePauses(%q, %d) = %v, %v; want %v", c.spec, c.steps, got, err, c.want)
		}
	}
}

func TestParseMargins(t *testing.T) {
	ttl := 2 * time.Second
	for _, c := range []struct {
		spec string
		want []time.Duration
	}{
		{"0.25", []time.Duration{500 * time.Millisecond}},
		{"0.75,0,500ms,0.25", []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond}},
		{"1", nil}, {"-0.1", nil}, {"2s", nil}, {"-1ms", nil}, {"lots", nil}, {"", nil},
	} {
		got, err := ParseMargins(c.spec, ttl)
		if c.want == nil {
			if err == nil || !errors.Is(err, ErrBadSpec) {
				t.Errorf("ParseMargins(%q) = %v, %v; want an ErrBadSpec", c.spec, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseMargins(%q) = %v, %v; want %v", c.spec, got, err, c.want)
		}
	}
}

// A point counts the runs whose pause landed in full; a loss counts
// whatever the pause did; failed runs are errors.
func TestPointCounts(t *testing.T) {
	left := int64(1500)
	p := Point{Pause: 1, PauseMS: 2000, Fencing: "none"}
	for _, tr := range []Trial{
		{Verdict: "invalid", Lost: 2, Acknowledged: 10, Faults: 1, Hit: true, HeldMS: 2010, LeftMS: &left},
		{Verdict: "valid", Acknowledged: 12, Faults: 1, Hit: true, HeldMS: 2003},
		{Verdict: "valid", Acknowledged: 9, Faults: 1, Hit: true, HeldMS: 1400},    // cut short
		{Verdict: "unknown", Acknowledged: 9, Faults: 1, Hit: false, HeldMS: 2000}, // missed
		{Verdict: "unknown", Acknowledged: 9},                                      // no pause
		{Verdict: "invalid", Lost: 1, Acknowledged: 8, Faults: 1, Hit: true, HeldMS: 900},
		{Verdict: "error", Error: "docker"},
		// SIGSTOP took 600 ms of the 2000: the schedule held 1400, in full.
		{Verdict: "valid", Acknowledged: 5, Faults: 1, Hit: true, HeldMS: 1450, StopTookMS: ptr64(600), HoldMS: ptr64(1400)},
		{Verdict: "valid", Acknowledged: 5, Faults: 1, Hit: true, HeldMS: 1300, StopTookMS: ptr64(600), HoldMS: ptr64(1400)}, // cut short
	} {
		p.Add(tr)
	}
	if p.Runs != 4 || p.Lossy != 2 || p.Missed != 4 || p.Errors != 1 || p.Lost != 3 || p.Acknowledged != 67 {
		t.Errorf("runs %d lossy %d missed %d errors %d lost %d/%d; want 4 2 4 1 3/67", p.Runs, p.Lossy, p.Missed, p.Errors, p.Lost, p.Acknowledged)
	}
	if p.Fraction != 0.5 {
		t.Errorf("fraction %v, want 1/2", p.Fraction)
	}
	if !strings.Contains(p.Trials[2].MissedWhy, "1400 ms of 2000") || p.Trials[3].MissedWhy == "" || p.Trials[4].MissedWhy == "" || p.Trials[0].MissedWhy != "" {
		t.Errorf("missed why: %q", []string{p.Trials[0].MissedWhy, p.Trials[2].MissedWhy, p.Trials[3].MissedWhy, p.Trials[4].MissedWhy})
	}
}

func trials(lefts []int64, lost ...int) []Trial {
	var out []Trial
	for i, l := range lefts {
		l := l
		t := Trial{Verdict: "valid", Faults: 1, Hit: true, HeldMS: 100000, LeftMS: &l, Acknowledged: 10}
		if i < len(lost) && lost[i] > 0 {
			t.Verdict, t.Lost = "invalid", lost[i]
		}
		out = append(out, t)
	}
	return out
}

func summary(points ...Point) *Summary {
	s := &Summary{Target: "etcd", TTLMS: 2000, LeaseMS: 2000, WorkMS: 250, Runs: 2}
	for _, p := range points {
		p.Fenced = p.Fencing != "none"
		ts := p.Trials
		p.Trials = nil
		for _, t := range ts {
			p.Add(t)
		}
		s.Points = append(s.Points, p)
	}
	return s
}

// The expected threshold is (left + lease - TTL - work)/TTL over the
// paused holders of the unfenced series; the measured one interpolates
// where half the runs first lose.
func TestThresholds(t *testing.T) {
	s := summary(
		Point{Pause: 0.5, Fencing: "none", MarginMS: 500, Trials: trials([]int64{1250, 2050})},
		Point{Pause: 1, Fencing: "none", MarginMS: 500, Trials: trials([]int64{1650, 1850}, 0, 0)},
		Point{Pause: 1.5, Fencing: "none", MarginMS: 500, Trials: trials([]int64{1450, 1650}, 3, 0)},
		Point{Pause: 2, Fencing: "none", MarginMS: 500, Trials: trials([]int64{1450, 1650}, 3, 4)},
		Point{Pause: 2, Fencing: "token", MarginMS: 500, Trials: trials([]int64{10, 10})},
	)
	s.FindThresholds()
	if len(s.Thresholds) != 1 {
		t.Fatalf("%d thresholds, want 1 (the unfenced series')", len(s.Thresholds))
	}
	th := s.Thresholds[0]
	// Lefts 1250..2050 ms less 250 ms of work, over 2000 ms: 0.5 to 0.9,
	// median of 1450,1450,1650,1650,1650,1850 (+1250, 2050) = 1650: 0.7.
	if th.ExpectedMin != 0.5 || th.ExpectedMax != 0.9 || th.ExpectedMedian != 0.7 || th.Holders != 8 {
		t.Errorf("expected %v..%v median %v over %d; want 0.5..0.9 median 0.7 over 8", th.ExpectedMin, th.ExpectedMax, th.ExpectedMedian, th.Holders)
	}
	if th.FirstLoss == nil || *th.FirstLoss != 1.5 || th.LastClean == nil || *th.LastClean != 1 || th.Half == nil || *th.Half != 1.5 {
		t.Errorf("first loss %v, last clean %v, half %v; want 1.5, 1, 1.5", deref(th.FirstLoss), deref(th.LastClean), deref(th.Half))
	}
	// Half interpolates: 0 at 1, 1 at 2 gives 1.5.
	s = summary(
		Point{Pause: 1, Fencing: "none", Trials: trials([]int64{2000, 2000})},
		Point{Pause: 2, Fencing: "none", Trials: trials([]int64{2000, 2000}, 1, 1)},
	)
	s.FindThresholds()
	if h := s.Thresholds[0].Half; h == nil || *h != 1.5 {
		t.Errorf("half %v, want 1.5", deref(h))
	}
	// Timed: (pause + slack + lease - TTL)/TTL per holder.
	s = summary(Point{Pause: 1, PauseMS: 2000, Fencing: "none", Trials: []Trial{
		{Verdict: "valid", Faults: 1, Hit: true, HeldMS: 2100, SlackMS: ptr64(-200)},
		{Verdict: "invalid", Lost: 1, Faults: 1, Hit: true, HeldMS: 2100, SlackMS: ptr64(100)},
		{Verdict: "invalid", Lost: 1, Faults: 1, Hit: true, HeldMS: 2100, SlackMS: ptr64(-50)},
		{Verdict: "valid", Faults: 1, Hit: false, HeldMS: 2100, SlackMS: ptr64(-1000)}, // missed: not counted
	}})
	s.LeaseMS = 3000
	s.FindThresholds()
	if th := s.Thresholds[0]; th.TimedHolders != 3 || th.TimedMin != 1.4 || th.TimedMedian != 1.475 || th.TimedMax != 1.55 || th.Holders != 0 {
		t.Errorf("timed %v..%v median %v over %d (and %d untimed); want 1.4..1.55 median 1.475 over 3", th.TimedMin, th.TimedMax, th.TimedMedian, th.TimedHolders, th.Holders)
	}
	// At pause 1 every run is below its own timed threshold: the clean one
	// was foretold, the two that lost were not.
	if th := s.Thresholds[0]; th.Predicted != 1 {
		t.Errorf("foretold %d runs, want 1", th.Predicted)
	}
	// Consul: the lease is 2 TTL + 1s + lock-delay; its expected threshold
	// is past it by the time left.
	if got := Expected(8*time.Second, 36*time.Second, 10*time.Second, 250*time.Millisecond); got != 3.375 {
		t.Errorf("Consul's expected threshold %v, want 3.375", got)
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func TestExitCode(t *testing.T) {
	clean := Point{Pause: 1, Fencing: "token", Trials: trials([]int64{1000, 1000})}
	lossyUnfenced := Point{Pause: 1, Fencing: "none", Trials: trials([]int64{1000, 1000}, 2, 2)}
	missed := Trial{Verdict: "valid", Faults: 1, Hit: false, HeldMS: 99999}
	measured := Trial{Verdict: "valid", Faults: 1, Hit: true, HeldMS: 99999}
	for _, c := range []struct {
		name        string
		points      []Point
		interrupted bool
		want        int
	}{
		{"fenced clean, unfenced lossy", []Point{clean, lossyUnfenced}, false, ExitValid},
		{"interrupted", []Point{clean}, true, ExitUnknown},
		{"fenced lossy", []Point{lossyUnfenced, {Pause: 1, Fencing: "cas", Trials: trials([]int64{1, 1}, 0, 1)}}, false, ExitInvalid},
		{"fenced unknown", []Point{{Pause: 1, Fencing: "token", Trials: []Trial{{Verdict: "unknown", Faults: 1, Hit: true, HeldMS: 99999}}}}, false, ExitUnknown},
		{"fenced pause missed", []Point{{Pause: 1, Fencing: "token", Trials: []Trial{{Verdict: "valid", Faults: 1, Hit: false, HeldMS: 99999}}}}, false, ExitUnknown},
		// A missed run run again with the next seed and measured leaves
		// the point whole (TestSweep once exited 2 so under load); one
		// measured run of the two planned does not.
		{"fenced pause missed, then measured twice", []Point{{Pause: 1, Fencing: "token", Trials: []Trial{missed, measured, measured}}}, false, ExitValid},
		{"fenced pause missed, measured once of two", []Point{{Pause: 1, Fencing: "token", Trials: []Trial{missed, measured, missed}}}, false, ExitUnknown},
		{"unfenced pause missed", []Point{clean, {Pause: 1, Fencing: "none", Trials: []Trial{missed, missed}}}, false, ExitValid},
		{"harness failed", []Point{clean, {Pause: 1, Fencing: "none", Trials: []Trial{{Verdict: "error"}}}}, false, ExitHarness},
	} {
		if got := summary(c.points...).ExitCodeFor(c.interrupted); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// NewTrial takes the run's lost updates and fence rejections; from the
// history, its first pause's window and hit, and the paused holder's
// timeline: its own last check before the pause (time left, delay to the
// pause) and its first write after it (slack).
func TestNewTrial(t *testing.T) {
	const ms = int64(time.Millisecond)
	i := 0
	ev := func(at int64, p history.Process, typ history.Type, f string, v any) history.Event {
		b, _ := json.Marshal(v)
		i++
		return history.Event{Index: i, Time: at * ms, Process: p, Type: typ, F: f, Value: b}
	}
	checked := func(left int) map[string]any { return map[string]any{"remaining_ms": left, "ok": true} }
	hit, took := true, history.Duration(5*time.Millisecond)
	pause := history.FaultValue{Fault: "pause-holder:x1.5", Nodes: []string{"w3"}, Hold: history.Duration(2995 * time.Millisecond),
		Holder: &history.Aim{Process: 2, Hit: &hit, StopTook: &took}}
	events := []history.Event{
		ev(10, 2, history.Phase, "checked", checked(1900)),
		ev(20, 1, history.Phase, "checked", checked(1200)),
		ev(30, 2, history.Phase, "checked", checked(1400)),
		ev(35, history.Nemesis, history.Info, history.FStart, pause),
		ev(40, 1, history.Phase, "checked", checked(1000)),
		ev(45, 1, history.Phase, "write-sent", nil),
		ev(3047, history.Nemesis, history.Info, history.FStop, pause),
		ev(3300, 2, history.Phase, "write-sent", nil),
		ev(3400, 2, history.Phase, "checked", checked(1800)),
		ev(3500, 2, history.Phase, "write-sent", nil),
	}
	res := &store.Results{
		Result: &lockappend.Result{Valid: checkers.Invalid, LostUpdates: checkers.LostUpdates{Acknowledged: 30, Lost: 4}, FenceRejections: 2},
	}
	tr := NewTrial(7, res, events, "sweep-etcd/x")
	if tr.Verdict != "invalid" || tr.Lost != 4 || tr.FenceRejections != 2 || tr.Acknowledged != 30 || tr.HeldMS != 3012 || !tr.Hit || tr.Faults != 1 || tr.Seed != 7 {
		t.Errorf("trial %+v", tr)
	}
	if tr.StopTookMS == nil || *tr.StopTookMS != 5 || tr.HoldMS == nil || *tr.HoldMS != 2995 {
		t.Errorf("stop took %v, hold %v; want 5, 2995", deref64(tr.StopTookMS), deref64(tr.HoldMS))
	}
	// Checked at 30 ms with 1400 ms left: the lease ends at 1430 ms; the
	// pause is in place at 35 ms; the write leaves at 3300 ms.
	if tr.LeftMS == nil || *tr.LeftMS != 1400 || tr.DelayMS == nil || *tr.DelayMS != 5 || tr.SlackMS == nil || *tr.SlackMS != -1870 {
		t.Errorf("left %v, delay %v, slack %v; want 1400, 5, -1870", deref64(tr.LeftMS), deref64(tr.DelayMS), deref64(tr.SlackMS))
	}
	if tr := NewTrial(7, res, events[:3], ""); tr.Faults != 0 || tr.LeftMS != nil || tr.HeldMS != 0 {
		t.Errorf("no pause: %+v", tr)
	}
	// A holder whose write never left has no slack.
	if tr := NewTrial(7, res, events[:7], ""); tr.LeftMS == nil || tr.SlackMS != nil {
		t.Errorf("no write after the pause: left %v, slack %v", deref64(tr.LeftMS), deref64(tr.SlackMS))
	}
}

func ptr64(v int64) *int64 { return &v }

func deref64(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestWriteTable(t *testing.T) {
	s := summary(
		Point{Pause: 0.5, PauseMS: 1000, Fencing: "none", MarginMS: 500, Trials: trials([]int64{1250, 2050})},
		Point{Pause: 1.5, PauseMS: 3000, Fencing: "none", MarginMS: 500, Trials: trials([]int64{1450, 1650}, 3, 5)},
		Point{Pause: 1.5, PauseMS: 3000, Fencing: "token", MarginMS: 500, Trials: trials([]int64{1450, 1650})},
	)
	s.FindThresholds()
	var b strings.Builder
	s.WriteTable(&b)
	for _, want := range []string{
		"0.25     none     1.5      3s         2/2         8/20          0",
		"0.25     token    1.5      3s         0/2         0/20          0",
		"threshold, unfenced, margin 0.25 TTL: expected 0.5 to 0.9 TTL (median 0.65, from 4",
		"measured: first loss at 1.5, none lost at 0.5, half the runs lose at 1\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
