package belief

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
)

// held reports p's library's answer at sec.
func held(h *lockappendtest.Hist, sec float64, p history.Process, v la.Held) {
	h.Phase(sec, p, la.PhaseHeld, v)
}

// ms is ns in whole milliseconds (the hand-made times are float seconds).
func inMS(ns int64) int64 { return time.Duration(ns).Round(time.Millisecond).Milliseconds() }

// cfg is a run of 3 clients with the default tolerance.
var cfg = record.Run{Spec: spec.Spec{WorkerKnobs: spec.WorkerKnobs{Concurrency: 3, Recheck: true}}}

// w1 holds from 1 s; it is paused from 1.2 s to 4 s (no answer between);
// w2 is granted the lock at 3.5 s; w1's first answer after resuming, at
// 4.05 s, is "held": a window of 0.55 s, invalid; its recheck at 4.1 s says
// held too, so the last "held" is 4.1 s: 0.6 s.
func TestWindowOfAPausedHolder(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(0.9, 0, 1)
	h.Phase(1, 0, la.PhaseAcquired, la.Acquired{Token: 1})
	held(h, 1.05, 0, la.Held{Held: true})
	held(h, 1.1, 0, la.Held{Held: true})
	h.Invoke(3, 1, 2)
	h.Phase(3.5, 1, la.PhaseAcquired, la.Acquired{Token: 2})
	held(h, 3.55, 1, la.Held{Held: true})
	held(h, 4.05, 0, la.Held{Held: true})
	held(h, 4.1, 0, la.Held{Held: true, Recheck: true})
	h.Phase(4.2, 0, la.PhaseReleasing, nil)
	h.Add(4.3, 0, history.Ok, la.FAppend, la.Completion{Element: 1, Token: 1})
	h.Phase(4.4, 1, la.PhaseReleasing, nil)
	h.Add(4.5, 1, history.Ok, la.FAppend, la.Completion{Element: 2, Token: 2})
	r := Derive(cfg, h.Sorted())
	b, ok := r.(*Belief)
	if !ok {
		t.Fatalf("no record: %v", r)
	}
	if b.Grants != 1 || b.Stale != 1 || inMS(b.MaxNS) != 600 || b.Answers != 5 || b.Rechecked != 1 {
		t.Fatalf("%+v: want 1 handover, 1 stale window of 600ms ending in the careful holder's recheck, 5 answers", b)
	}
	w := b.Windows[0]
	if w.Holder != 0 || w.Next != 1 || w.Token != 1 || !w.Recheck || w.GrantedNS != 3_500_000_000 {
		t.Errorf("window %+v", w)
	}
	if v, why := b.Verdict(); v != record.Invalid || !strings.Contains(why, "600ms after the next holder was granted") {
		t.Errorf("verdict %v %q, want invalid", v, why)
	}
	if s := b.Summary()[0].Text; !strings.Contains(s, `1 told "held" after the next grant, by up to 600ms (median 600ms; tolerance 100ms); 1 of them right before a write`) {
		t.Errorf("summary %q", s)
	}
	ms := b.Marks(0)
	if len(ms) != 1 || ms[0].Lane != "w1" || ms[0].Start != 3_500_000_000 || inMS(ms[0].End) != 4100 ||
		ms[0].Tell != "w1's library said held 0.60s after w2 was granted the lock" {
		t.Errorf("marks %+v", ms)
	}
}

// A holder told "not held" before the next grant, and whose later
// questions failed, has no window; a window within the tolerance is
// counted but valid.
func TestNoWindowAndTolerance(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(0.9, 0, 1)
	h.Phase(1, 0, la.PhaseAcquired, la.Acquired{Token: 1})
	held(h, 1.05, 0, la.Held{Held: true})
	held(h, 2.9, 0, la.Held{Held: false})
	held(h, 3.6, 0, la.Held{Error: "context deadline exceeded"})
	h.Invoke(3, 1, 2)
	h.Phase(3.5, 1, la.PhaseAcquired, la.Acquired{Token: 2})
	held(h, 3.55, 1, la.Held{Held: true})
	h.Invoke(5, 2, 3)
	h.Phase(5.5, 2, la.PhaseAcquired, la.Acquired{Token: 3})
	b := Derive(cfg, h.Sorted()).(*Belief)
	// w2 held from 3.5: its last "held" at 3.55 is before w3's grant.
	if b.Stale != 0 || b.Grants != 2 || b.Unanswered != 1 {
		t.Errorf("%+v: want no stale window over 2 handovers, 1 unanswered", b)
	}
	if v, _ := b.Verdict(); v != record.None {
		t.Errorf("verdict %v, want none", v)
	}
	held(h, 5.55, 1, la.Held{Held: true}) // 50 ms after w3's grant
	b = Derive(cfg, h.Sorted()).(*Belief)
	if b.Stale != 1 || inMS(b.MaxNS) != 50 || b.Rechecked != 0 {
		t.Fatalf("%+v: want one window of 50ms, a sampler's answer (not before a write)", b)
	}
	if s := b.Summary()[0].Text; strings.Contains(s, "before a write") {
		t.Errorf("summary %q: no window ended in a recheck", s)
	}
	if v, _ := b.Verdict(); v != record.None {
		t.Errorf("a window within the 100ms tolerance: verdict %v", v)
	}
}

// A library that cannot be asked makes the check unknown; a history
// without held phases has no record.
func TestUnknownAndNone(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(0.9, 0, 1)
	h.Phase(1, 0, la.PhaseAcquired, la.Acquired{Token: 1})
	if r := Derive(cfg, h.Sorted()); r != nil {
		t.Errorf("a history without held phases: %v", r)
	}
	held(h, 1.05, 0, la.Held{Unknown: true})
	b := Derive(cfg, h.Sorted()).(*Belief)
	if v, why := b.Verdict(); v != record.Unknown || !strings.Contains(why, "cannot say") {
		t.Errorf("verdict %v %q, want unknown", v, why)
	}
}

// An answer the holder gave before it was paused, and that the harness
// heard only after, counts where it was given (its kernel clock stamp),
// not where it was heard: no window.
func TestAnswerTimedWhereGiven(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(0.9, 0, 1)
	h.Phase(1, 0, la.PhaseAcquired, la.Acquired{Token: 1})
	h.Invoke(3, 1, 2)
	h.Phase(3.5, 1, la.PhaseAcquired, la.Acquired{Token: 2})
	// Given at 1.3 s (kernel clock 10 s + 1.3 s), heard at 4 s.
	held(h, 4, 0, la.Held{Held: true, AnsweredMono: 11_300_000_000})
	run := cfg
	run.HistoryStartedMono = 10_000_000_000
	b := Derive(run, h.Sorted()).(*Belief)
	if b.Stale != 0 {
		t.Errorf("%+v: an answer given before the next grant counted as stale", b)
	}
	// Without the run's start on that clock, the harness's time is all
	// there is.
	if b := Derive(cfg, h.Sorted()).(*Belief); b.Stale != 1 || inMS(b.MaxNS) != 500 {
		t.Errorf("%+v: want the window by the harness's time, 500ms", b)
	}
}

// A client program's answer to a question put at 1.3 s, which the worker
// read only at 4.2 s because the holder was paused in between, counts where
// the question was put: the program may have answered before the pause.
// Without a pause of the holder, a slow answer counts where it came (the
// application got it then); and an answer to a question put after the
// next grant still makes a window.
func TestAnswerTimedWhenAsked(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(0.9, 0, 1)
	h.Phase(1, 0, la.PhaseAcquired, la.Acquired{Token: 1})
	h.Invoke(3, 1, 2)
	h.Phase(3.5, 1, la.PhaseAcquired, la.Acquired{Token: 2})
	held(h, 4.3, 0, la.Held{Held: true, AskedMono: 11_300_000_000, AnsweredMono: 14_200_000_000})
	run := cfg
	run.HistoryStartedMono = 10_000_000_000
	if b := Derive(run, h.Sorted()).(*Belief); b.Stale != 1 || inMS(b.MaxNS) != 700 {
		t.Errorf("%+v: a slow answer without a pause of its holder: want its window where it came, 700ms", b)
	}
	paused := &lockappendtest.Hist{T: t}
	*paused = *h
	paused.Fault(1.4, 4.1, "w1", lockappendtest.Pause(0, 1, 2700*time.Millisecond))
	if b := Derive(run, paused.Sorted()).(*Belief); b.Stale != 0 {
		t.Errorf("%+v: an answer to a question put before the holder's pause and the next grant counted as stale", b)
	}
	held(paused, 4.5, 0, la.Held{Held: true, AskedMono: 14_400_000_000, AnsweredMono: 14_450_000_000})
	if b := Derive(run, paused.Sorted()).(*Belief); b.Stale != 1 || inMS(b.MaxNS) != 950 {
		t.Errorf("%+v: want a window from the next grant (3.5s) to the answer at 4.45s: 950ms", b)
	}
}

// A window whose holder was paused at the next grant is told with the
// pause: its own part runs from the resume (4 s) to the last "held"
// (4.1 s), 100 ms of a 600 ms window; a window of a holder that was not
// paused is its own whole.
func TestWindowOwnPartAfterResume(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(0.9, 0, 1)
	h.Phase(1, 0, la.PhaseAcquired, la.Acquired{Token: 1})
	held(h, 1.05, 0, la.Held{Held: true})
	h.Fault(1.2, 4, "w1", lockappendtest.Pause(0, 1, 2800*time.Millisecond))
	h.Invoke(3, 1, 2)
	h.Phase(3.5, 1, la.PhaseAcquired, la.Acquired{Token: 2})
	held(h, 4.05, 0, la.Held{Held: true})
	held(h, 4.1, 0, la.Held{Held: true, Recheck: true})
	h.Add(4.3, 0, history.Ok, la.FAppend, la.Completion{Element: 1, Token: 1})
	// w2 is not paused; w3 is granted at 5 s while w2 is told held until
	// 5.3 s.
	held(h, 5.3, 1, la.Held{Held: true})
	h.Invoke(4.9, 2, 3)
	h.Phase(5, 2, la.PhaseAcquired, la.Acquired{Token: 3})
	b := Derive(cfg, h.Sorted()).(*Belief)
	if b.Stale != 2 || b.Paused != 1 || inMS(b.MaxNS) != 600 || inMS(b.OwnMaxNS) != 300 {
		t.Fatalf("%+v: want 2 windows (600ms, 300ms), 1 of a paused holder, longest own part 300ms", b)
	}
	w := b.Windows[0]
	if w.Holder != 0 || inMS(w.ResumedNS) != 4000 || inMS(w.OwnNS) != 100 {
		t.Errorf("paused holder's window %+v: want resumed at 4s, own part 100ms", w)
	}
	if w := b.Windows[1]; w.Holder != 1 || w.ResumedNS != 0 || w.OwnNS != w.WindowNS {
		t.Errorf("running holder's window %+v: want its own whole", w)
	}
	if s := b.Summary()[0].Text; !strings.Contains(s, "1 while the holder was paused: counted from when its library ran again, up to 300ms") {
		t.Errorf("summary %q", s)
	}
	ms := b.Marks(0)
	if len(ms) != 2 || ms[0].Tell != "w1's library said held 0.60s after w2 was granted the lock (w1 was paused until 0.10s before)" ||
		ms[1].Tell != "w2's library said held 0.30s after w3 was granted the lock" {
		t.Errorf("marks %+v", ms)
	}
}

// Two grants heard by a starved harness in one burst, in the wrong order:
// w3 was granted (its first question at 7.26 s on the kernel clock) and
// let go before w2 was (its first question at 7.33 s), but the harness
// heard w2's grant at 7.333 s and w3's at 7.334 s. Each grant is placed
// no later than its holder's first question, so w2's "held" answers after
// 7.334 s are no window.
func TestGrantsHeardInABurstKeepTheirOrder(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(6, 1, 1)
	h.Invoke(6, 2, 2)
	h.Phase(7.333, 1, la.PhaseAcquired, la.Acquired{})
	h.Phase(7.334, 1, la.PhaseHeld, la.Held{Held: true, AskedMono: 17_330_000_000, AnsweredMono: 17_331_000_000})
	h.Phase(7.334, 2, la.PhaseAcquired, la.Acquired{})
	h.Phase(7.334, 2, la.PhaseHeld, la.Held{Held: true, AskedMono: 17_260_000_000, AnsweredMono: 17_261_000_000})
	h.Add(7.334, 2, history.Fail, la.FAppend, la.Completion{Element: 2})
	for _, at := range []float64{7.4, 7.45, 7.5, 7.6} {
		held(h, at, 1, la.Held{Held: true, AskedMono: int64((at + 10) * 1e9), AnsweredMono: int64((at+10)*1e9) + 1e6})
	}
	h.Add(7.7, 1, history.Ok, la.FAppend, la.Completion{Element: 1})
	run := cfg
	run.HistoryStartedMono = 10_000_000_000
	if b := Derive(run, h.Sorted()).(*Belief); b.Stale != 0 || b.Grants != 1 {
		t.Errorf("%+v: want 1 handover (w3 to w2) and no window", b)
	}
	// By the harness's times alone, w3 seems granted after w2.
	if b := Derive(cfg, h.Sorted()).(*Belief); b.Stale != 1 {
		t.Errorf("%+v: without the kernel clock, want the window the harness's order makes", b)
	}
}

// A pause whose stop is recorded late (after the health check that follows
// the heal): the holder resumed no later than its first question after the
// pause began, so the own part runs from there.
func TestResumeByFirstQuestion(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Invoke(0.9, 0, 1)
	h.Phase(1, 0, la.PhaseAcquired, la.Acquired{Token: 1})
	held(h, 1.05, 0, la.Held{Held: true})
	h.Fault(1.2, 4.5, "w1", lockappendtest.Pause(0, 1, 2800*time.Millisecond))
	h.Invoke(3, 1, 2)
	h.Phase(3.5, 1, la.PhaseAcquired, la.Acquired{Token: 2})
	held(h, 4.05, 0, la.Held{Held: true})
	held(h, 4.1, 0, la.Held{Held: true, Recheck: true})
	h.Add(4.3, 0, history.Ok, la.FAppend, la.Completion{Element: 1, Token: 1})
	b := Derive(cfg, h.Sorted()).(*Belief)
	if b.Stale != 1 || b.Paused != 1 || inMS(b.Windows[0].ResumedNS) != 4050 || inMS(b.OwnMaxNS) != 50 {
		t.Fatalf("%+v: want the resume at the first question after the pause (4.05s), own part 50ms", b)
	}
}
