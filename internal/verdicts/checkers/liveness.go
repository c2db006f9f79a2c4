package checkers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Liveness kinds: what a measured fault did to the lock.
const (
	// LivenessHolderCrash: the lock holder's client was killed inside its
	// critical section (kill-holder); measured is the time until another
	// client holds the lock.
	LivenessHolderCrash = "holder-crash"
	// LivenessServerKill: lock-service servers were killed (kill:SCOPE,
	// kill:leader a failover); measured is how long no client got the
	// lock.
	LivenessServerKill = "server-kill"
)

// LivenessConfig is what the figures are measured in.
type LivenessConfig struct {
	// TTL is the run's lease TTL; Lease the target's longest lease
	// (targets.MaxLease: the TTL for etcd, 2 TTL + 1 s for Consul, plus
	// its lock-delay). A kill-holder fault's own record (its holder's ttl, lease) takes
	// precedence for its event.
	TTL, Lease time.Duration
}

// LivenessResult is results.json's "liveness": how long the lock stayed
// unavailable after each fault that can take it away, and a summary per
// kind. It is informational: it never makes a run invalid and is not
// composed into the run's verdict. Its own Valid is Valid when every
// measured fault was followed by a grant, Unknown when one was not before
// the history ended, or could not be measured (no client was waiting for
// the lock when it struck), or the history could not be read.
type LivenessResult struct {
	Verdict
	Events []LivenessEvent `json:"events"`
	// HolderCrash sums up the holder-crash events, ServerKill the
	// server-kill ones; nil when the run had none.
	HolderCrash *LivenessSummary `json:"holder_crash,omitempty"`
	ServerKill  *LivenessSummary `json:"server_kill,omitempty"`
	// NormalGapS is the median time between two consecutive grants when
	// no fault was in effect nor being recovered from (nil: too few such
	// grants): the wait that is normal under the run's contention.
	NormalGapS *float64 `json:"normal_gap_s,omitempty"`

	granted bool // the history has a grant
}

// LivenessEvent is one measured fault.
//
// For a holder crash, From is the kill: the earlier of the fault's start
// (recorded once the container has stopped) and the completion of the
// killed process's operation (its connection ended when it died), and the
// recovery ends at the first acquired phase at or after From by any other
// process. For a server kill, From is the fault's start (recorded once the
// killed containers have stopped), and the unavailability ends at the
// first acquired phase at or after From by any process; ExcessS is that
// time minus the run's normal gap between grants (at least 0), so that a
// kill that did not touch the lock (a follower's) shows about 0.
//
// S is the time from From to that grant in seconds, also as a multiple of
// the TTL and of the target's longest lease. When no grant followed before
// the history ended, Recovered is false and S is the time to the history's
// end: a lower bound. Waiting says whether another client was waiting for
// the lock at From (an operation of another process outstanding then,
// which had not acquired the lock yet); an event nobody waited for is
// reported but left out of the summary, since its gap measures the
// clients' idleness, not the lock's.
type LivenessEvent struct {
	Kind  string   `json:"kind"`
	Fault string   `json:"fault"`
	Nodes []string `json:"nodes,omitempty"`
	// Process is the killed holder's process (holder crashes).
	Process *history.Process `json:"process,omitempty"`
	FromNS  int64            `json:"from_ns"`
	// GrantNS and GrantProcess are the first grant's time and process.
	GrantNS      *int64           `json:"grant_ns,omitempty"`
	GrantProcess *history.Process `json:"grant_process,omitempty"`
	Recovered    bool             `json:"recovered"`
	Waiting      bool             `json:"waiting"`
	S            float64          `json:"s"`
	TTLs         float64          `json:"ttls"`
	Leases       float64          `json:"leases"`
	ExcessS      *float64         `json:"excess_s,omitempty"`
	TTL          string           `json:"ttl"`
	Lease        string           `json:"lease"`
}

// LivenessSummary sums up the measured events of one kind: those a client
// waited for and that recovered (Count), with the median and the largest
// time in seconds, TTLs and leases; Unrecovered and NotWaited count the
// others.
type LivenessSummary struct {
	Count        int      `json:"count"`
	Unrecovered  int      `json:"unrecovered"`
	NotWaited    int      `json:"not_waited"`
	MedianS      float64  `json:"median_s"`
	MaxS         float64  `json:"max_s"`
	MedianTTLs   float64  `json:"median_ttls"`
	MaxTTLs      float64  `json:"max_ttls"`
	MedianLeases float64  `json:"median_leases"`
	MaxLeases    float64  `json:"max_leases"`
	MedianExcess *float64 `json:"median_excess_s,omitempty"`
	MaxExcess    *float64 `json:"max_excess_s,omitempty"`
}

// livenessKind is the kind of a fault the checker measures, "" for others.
func livenessKind(fault string) string {
	switch {
	case fault == "kill-holder":
		return LivenessHolderCrash
	case fault == "kill" || strings.HasPrefix(fault, "kill:") && fault != "kill:resource":
		return LivenessServerKill
	}
	return ""
}

// CheckLiveness measures the lock's liveness after each kill-holder and
// each kill of lock-service servers in a history (see LivenessEvent for
// the definitions). Grants are the acquired phases of client processes. It
// returns nil when the history has no such fault, or no grant at all (a
// workload that takes no lock, such as register).
func CheckLiveness(events []history.Event, cfg LivenessConfig) *LivenessResult {
	faults, ferr := history.Faults(events)
	var measured []history.Fault
	for _, f := range faults {
		if livenessKind(f.Fault) != "" {
			measured = append(measured, f)
		}
	}
	if ferr == nil && len(measured) == 0 {
		return nil
	}
	res := Protect("liveness", func() LivenessResult {
		if ferr != nil {
			return LivenessResult{Verdict: unknown(ferr), Events: []LivenessEvent{}}
		}
		ops, err := history.Pair(events)
		if err != nil {
			return LivenessResult{Verdict: unknown(err), Events: []LivenessEvent{}}
		}
		return checkLiveness(ops, events, measured, faults, cfg)
	})
	if res.Error == "" && len(res.Events) > 0 && !res.granted {
		return nil
	}
	return &res
}

// grant is an acquired phase.
type grant struct {
	at int64
	p  history.Process
}

func checkLiveness(ops []history.Op, events []history.Event, measured, all []history.Fault, cfg LivenessConfig) LivenessResult {
	var grants []grant
	for _, o := range ops {
		if o.Process < 0 || o.Process.IsSideWriter() {
			continue
		}
		for _, ph := range o.Phases {
			if ph.F == history.PhaseAcquired {
				grants = append(grants, grant{at: ph.Time, p: o.Process})
			}
		}
	}
	slices.SortStableFunc(grants, func(a, b grant) int { return cmpInt64(a.at, b.at) })
	var end int64
	for _, e := range events {
		end = max(end, e.Time)
	}

	res := LivenessResult{Events: []LivenessEvent{}, granted: len(grants) > 0}
	// quiet: the windows of the faults and of the recoveries from them,
	// which the normal gap leaves out.
	var quiet [][2]int64
	for _, f := range all {
		stop := f.Stop
		if stop < 0 {
			stop = end
		}
		quiet = append(quiet, [2]int64{f.Start, stop})
	}
	for _, f := range measured {
		ev := measure(ops, grants, f, end, cfg)
		if ev.GrantNS != nil {
			quiet = append(quiet, [2]int64{ev.FromNS, *ev.GrantNS})
		}
		res.Events = append(res.Events, ev)
	}
	res.NormalGapS = normalGap(grants, quiet)
	if res.NormalGapS != nil {
		for i := range res.Events {
			ev := &res.Events[i]
			if ev.Kind == LivenessServerKill && ev.Recovered {
				x := round3(max(0, ev.S-*res.NormalGapS))
				ev.ExcessS = &x
			}
		}
	}
	res.HolderCrash = summarizeLiveness(res.Events, LivenessHolderCrash)
	res.ServerKill = summarizeLiveness(res.Events, LivenessServerKill)

	res.Valid = Valid
	var parts []string
	for _, s := range []struct {
		name string
		sum  *LivenessSummary
	}{{"after a holder crash", res.HolderCrash}, {"after a server kill", res.ServerKill}} {
		if s.sum == nil {
			continue
		}
		if s.sum.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s the lock was granted again after %.2fs median (%.2f TTLs), %.2fs at most (%d measured)",
				s.name, s.sum.MedianS, s.sum.MedianTTLs, s.sum.MaxS, s.sum.Count))
		}
		if s.sum.Unrecovered > 0 {
			res.Valid = Unknown
			parts = append(parts, fmt.Sprintf("%d %s never followed by a grant before the history ended", s.sum.Unrecovered, strings.TrimPrefix(s.name, "after ")))
		}
		if s.sum.Count == 0 && s.sum.Unrecovered == 0 {
			res.Valid = Unknown
			parts = append(parts, fmt.Sprintf("no client waited for the lock %s: not measured", s.name))
		}
	}
	res.Message = strings.Join(parts, "; ")
	return res
}

// measure measures one fault.
func measure(ops []history.Op, grants []grant, f history.Fault, end int64, cfg LivenessConfig) LivenessEvent {
	ev := LivenessEvent{Kind: livenessKind(f.Fault), Fault: f.Fault, Nodes: f.Nodes, FromNS: f.Start}
	ttl, lease := cfg.TTL, cfg.Lease
	if h := f.Holder; h != nil && h.TTL > 0 {
		ttl = h.TTL.D()
	}
	if h := f.Holder; h != nil && h.Lease > 0 {
		lease = h.Lease.D()
	}
	if lease <= 0 {
		lease = ttl
	}
	ev.TTL, ev.Lease = ttl.String(), lease.String()
	killed := history.Process(-2) // none
	if ev.Kind == LivenessHolderCrash {
		if p, ok := f.HeldProcess(); ok {
			killed = p
			ev.Process = &killed
			// The killed operation ended when its connection did.
			for _, o := range ops {
				if o.Process == killed && o.Invoke.Time <= f.Start && o.Complete != nil &&
					o.Complete.Type == history.Info && o.Complete.Time < ev.FromNS {
					ev.FromNS = o.Complete.Time
				}
			}
		}
	}
	from := ev.FromNS
	for _, o := range ops {
		if o.Process < 0 || o.Process.IsSideWriter() || o.Process == killed || o.Invoke.Time > from {
			continue
		}
		if o.Complete != nil && o.Complete.Time <= from {
			continue
		}
		if a, ok := o.PhaseEvent(history.PhaseAcquired); ok && a.Time < from {
			continue // it held the lock already
		}
		ev.Waiting = true
		break
	}
	i, _ := slices.BinarySearchFunc(grants, from, func(g grant, t int64) int { return cmpInt64(g.at, t) })
	for ; i < len(grants); i++ {
		if grants[i].p != killed {
			g := grants[i]
			ev.GrantNS, ev.GrantProcess, ev.Recovered = &g.at, &g.p, true
			break
		}
	}
	to := end
	if ev.GrantNS != nil {
		to = *ev.GrantNS
	}
	d := time.Duration(to - from)
	ev.S = round3(d.Seconds())
	if ttl > 0 {
		ev.TTLs = round3(float64(d) / float64(ttl))
	}
	if lease > 0 {
		ev.Leases = round3(float64(d) / float64(lease))
	}
	return ev
}

// normalGap is the median gap between consecutive grants that overlaps no
// quiet window, in seconds; nil with fewer than 3 such gaps.
func normalGap(grants []grant, quiet [][2]int64) *float64 {
	var gaps []float64
	for i := 1; i < len(grants); i++ {
		a, b := grants[i-1].at, grants[i].at
		clear := true
		for _, w := range quiet {
			if a < w[1] && b > w[0] {
				clear = false
				break
			}
		}
		if clear {
			gaps = append(gaps, time.Duration(b-a).Seconds())
		}
	}
	if len(gaps) < 3 {
		return nil
	}
	m := round3(median(gaps))
	return &m
}

// summarizeLiveness sums up the events of one kind; nil when there are none.
func summarizeLiveness(events []LivenessEvent, kind string) *LivenessSummary {
	var s LivenessSummary
	var secs, ttls, leases, excess []float64
	n := 0
	for _, ev := range events {
		if ev.Kind != kind {
			continue
		}
		n++
		switch {
		case !ev.Waiting:
			s.NotWaited++
		case !ev.Recovered:
			s.Unrecovered++
		default:
			s.Count++
			secs = append(secs, ev.S)
			ttls = append(ttls, ev.TTLs)
			leases = append(leases, ev.Leases)
			if ev.ExcessS != nil {
				excess = append(excess, *ev.ExcessS)
			}
		}
	}
	if n == 0 {
		return nil
	}
	if s.Count > 0 {
		s.MedianS, s.MaxS = round3(median(secs)), slices.Max(secs)
		s.MedianTTLs, s.MaxTTLs = round3(median(ttls)), slices.Max(ttls)
		s.MedianLeases, s.MaxLeases = round3(median(leases)), slices.Max(leases)
	}
	if len(excess) > 0 {
		m, x := round3(median(excess)), slices.Max(excess)
		s.MedianExcess, s.MaxExcess = &m, &x
	}
	return &s
}

// median is the median of xs (the mean of the middle two for an even
// count); xs is not changed.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func round3(x float64) float64 {
	return float64(int64(x*1000+0.5)) / 1000
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
