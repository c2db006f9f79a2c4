package election

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

// MaxStories bounds the stories a report tells.
const MaxStories = 10

// Story is one deposed leader's entry told in words: who led, what stopped
// it, who led next and what the log did with the old leader's entry.
type Story struct {
	// Outcome is "accepted" (the log took the old term's entry after a
	// newer term's: forked, or it erased entries) or "rejected" (term
	// fencing refused it).
	Outcome string
	Text    string
}

// Stories finds the deposed leaders' entries of a history: each
// leadership with an entry the log accepted after a newer term's entry
// (a fork), an entry or a read the log refused by term fencing, or a write
// that erased acknowledged entries, told once, at its first such entry.
// Each leader is named by its client (history.Process.Client of workers).
func Stories(events []history.Event, r *Result, workers int) []Story {
	ops, err := history.Pair(events)
	if err != nil {
		return nil
	}
	ls, err := Leaderships(ops)
	if err != nil {
		return nil
	}
	faults, _ := history.Faults(events)
	forked := map[int64]Fork{}
	for _, f := range r.Checkers.ForkedLog.Forks {
		forked[f.Stale.Element] = f
	}
	erased := map[history.Process]map[int64][]int64{} // leader -> term -> elements its writes erased
	for _, e := range r.LostUpdates.Elements {
		// Only an older term's write erasing a newer term's entry is a
		// deposed leader's doing.
		if w := e.OverwrittenBy; w != nil && w.Known && !w.SideWriter && w.Token < e.Token {
			if erased[w.Process] == nil {
				erased[w.Process] = map[int64][]int64{}
			}
			erased[w.Process][w.Token] = append(erased[w.Process][w.Token], e.Element)
		}
	}
	var out []Story
	for _, l := range ls {
		for _, e := range l.Entries {
			lost := erased[l.Process][l.Term]
			f, isFork := forked[e.Element]
			refused := e.Written != nil && e.Written.Reason == la.ReasonFenced
			// The leader stopped at this entry because the log refused its
			// read.
			readRefused := e.Written == nil && e.SentNS < 0 && l.Reason == la.ReasonFenced &&
				e.Element == l.Entries[len(l.Entries)-1].Element
			if !isFork && !refused && !readRefused && (len(lost) == 0 || e.Written == nil || e.Written.Type != history.Ok) {
				continue
			}
			at := e.SentNS
			if at < 0 {
				at = e.StartNS
			}
			newer := newerLeader(ls, l, at)
			if isFork {
				newer = &f.Newer
			}
			var b strings.Builder
			fmt.Fprintf(&b, "The old leader, %s (term %d), %s", l.Process.Client(workers), l.Term, whatStopped(faults, l, at))
			if newer != nil {
				fmt.Fprintf(&b, "; %s became leader with term %d and wrote entry %d.%d", newer.Leader.Client(workers), newer.Term, newer.Term, newer.Seq)
			} else {
				b.WriteString("; another client became leader")
			}
			s := Story{}
			switch {
			case refused || readRefused:
				s.Outcome = "rejected"
				fmt.Fprintf(&b, "; the old leader went on and tried to append entry %d.%d: rejected by the log", l.Term, e.Seq)
				if e.Written != nil && e.Written.Error != "" {
					fmt.Fprintf(&b, " (%s)", e.Written.Error)
				} else if readRefused {
					b.WriteString(" at its read: the log had seen a newer term")
				}
				b.WriteString(". The log never forked.")
			default:
				s.Outcome = "accepted"
				if isFork && f.Kind == ForkBranch {
					fmt.Fprintf(&b, "; the old leader went on and wrote entry %d.%d over the log it had read before: accepted (the log does not check terms), a branch beside the new leader's", l.Term, e.Seq)
				} else {
					fmt.Fprintf(&b, "; the old leader went on and appended entry %d.%d after it: accepted (the log does not check terms)", l.Term, e.Seq)
				}
				if len(lost) > 0 {
					fmt.Fprintf(&b, ", and its write erased %d acknowledged entries of newer leaders (elements %s)", len(lost), ints(lost, 5))
				}
				b.WriteString(".")
			}
			s.Text = b.String()
			out = append(out, s)
			break
		}
		if len(out) == MaxStories {
			break
		}
	}
	return out
}

// newerLeader is the first leadership of a newer term than l elected
// before at, as the entry it had acknowledged first (or, if none, its
// election).
func newerLeader(ls []Leadership, l Leadership, at int64) *EntryRef {
	var best *Leadership
	for i := range ls {
		n := &ls[i]
		if n.Term > l.Term && n.ElectedNS < at && (best == nil || n.Term < best.Term) {
			best = n
		}
	}
	if best == nil {
		return nil
	}
	ref := &EntryRef{Leader: best.Process, Term: best.Term, Seq: 1}
	for _, e := range best.Entries {
		if e.Written != nil && e.Written.Type == history.Ok {
			ref.Seq, ref.Element, ref.SentNS, ref.AnswerNS = e.Seq, e.Element, e.SentNS, e.WrittenNS
			break
		}
	}
	return ref
}

// whatStopped says what the nemesis did to l's process during its
// leadership, before at: "was paused for 4.1 s (pause-holder)".
func whatStopped(faults []history.Fault, l Leadership, at int64) string {
	for _, f := range faults {
		if p, ok := f.HeldProcess(); !ok || p != l.Process || f.Start > at || (f.Stop >= 0 && f.Stop < l.ElectedNS) {
			continue
		}
		d := "until the end of the run"
		if f.Stop >= 0 {
			d = fmt.Sprintf("for %.1f s", time.Duration(f.Stop-f.Start).Seconds())
		}
		switch {
		case strings.HasPrefix(f.Fault, "pause"):
			return fmt.Sprintf("was paused %s (%s)", d, f.Fault)
		case strings.HasPrefix(f.Fault, "partition"):
			return fmt.Sprintf("was cut off from the cluster %s (%s)", d, f.Fault)
		default:
			return fmt.Sprintf("was hit by %s %s", f.Fault, d)
		}
	}
	return "lost its leadership without knowing it"
}

// ints writes up to n numbers, then how many more.
func ints(xs []int64, n int) string {
	var parts []string
	for i, x := range xs {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(xs)-n))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}
