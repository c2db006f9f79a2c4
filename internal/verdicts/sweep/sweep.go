// Package sweep is the pause sweep: lock-append runs in which one lock
// holder is paused (pause-holder:xM) for M TTLs, M varied over a range, each
// point run unfenced and fenced (and, optionally, at several client safety
// margins). It finds the pause at which a holder starts losing other
// clients' updates, and shows that fenced points stay at zero.
//
// This package plans the points, turns each finished run into a Trial,
// sums the trials up into sweep.json (Summary), finds the thresholds and
// prints the table; the command line (internal/cli) runs the runs, and
// package report draws the chart.
//
// The threshold. A client checks that its lease has more than its margin
// left (time left L at the check), is paused at its failpoint for P, then
// works for W and writes. By the lock service's reckoning its lease ends
// L + (MaxLease - TTL) after the check (MaxLease: targets.MaxLease, the TTL
// for etcd and Redis; Consul's server keeps a session 2 TTL, plus its
// lock-delay). The next holder then acquires, reads and writes; the paused
// holder's critical section overlaps the next one's, and an update is lost
// (the next holder's, erased by the stale write, or the paused holder's,
// erased by a write based on a read that came before it), as soon as
// P + W > L + (MaxLease - TTL) + H, H the hand-over: the time the service
// takes to notice the expiry and the next holder to acquire and read. The
// expected threshold is that pause with H = 0, in TTLs:
//
//	(L + MaxLease - TTL - W) / TTL
//
// with L measured at each paused holder's own lease check (from its run's
// history). The measured threshold lies above it by H.
//
// On a real machine the pause is in place some time after the check
// (SIGSTOP through the Docker Engine), ends some time after it was due
// (SIGCONT), and the resumed holder's work takes what it takes: all of it
// shortens the pause that loses. The timed threshold takes them from each
// paused holder's own timeline: its slack S is the time its lease had left,
// by its own estimate, when its write left (negative: after the lease
// ended), and the pause at which the write would have left just as the
// lease ended is
//
//	(pause + S + MaxLease - TTL) / TTL
//
// The measured threshold lies above that by H alone.
package sweep

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// File is the sweep's summary, at the root of its results directory; Chart
// is its chart.
const (
	File  = "sweep.json"
	Chart = "sweep.svg"
)

// MaxPoints bounds the pauses of one sweep.
const MaxPoints = 100

// ErrBadSpec marks a --pause or --margin value that does not parse.
var ErrBadSpec = errors.New("bad sweep spec")

// ParsePauses reads --pause: a range "A..B" split into steps evenly spaced
// points (A and B included; steps at least 2), or a comma-separated list of
// TTL multiples ("0.5,0.9,1,2", steps ignored). Points are rounded to
// 1/1000 TTL, sorted and distinct, each in (0, maxMultiple].
func ParsePauses(spec string, steps int, maxMultiple float64) ([]float64, error) {
	spec = strings.TrimSpace(spec)
	var out []float64
	if a, b, isRange := strings.Cut(spec, ".."); isRange {
		lo, err1 := parseMultiple(a)
		hi, err2 := parseMultiple(b)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%w: --pause %q: %w", ErrBadSpec, spec, err)
		}
		if lo >= hi {
			return nil, fmt.Errorf("%w: --pause %q: the range must go up", ErrBadSpec, spec)
		}
		if steps < 2 || steps > MaxPoints {
			return nil, fmt.Errorf("%w: --steps %d: a range takes 2 to %d steps", ErrBadSpec, steps, MaxPoints)
		}
		for i := range steps {
			out = append(out, lo+(hi-lo)*float64(i)/float64(steps-1))
		}
	} else {
		for _, item := range strings.Split(spec, ",") {
			m, err := parseMultiple(item)
			if err != nil {
				return nil, fmt.Errorf("%w: --pause %q: %w", ErrBadSpec, spec, err)
			}
			out = append(out, m)
		}
	}
	for i, m := range out {
		out[i] = math.Round(m*1000) / 1000
		if out[i] <= 0 || out[i] > maxMultiple {
			return nil, fmt.Errorf("%w: --pause %q: %s is not in (0, %g] TTLs", ErrBadSpec, spec, Format(m), maxMultiple)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxPoints {
		return nil, fmt.Errorf("%w: --pause %q: %d points, at most %d", ErrBadSpec, spec, len(out), MaxPoints)
	}
	return out, nil
}

func parseMultiple(s string) (float64, error) {
	s = strings.TrimSpace(s)
	m, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(m) || math.IsInf(m, 0) {
		return 0, fmt.Errorf("%q is not a number of TTLs", s)
	}
	return m, nil
}

// ParseMargins reads the sweep's --margin: comma-separated safety margins,
// each a TTL multiple in [0, 1) ("0.25") or a duration below the TTL
// ("500ms"). They come back as durations, sorted and distinct.
func ParseMargins(spec string, ttl time.Duration) ([]time.Duration, error) {
	var out []time.Duration
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		var d time.Duration
		if m, err := strconv.ParseFloat(item, 64); err == nil {
			if math.IsNaN(m) || m < 0 || m >= 1 {
				return nil, fmt.Errorf("%w: --margin %s: a TTL multiple must be in [0, 1)", ErrBadSpec, item)
			}
			d = time.Duration(m * float64(ttl))
		} else {
			if d, err = time.ParseDuration(item); err != nil {
				return nil, fmt.Errorf("%w: --margin %q: neither a TTL multiple nor a duration", ErrBadSpec, item)
			}
			if d < 0 || d >= ttl {
				return nil, fmt.Errorf("%w: --margin %s must be in [0, --ttl %s)", ErrBadSpec, d, ttl)
			}
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Format prints a TTL multiple as the sweep names it: at most three
// decimals, no trailing zeros (0.25, 1, 1.125).
func Format(m float64) string { return strconv.FormatFloat(math.Round(m*1000)/1000, 'f', -1, 64) }

// Summary is sweep.json.
type Summary struct {
	Started time.Time `json:"started"`
	Args    []string  `json:"args"`
	Target  string    `json:"target"`
	// TargetVersion is the server version, where the target knows it.
	TargetVersion string `json:"target_version,omitempty"`
	// TTLMS is the lease TTL, the unit of the pause axis; LeaseMS the
	// target's MaxLease (the TTL for etcd and Redis); WorkMS the time a
	// client works between its failpoint and its write.
	TTLMS       int64 `json:"ttl_ms"`
	LeaseMS     int64 `json:"lease_ms"`
	WorkMS      int64 `json:"work_ms"`
	Concurrency int   `json:"concurrency"`
	Nodes       int   `json:"nodes"`
	// Runs is the number of runs per point (seeds Seed, Seed+1, ...).
	Runs int    `json:"runs"`
	Seed uint64 `json:"seed"`
	// Points are the sweep's points, by margin, fencing and pause.
	Points []Point `json:"points"`
	// Thresholds are the unfenced series' thresholds, one per margin.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// SecondsPerRun is the mean wall time of a run (set-up and teardown
	// included); Elapsed the whole sweep's so far.
	SecondsPerRun float64 `json:"seconds_per_run,omitempty"`
	Elapsed       string  `json:"elapsed,omitempty"`
	ExitCode      int     `json:"exit_code"`
}

// Point is one pause, margin and fencing mode, and its runs.
type Point struct {
	// Pause is the holder's pause in TTLs; PauseMS the same in ms.
	Pause   float64 `json:"pause"`
	PauseMS int64   `json:"pause_ms"`
	Fencing string  `json:"fencing"`
	// Fenced: any mode but none. A fenced point must never lose an update.
	Fenced   bool  `json:"fenced"`
	MarginMS int64 `json:"margin_ms"`
	// Runs counts the runs that measured the point: their pause was in
	// place, in full, while the holder waited at its failpoint. Lossy
	// counts those that lost an update; Fraction is Lossy/Runs.
	Runs     int     `json:"runs"`
	Lossy    int     `json:"lossy_runs"`
	Fraction float64 `json:"fraction"`
	// Acknowledged, Lost and FenceRejections sum the runs'.
	Acknowledged    int `json:"acknowledged"`
	Lost            int `json:"lost"`
	FenceRejections int `json:"fence_rejections"`
	// Missed counts runs whose pause did not land as asked (not in Runs),
	// Unknown fenced runs that lost nothing but could not be judged valid,
	// Errors runs the harness failed on.
	Missed  int `json:"missed,omitempty"`
	Unknown int `json:"unknown,omitempty"`
	Errors  int `json:"errors,omitempty"`
	// RunDirs are the runs' directories, relative to the results directory.
	RunDirs []string `json:"run_dirs"`
	Trials  []Trial  `json:"trials"`
}

// Trial is one run of a point.
type Trial struct {
	Seed uint64 `json:"seed"`
	// Verdict is the run's ("valid", "invalid", "unknown"), "error" when
	// the harness failed (Error says why).
	Verdict      string `json:"verdict"`
	Acknowledged int    `json:"acknowledged"`
	Lost         int    `json:"lost"`
	// FenceRejections counts the writes (and reads) fencing refused.
	FenceRejections int `json:"fence_rejections"`
	// HeldMS is the pause's fault window, 0 when no pause was injected:
	// from its start (SIGSTOP done) to its stop (SIGCONT done and the
	// cluster found healthy), so a little longer than the pause itself,
	// and shorter than asked only when the time limit cut it short. Hit:
	// the pause was in place while the holder waited at its failpoint.
	HeldMS int64 `json:"held_ms"`
	Hit    bool  `json:"hit"`
	// StopTookMS is how long SIGSTOP took after the holder was found at
	// its failpoint (part of its pause: it waited there), HoldMS the rest
	// of the pause, which the schedule held (its record's stop_took and hold).
	StopTookMS *int64 `json:"stop_took_ms,omitempty"`
	HoldMS     *int64 `json:"hold_ms,omitempty"`
	// LeftMS is the time the paused holder believed it had left on its
	// lease at its check; DelayMS how long after its check the pause was in
	// place; SlackMS the time left by that same estimate when its write
	// left, once resumed and done with its work (negative: after its lease
	// ended). From the run's history; absent when not found.
	LeftMS  *int64 `json:"left_ms,omitempty"`
	DelayMS *int64 `json:"delay_ms,omitempty"`
	SlackMS *int64 `json:"slack_ms,omitempty"`
	// Faults is the number of faults of the run (one, as planned).
	Faults    int     `json:"faults"`
	ElapsedS  float64 `json:"elapsed_s,omitempty"`
	Run       string  `json:"run,omitempty"`
	Error     string  `json:"error,omitempty"`
	MissedWhy string  `json:"missed,omitempty"`
}

// Measured says whether the trial measured its point and, when not, why:
// a pause held in full (its window at least the hold the schedule was
// given, or the point's pause for a run that does not say), in place while
// the holder waited.
// A run that lost an update counts whatever its pause did: the loss
// happened. A run the harness failed on measured nothing (it is counted as
// an error, with no why).
func (t Trial) Measured(pauseMS int64) (bool, string) {
	switch {
	case t.Verdict == "error":
		return false, ""
	case t.Lost > 0:
		return true, ""
	case t.Faults == 0:
		return false, "no pause was injected"
	case !t.Hit:
		return false, "the pause missed the critical section"
	case t.HoldMS != nil && t.HeldMS < *t.HoldMS:
		return false, fmt.Sprintf("the pause's window lasted %d ms of %d (cut short by the time limit)", t.HeldMS, *t.HoldMS)
	case t.HoldMS == nil && t.HeldMS < pauseMS:
		return false, fmt.Sprintf("the pause's window lasted %d ms of %d (cut short by the time limit)", t.HeldMS, pauseMS)
	}
	return true, ""
}

// Add records a trial in its point and updates the point's figures.
func (p *Point) Add(t Trial) {
	p.Trials = append(p.Trials, t)
	if t.Run != "" {
		p.RunDirs = append(p.RunDirs, t.Run)
	}
	p.Recount()
}

// Recount derives the point's figures from its trials (and each trial's
// MissedWhy from Measured).
func (p *Point) Recount() {
	p.Runs, p.Lossy, p.Acknowledged, p.Lost, p.FenceRejections, p.Missed, p.Unknown, p.Errors = 0, 0, 0, 0, 0, 0, 0, 0
	for i := range p.Trials {
		t := &p.Trials[i]
		_, t.MissedWhy = t.Measured(p.PauseMS)
		p.Acknowledged += t.Acknowledged
		p.Lost += t.Lost
		p.FenceRejections += t.FenceRejections
		switch {
		case t.Verdict == "error":
			p.Errors++
			continue
		case t.MissedWhy != "":
			p.Missed++
			continue
		}
		p.Runs++
		if t.Lost > 0 {
			p.Lossy++
		} else if p.Fenced && t.Verdict != "valid" {
			p.Unknown++
		}
	}
	p.Fraction = 0
	if p.Runs > 0 {
		p.Fraction = float64(p.Lossy) / float64(p.Runs)
	}
}

// Threshold is where an unfenced series starts losing updates.
type Threshold struct {
	MarginMS int64 `json:"margin_ms"`
	// Expected is (L + MaxLease - TTL - W)/TTL over the paused holders of
	// the series' runs (L: each one's time left at its lease check): the
	// smallest, the median and the largest, in TTLs. Holders is how many
	// runs it is taken from.
	ExpectedMin    float64 `json:"expected_min"`
	ExpectedMedian float64 `json:"expected_median"`
	ExpectedMax    float64 `json:"expected_max"`
	Holders        int     `json:"holders"`
	// Timed is the same with the fault's own latencies in: for each paused
	// holder, the pause at which its write would have left just as its
	// lease ended, (pause + slack + MaxLease - TTL)/TTL, slack its SlackMS
	// (the time from its check to the pause in place, the resume, and the
	// work as it ran all count). TimedHolders is how many runs it is
	// taken from.
	TimedMin     float64 `json:"timed_min,omitempty"`
	TimedMedian  float64 `json:"timed_median,omitempty"`
	TimedMax     float64 `json:"timed_max,omitempty"`
	TimedHolders int     `json:"timed_holders,omitempty"`
	// Predicted counts the timed runs whose outcome their own timed
	// threshold foretold (lost an update exactly when its pause was past
	// it); a run that did not lose although past it is one whose next
	// holder took longer to hand over (H) than it had.
	Predicted int `json:"predicted,omitempty"`
	// FirstLoss is the smallest pause at which a run lost an update; Half
	// the pause at which half the runs first do, interpolated linearly
	// between the two points around it (absent when no point reaches it).
	// LastClean is the largest pause below FirstLoss at which runs were
	// measured and none lost.
	FirstLoss *float64 `json:"first_loss,omitempty"`
	Half      *float64 `json:"half,omitempty"`
	LastClean *float64 `json:"last_clean,omitempty"`
}

// Expected is a paused holder's expected threshold, in TTLs:
// (left + lease - ttl - work) / ttl.
func Expected(left, lease, ttl, work time.Duration) float64 {
	return float64(left+lease-ttl-work) / float64(ttl)
}

// FindThresholds finds the threshold of each unfenced series (one per margin)
// of s's points, and stores them in s.
func (s *Summary) FindThresholds() {
	ttl := time.Duration(s.TTLMS) * time.Millisecond
	lease := time.Duration(s.LeaseMS) * time.Millisecond
	work := time.Duration(s.WorkMS) * time.Millisecond
	s.Thresholds = nil
	for _, series := range s.Series() {
		if series[0].Fenced {
			continue
		}
		th := Threshold{MarginMS: series[0].MarginMS}
		var xs, ts []float64
		for _, p := range series {
			for _, t := range p.Trials {
				if t.MissedWhy != "" || t.Verdict == "error" {
					continue
				}
				if t.LeftMS != nil {
					xs = append(xs, Expected(time.Duration(*t.LeftMS)*time.Millisecond, lease, ttl, work))
				}
				if t.SlackMS != nil {
					x := float64(p.PauseMS+*t.SlackMS+s.LeaseMS-s.TTLMS) / float64(s.TTLMS)
					ts = append(ts, x)
					if (p.Pause > x) == (t.Lost > 0) {
						th.Predicted++
					}
				}
			}
		}
		th.Holders, th.ExpectedMin, th.ExpectedMedian, th.ExpectedMax = spread(xs)
		th.TimedHolders, th.TimedMin, th.TimedMedian, th.TimedMax = spread(ts)
		var prev *Point
		for i := range series {
			p := &series[i]
			if p.Runs == 0 {
				continue
			}
			if p.Lossy > 0 && th.FirstLoss == nil {
				th.FirstLoss = ptr(p.Pause)
			}
			if p.Lossy == 0 && th.FirstLoss == nil {
				th.LastClean = ptr(p.Pause)
			}
			if th.Half == nil && p.Fraction >= 0.5 {
				x := p.Pause
				if prev != nil && prev.Fraction < 0.5 {
					x = prev.Pause + (0.5-prev.Fraction)/(p.Fraction-prev.Fraction)*(p.Pause-prev.Pause)
				}
				th.Half = ptr(x)
			}
			prev = p
		}
		if th.Half != nil {
			th.Half = ptr(round(*th.Half))
		}
		s.Thresholds = append(s.Thresholds, th)
	}
}

func ptr(f float64) *float64 { return &f }

// spread is the number, smallest, median and largest of xs, rounded.
func spread(xs []float64) (n int, lo, median, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(xs)
	median = xs[len(xs)/2]
	if len(xs)%2 == 0 {
		median = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return len(xs), round(xs[0]), round(median), round(xs[len(xs)-1])
}

// round rounds to 1/1000 TTL, the sweep's resolution.
func round(f float64) float64 { return math.Round(f*1000) / 1000 }

// Series groups the points by margin and fencing mode (in that order, the
// unfenced series of a margin first), each series sorted by pause.
func (s *Summary) Series() [][]Point {
	type key struct {
		margin  int64
		fenced  bool
		fencing string
	}
	groups := map[key][]Point{}
	var keys []key
	for _, p := range s.Points {
		k := key{p.MarginMS, p.Fenced, p.Fencing}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.margin != b.margin {
			return a.margin < b.margin
		}
		if a.fenced != b.fenced {
			return !a.fenced
		}
		return a.fencing < b.fencing
	})
	out := make([][]Point, len(keys))
	for i, k := range keys {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].Pause < g[j].Pause })
		out[i] = g
	}
	return out
}

// Exit codes, as the command line's.
const (
	ExitValid   = 0
	ExitInvalid = 1
	ExitUnknown = 2
	ExitHarness = 255
)

// ExitCodeFor is the sweep's exit code: 255 if the harness failed on a run,
// else 1 if a fenced run lost an update or was invalid, else 2 if a fenced
// measured run could not be judged (unknown), a fenced point has fewer
// measured runs than the sweep planned (s.Runs: a run whose pause missed
// and whose runs again with the next seeds missed too), or the sweep was
// interrupted, else 0. A run whose pause missed and that a run with the
// next seed measured in its place leaves the point whole. Unfenced runs are
// what the sweep measures: they are reported, never judged.
func (s *Summary) ExitCodeFor(interrupted bool) int {
	code := ExitValid
	if interrupted {
		code = ExitUnknown
	}
	for _, p := range s.Points {
		if p.Errors > 0 {
			return ExitHarness
		}
		if !p.Fenced {
			continue
		}
		if p.Runs < s.Runs && code == ExitValid {
			code = ExitUnknown
		}
		for _, t := range p.Trials {
			switch {
			case t.Lost > 0 || t.Verdict == "invalid":
				code = ExitInvalid
			case t.MissedWhy == "" && t.Verdict != "valid" && code == ExitValid:
				code = ExitUnknown
			}
		}
	}
	return code
}
