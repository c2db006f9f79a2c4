// Package belief is the record of what the holders' lock libraries said
// about the lock after the next holder was granted it (--recheck):
// results.json's "belief", derived from the history's held phases whenever
// the run is checked.
//
// For each grant, the stale-belief window is the time from the next grant
// of the same lock (the next holder's acquired phase) to the last answer
// in which this grant's holder was told "held" (its held phases, the
// careful holder's recheck included). A positive window is a library
// telling its holder it held a lock someone else had been granted. The
// check is invalid when a window exceeds the tolerance
// (--belief-tolerance), and unknown when a holder's library could not be
// asked.
package belief

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
)

// Key is the record's key in results.json.
const Key = "belief"

// Kind is the record's line of the table: derived from the history (not
// carried), its windows drawn as a red bar past the next grant on the
// stale holder's lane.
var Kind = record.Kind{
	Key:    Key,
	Decode: decode,
	Derive: Derive,
	Styles: []record.Style{
		{Tag: "stale-belief", Bar: true, Class: "stale-belief", LabelClass: "stale-belief", Tone: "bad",
			CSS: ".fig .stale-belief{fill:var(--stale)}.fig .srv-label.stale-belief{fill:var(--stale)}\n"},
	},
}

// Window is one grant whose holder was told "held" after the next grant.
type Window struct {
	// Holder is the stale holder's process, Next the next holder's.
	Holder history.Process `json:"holder"`
	Next   history.Process `json:"next"`
	Token  int64           `json:"token"`
	// GrantedNS is when the next holder was granted the lock, LastHeldNS
	// the stale holder's last "held" (history clock, ns); Window is their
	// difference.
	GrantedNS  int64 `json:"granted_ns"`
	LastHeldNS int64 `json:"last_held_ns"`
	WindowNS   int64 `json:"window_ns"`
	// Recheck: the last "held" was the careful holder's question right
	// before its write.
	Recheck bool `json:"recheck,omitempty"`
	// ResumedNS, when the stale holder's container was paused (a pause
	// fault aimed at its worker) as the next holder was granted the lock,
	// is when that pause ended; 0 otherwise. OwnNS is the part of the
	// window the library itself had to find out: from the later of the
	// next grant and the holder's resume to its last "held" (the whole
	// window when the holder was not paused at the grant). A frozen
	// library cannot learn anything; what it says after it runs again is
	// its own.
	ResumedNS int64 `json:"resumed_ns,omitempty"`
	OwnNS     int64 `json:"own_ns"`
}

// Belief is the record.
type Belief struct {
	// Grants counts the grants followed by another grant of the same
	// lock; Answers the held answers; Unanswered those that were no
	// answer (an error, a timeout).
	Grants     int `json:"grants"`
	Answers    int `json:"answers"`
	Unanswered int `json:"unanswered,omitempty"`
	// Windows are the positive windows, longest first (at most
	// MaxWindows); Stale counts them all; MaxNS and MedianNS are over them.
	Stale int `json:"stale"`
	// Rechecked counts the stale windows whose last "held" was the
	// careful holder's question right before its write: writes the
	// library let through after the next grant.
	Rechecked int   `json:"rechecked,omitempty"`
	MaxNS     int64 `json:"max_ns"`
	MedianNS  int64 `json:"median_ns"`
	// Paused counts the windows whose holder was paused at the next
	// grant; OwnMaxNS is the longest of the windows' own parts (Window's
	// OwnNS): how long a library that could run went on saying "held".
	Paused   int      `json:"paused,omitempty"`
	OwnMaxNS int64    `json:"own_max_ns"`
	Windows  []Window `json:"windows,omitempty"`
	// ToleranceNS is the tolerance the check applied; Unknown says why
	// it could not be judged ("" it could).
	ToleranceNS int64  `json:"tolerance_ns"`
	Unknown     string `json:"unknown,omitempty"`
	// Workers is the run's client count (to name processes w1, w2, ...).
	Workers int `json:"workers"`
}

// MaxWindows bounds the windows a record lists.
const MaxWindows = 64

// Key is the record's key.
func (*Belief) Key() string { return Key }

// IsNil: a run without --recheck has no record.
func (b *Belief) IsNil() bool { return b == nil }

func decode(raw json.RawMessage) (record.Record, error) {
	var b Belief
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// grant is one acquired phase and what its holder was told after it.
type grant struct {
	proc     history.Process
	lock     int
	token    int64
	at       int64
	lastHeld int64 // -1: never told "held"
	recheck  bool
	asked    []int64 // when each question was put (history clock), in order
}

// Derive computes the record from a history: nil when it holds no held
// phase (a run without --recheck).
//
// An answer is placed on the history's clock where the holder got it (its
// AnsweredMono against the run's HistoryStartedMono), not where the
// harness heard it: a holder paused, or starved of CPU, between an answer
// and its message would otherwise seem told "held" long after it was.
// When a pause or CPU throttle of the holder's own container overlapped
// the question itself, the answer is placed where the question was put
// (AskedMono): a client program may have answered just before the pause,
// its reply read by the worker only after. A library whose answer is
// merely slow (a reply held up by a cut) is judged where it answered. A
// grant is placed no later than its holder's first question (the sampler
// asks at once), on the same clock: two workers' grants heard in one burst
// by a starved harness keep the order they happened in.
func Derive(run record.Run, events []history.Event) record.Record {
	s := run.Spec
	ops, err := history.Pair(events)
	if err != nil {
		return nil
	}
	faults, _ := history.Faults(events)
	b := &Belief{ToleranceNS: s.Tolerance().Nanoseconds(), Workers: s.Concurrency}
	var gs []grant
	for _, o := range ops {
		if o.F != la.FAppend {
			continue
		}
		acq, ok := o.PhaseEvent(la.PhaseAcquired)
		if !ok {
			continue
		}
		var inv la.Invoke
		_ = o.Invoke.Decode(&inv)
		var a la.Acquired
		_ = acq.Decode(&a)
		g := grant{proc: o.Process, lock: inv.Lock, token: a.Token, at: acq.Time, lastHeld: -1}
		for _, p := range o.Phases {
			if p.F != la.PhaseHeld {
				continue
			}
			var h la.Held
			if p.Decode(&h) != nil {
				continue
			}
			b.Answers++
			at := p.Time
			asked := p.Time
			if start := run.HistoryStartedMono; start > 0 && h.AskedMono > 0 {
				asked = min(asked, h.AskedMono-start)
			}
			g.asked = append(g.asked, asked)
			if start := run.HistoryStartedMono; start > 0 && h.AnsweredMono > 0 {
				at = min(at, h.AnsweredMono-start)
				if h.AskedMono > 0 && stopped(faults, o.Process.Worker(s.Concurrency), h.AskedMono-start, at) {
					// The holder was paused or starved while it was
					// asked: its answer may have been formed before,
					// and read only after.
					at = h.AskedMono - start
				}
			}
			switch {
			case h.Unknown:
				b.Unknown = "a holder's lock library cannot say whether it holds the lock (it does not implement the question): its beliefs cannot be judged"
			case h.Error != "":
				b.Unanswered++
			case h.Held && at >= g.lastHeld:
				g.lastHeld, g.recheck = at, h.Recheck
			}
		}
		if len(g.asked) > 0 {
			// The sampler asks as soon as the lock is granted: its
			// first question bounds the grant, which the harness, busy
			// or starved, may hear later than another worker's later
			// grant.
			g.at = min(g.at, g.asked[0])
		}
		gs = append(gs, g)
	}
	if b.Answers == 0 {
		return nil
	}
	slices.SortStableFunc(gs, func(x, y grant) int { return cmp.Compare(x.at, y.at) })
	var all []Window
	for i, g := range gs {
		next := -1
		for j := i + 1; j < len(gs); j++ {
			if gs[j].lock == g.lock {
				next = j
				break
			}
		}
		if next < 0 {
			continue
		}
		b.Grants++
		n := gs[next]
		if g.lastHeld <= n.at || n.proc == g.proc {
			continue
		}
		w := Window{Holder: g.proc, Next: n.proc, Token: g.token, GrantedNS: n.at, LastHeldNS: g.lastHeld,
			WindowNS: g.lastHeld - n.at, Recheck: g.recheck, OwnNS: g.lastHeld - n.at}
		if resumed, ok := pausedAt(faults, g.proc.Worker(s.Concurrency), n.at, g.asked); ok {
			w.ResumedNS, w.OwnNS = resumed, max(0, g.lastHeld-resumed)
			b.Paused++
		}
		b.OwnMaxNS = max(b.OwnMaxNS, w.OwnNS)
		all = append(all, w)
		if g.recheck {
			b.Rechecked++
		}
	}
	b.Stale = len(all)
	if len(all) > 0 {
		ws := make([]int64, len(all))
		for i, w := range all {
			ws[i] = w.WindowNS
		}
		slices.Sort(ws)
		b.MaxNS, b.MedianNS = ws[len(ws)-1], Median(ws)
		slices.SortStableFunc(all, func(x, y Window) int { return cmp.Compare(y.WindowNS, x.WindowNS) })
		b.Windows = all[:min(len(all), MaxWindows)]
	}
	return b
}

// stopped reports whether a fault that stops or starves a process (a
// pause, a CPU throttle) was in effect on node (a worker's name) at some
// time of [from, to] (history clock, ns).
func stopped(faults []history.Fault, node string, from, to int64) bool {
	for _, f := range faults {
		if (strings.HasPrefix(f.Fault, "pause") || strings.HasPrefix(f.Fault, "cpu-throttle")) && slices.Contains(f.Nodes, node) &&
			f.Start <= to && (f.Stop == 0 || f.Stop >= from) {
			return true
		}
	}
	return false
}

// pausedAt reports whether a pause of node (a worker's name) was in effect
// at time at (history clock, ns), and when the holder resumed: no later
// than the pause's heal (its stop, less the health check after it), and no
// later than the holder's first question put after the pause began (asked,
// in order), as a paused holder asks nothing. A pause that never ended in
// the history is not one the holder resumed from.
func pausedAt(faults []history.Fault, node string, at int64, asked []int64) (resumed int64, ok bool) {
	for _, f := range faults {
		if !strings.HasPrefix(f.Fault, "pause") || !slices.Contains(f.Nodes, node) || f.Start > at || f.Stop <= at {
			continue
		}
		resumed = max(f.Start, f.Stop-int64(f.Health.After))
		for _, a := range asked {
			if a > f.Start {
				resumed = min(resumed, a)
				break
			}
		}
		return resumed, true
	}
	return 0, false
}

// Median is the median of sorted windows (the mean of the middle two of
// an even number).
func Median(sorted []int64) int64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Verdict: invalid when a window exceeds the tolerance, else unknown when
// a library could not be asked.
func (b *Belief) Verdict() (record.Verdict, string) {
	switch {
	case b.MaxNS > b.ToleranceNS:
		return record.Invalid, fmt.Sprintf("belief: a lock library said its holder held the lock %s after the next holder was granted it (tolerance %s)",
			dur(b.MaxNS), dur(b.ToleranceNS))
	case b.Unknown != "":
		return record.Unknown, "belief: " + b.Unknown
	}
	return record.None, ""
}

// dur is a duration for people: "912ms", "2.43s".
func dur(ns int64) string { return time.Duration(ns).Round(time.Millisecond).String() }

// Summary is one line: the windows, or that there were none.
func (b *Belief) Summary() []record.Line {
	text := fmt.Sprintf("%d answers over %d handovers: ", b.Answers, b.Grants)
	switch {
	case b.Unknown != "":
		text += "unknown: " + safetext.Message(b.Unknown)
	case b.Stale == 0:
		text += "no holder was told it held the lock after the next grant"
	default:
		text += fmt.Sprintf("%d told \"held\" after the next grant, by up to %s (median %s; tolerance %s)", b.Stale, dur(b.MaxNS), dur(b.MedianNS), dur(b.ToleranceNS))
		if b.Rechecked > 0 {
			text += fmt.Sprintf("; %d of them right before a write", b.Rechecked)
		}
		if b.Paused > 0 {
			text += fmt.Sprintf("; %d while the holder was paused: counted from when its library ran again, up to %s", b.Paused, dur(b.OwnMaxNS))
		}
	}
	if b.Unanswered > 0 {
		text += fmt.Sprintf("; %d questions unanswered", b.Unanswered)
	}
	return []record.Line{{Label: "belief", Text: text}}
}

// Marks: each window a bar on the stale holder's lane from the next grant
// to its last "held", and the story's step: "w1's library said held 0.91s
// after w2 was granted".
func (b *Belief) Marks(int64) []record.Mark {
	var out []record.Mark
	ws := slices.Clone(b.Windows)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].GrantedNS < ws[j].GrantedNS })
	for _, w := range ws {
		h, n := w.Holder.Worker(b.Workers), w.Next.Worker(b.Workers)
		asked := "its library said it held the lock"
		if w.Recheck {
			asked = "asked right before its write, its library said it held the lock"
		}
		tell := fmt.Sprintf("%s's library said held %s after %s was granted the lock", h, record.Secs(w.WindowNS), n)
		if w.ResumedNS > 0 {
			tell += fmt.Sprintf(" (%s was paused until %s before)", h, record.Secs(w.OwnNS))
		}
		out = append(out, record.Mark{Lane: h, Tag: "stale-belief", Start: w.GrantedNS, End: w.LastHeldNS,
			Words: fmt.Sprintf("%s: %s until %s, %s after %s was granted it at %s", h, asked, record.Secs(w.LastHeldNS), record.Secs(w.WindowNS), n, record.Secs(w.GrantedNS)),
			Label: "held " + record.Secs(w.WindowNS) + " too long", Tell: tell, Who: h})
	}
	return out
}

// Bound keeps at most lim.Items windows and cuts the reason.
func (b *Belief) Bound(lim record.Limits) record.Record {
	out := *b
	out.Windows = slices.Clone(b.Windows[:min(len(b.Windows), lim.Items, MaxWindows)])
	out.Unknown = safetext.Clip(b.Unknown, lim.Text)
	return &out
}
