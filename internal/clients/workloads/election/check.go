package election

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Checker names of the election workload, besides lock-append's
// linearizable, lost-updates (here: lost entries) and stats.
const (
	// NameTerms: at most one leader per term, and terms grow in the order
	// leaderships begin (lock-append's token-monotonic on the terms).
	NameTerms = "terms"
	// NameForkedLog: no deposed leader's entry is accepted after an entry
	// of a newer term.
	NameForkedLog = "forked-log"
	// NameSplitBrain: windows in which two clients each believed they led
	// (informational).
	NameSplitBrain = "split-brain"
)

// Checkers are the election checkers' results.
type Checkers struct {
	Linearizable checkers.LinearizableResult `json:"linearizable"`
	LostUpdates  checkers.LostUpdatesResult  `json:"lost-updates"`
	Terms        checkers.TokensResult       `json:"terms"`
	ForkedLog    ForkResult                  `json:"forked-log"`
	SplitBrain   SplitBrainResult            `json:"split-brain"`
	Stats        checkers.StatsResult        `json:"stats"`
}

// Result is an election run's result (the top level of results.json).
type Result struct {
	Valid    checkers.Validity `json:"valid"`
	Error    string            `json:"error,omitempty"`
	Checkers Checkers          `json:"checkers"`
	// Leaderships counts the campaigns that won.
	Leaderships int `json:"leaderships"`
	// LostUpdates are the acknowledged entries missing from the final log.
	LostUpdates checkers.LostUpdates `json:"lost_updates"`
	// FenceRejections counts entries (and reads) the log refused by term
	// fencing.
	FenceRejections int `json:"fence_rejections"`
	// Forks counts deposed leaders' entries accepted after or beside an
	// entry of a newer term; SplitBrain the leaderships that went on after
	// another client was elected.
	Forks      int `json:"forks"`
	SplitBrain int `json:"split_brain"`
	// FirstLostUpdateNS is when the first lost entry was acknowledged.
	FirstLostUpdateNS *int64 `json:"first_lost_update_ns,omitempty"`
}

// Verdict is r.Valid (store.WorkloadResult).
func (r *Result) Verdict() checkers.Validity { return r.Valid }

// SetVerdict sets r.Valid (store.WorkloadResult).
func (r *Result) SetVerdict(v checkers.Validity) { r.Valid = v }

// Fork is a deposed leader's entry (Stale) accepted after or beside an
// entry of a newer term (Newer): see ForkAfter and ForkBranch.
type Fork struct {
	Kind  string   `json:"kind"`
	Stale EntryRef `json:"stale"`
	Newer EntryRef `json:"newer"`
}

// EntryRef names an entry: its leader, term, seq and element, and when its
// write was sent and answered (ns since the start).
type EntryRef struct {
	Leader   history.Process `json:"leader"`
	Term     int64           `json:"term"`
	Seq      int             `json:"seq"`
	Element  int64           `json:"element"`
	SentNS   int64           `json:"sent_ns"`
	AnswerNS int64           `json:"answered_ns"`
}

// ForkResult is the forked-log checker's.
type ForkResult struct {
	checkers.Verdict
	Count int `json:"count"`
	// Forks lists the first checkers.MaxViolations, by the stale entry's
	// acknowledgement.
	Forks []Fork `json:"forks,omitempty"`
}

// Window is a time in which two leaderships overlapped.
type Window struct {
	Leaders [2]history.Process `json:"leaders"`
	Terms   [2]int64           `json:"terms"`
	FromNS  int64              `json:"from_ns"`
	ToNS    int64              `json:"to_ns"`
}

// SplitBrainResult is the split-brain checker's: informational, always
// valid.
type SplitBrainResult struct {
	checkers.Verdict
	Count   int      `json:"count"`
	Windows []Window `json:"windows,omitempty"`
}

// Leadership is one won campaign as the history shows it.
type Leadership struct {
	Process history.Process
	Term    int64
	// ElectedNS is the elected phase's time, EndNS the resigning phase's
	// (or the operation's completion, or the end of the history).
	ElectedNS, EndNS int64
	Entries          []EntryRecord
	// Reason is the lead operation's completion reason: why the leader
	// stopped its leader work early (Completion.Reason).
	Reason string
}

// EntryRecord is one entry a leader started.
type EntryRecord struct {
	Entry
	StartNS int64
	Read    []int64
	// SentNS is the write-sent phase's time (-1: not sent); Written the
	// log's answer (nil: none recorded) at WrittenNS.
	SentNS    int64
	Written   *Written
	WrittenNS int64
}

// Leaderships reads the leaderships of a history.
func Leaderships(ops []history.Op) ([]Leadership, error) {
	leads, err := parseLeads(ops)
	if err != nil {
		return nil, err
	}
	return elected(leads), nil
}

// lead is one lead operation, read once: its invocation, its completion
// (zero if none), and its leadership, if it won.
type lead struct {
	inv     Invoke
	done    Completion
	l       Leadership
	elected bool
}

// parseLeads reads every lead operation of ops, in order.
func parseLeads(ops []history.Op) ([]lead, error) {
	last := int64(0)
	for _, o := range ops {
		last = max(last, o.Invoke.Time, o.End())
		for _, p := range o.Phases {
			last = max(last, p.Time)
		}
	}
	var out []lead
	for i := range ops {
		o := &ops[i]
		if o.F != FLead {
			continue
		}
		var ld lead
		if err := o.Invoke.Decode(&ld.inv); err != nil {
			return nil, err
		}
		if len(ld.inv.Elements) == 0 {
			return nil, fmt.Errorf("history: event %d (invoke lead) has no elements", o.Invoke.Index)
		}
		if o.Complete != nil && len(o.Complete.Value) > 0 {
			if err := o.Complete.Decode(&ld.done); err != nil {
				return nil, err
			}
		}
		var err error
		if ld.l, ld.elected, err = leadership(o, last); err != nil {
			return nil, err
		}
		ld.l.Reason = ld.done.Reason
		out = append(out, ld)
	}
	return out, nil
}

// elected are the leaderships of the leads that won.
func elected(leads []lead) []Leadership {
	var out []Leadership
	for _, ld := range leads {
		if ld.elected {
			out = append(out, ld.l)
		}
	}
	return out
}

// leadership reads one lead operation's phases.
func leadership(o *history.Op, last int64) (Leadership, bool, error) {
	l := Leadership{Process: o.Process, EndNS: -1}
	elected := false
	var cur *EntryRecord
	for _, p := range o.Phases {
		switch p.F {
		case PhaseElected:
			var e Elected
			if err := p.Decode(&e); err != nil {
				return l, false, err
			}
			l.Term, l.ElectedNS, elected = e.Term, p.Time, true
		case PhaseEntry:
			var e Entry
			if err := p.Decode(&e); err != nil {
				return l, false, err
			}
			l.Entries = append(l.Entries, EntryRecord{Entry: e, StartNS: p.Time, SentNS: -1})
			cur = &l.Entries[len(l.Entries)-1]
		case PhaseRead:
			if cur != nil {
				var v la.ReadValue
				if err := p.Decode(&v); err != nil {
					return l, false, err
				}
				cur.Read = v.Value
			}
		case PhaseWriteSent:
			if cur != nil {
				cur.SentNS = p.Time
			}
		case PhaseWritten:
			if cur != nil {
				var w Written
				if err := p.Decode(&w); err != nil {
					return l, false, err
				}
				cur.Written, cur.WrittenNS = &w, p.Time
			}
		case PhaseResigning:
			if l.EndNS < 0 {
				l.EndNS = p.Time
			}
		}
	}
	if l.EndNS < 0 {
		l.EndNS = last
		if o.Complete != nil {
			l.EndNS = o.Complete.Time
		}
	}
	return l, elected, nil
}

// Check runs the election checkers on a history as recorded. The entries
// are checked as lock-append operations (one per entry, on the leader's
// process, the first carrying the leadership's grant with the term as its
// token), so the log's linearizability, the lost entries, the terms
// (lock-append's token monotonicity) and the stats are lock-append's own
// checkers, run by the lock-append workload's lockappend.Check (this
// package imports that workload for it); the forked log and the split
// brain are the election's.
func Check(events []history.Event, opts checkers.Options) *Result {
	ops, err := history.Pair(events)
	if err != nil {
		return failed(fmt.Errorf("checkers: %w: %w", checkers.ErrBadHistory, err))
	}
	leads, err := parseLeads(ops)
	if err != nil {
		return failed(fmt.Errorf("checkers: %w: %w", checkers.ErrBadHistory, err))
	}
	ls := elected(leads)
	synthetic, err := asLockAppend(events, ops, leads)
	if err != nil {
		return failed(fmt.Errorf("checkers: %w: %w", checkers.ErrBadHistory, err))
	}
	lr := lockappend.Check(synthetic, opts)
	if lr.Err() != nil {
		return failed(lr.Err())
	}
	c := Checkers{
		Linearizable: lr.Checkers.Linearizable,
		LostUpdates:  lr.Checkers.LostUpdates,
		Terms:        lr.Checkers.TokenMonotonic,
		Stats:        lr.Checkers.Stats,
	}
	c.ForkedLog = checkers.Protect(NameForkedLog, func() ForkResult { return checkForks(ls, opts.Workers) })
	c.SplitBrain = checkers.Protect(NameSplitBrain, func() SplitBrainResult { return checkSplitBrain(ls) })
	return &Result{
		Valid: checkers.Compose(c.Linearizable.Valid, c.LostUpdates.Valid, c.Terms.Valid,
			c.ForkedLog.Valid, c.SplitBrain.Valid, c.Stats.Valid),
		Checkers:          c,
		Leaderships:       len(ls),
		LostUpdates:       lr.LostUpdates,
		FenceRejections:   lr.FenceRejections,
		Forks:             c.ForkedLog.Count,
		SplitBrain:        c.SplitBrain.Count,
		FirstLostUpdateNS: lr.FirstLostUpdateNS,
	}
}

// failed is the result of a history the checkers cannot read or whose
// assumptions it breaks: unknown everywhere, with the reason.
func failed(err error) *Result {
	v := checkers.Verdict{Valid: checkers.Unknown, Message: "cannot check: " + err.Error(), Error: err.Error()}
	return &Result{Valid: checkers.Unknown, Error: err.Error(), LostUpdates: checkers.LostUpdates{Elements: []checkers.LostElement{}},
		Checkers: Checkers{
			Linearizable: checkers.LinearizableResult{Verdict: v}, LostUpdates: checkers.LostUpdatesResult{Verdict: v},
			Terms: checkers.TokensResult{Verdict: v}, ForkedLog: ForkResult{Verdict: v},
			SplitBrain: SplitBrainResult{Verdict: v}, Stats: checkers.StatsResult{Verdict: v},
		}}
}

// Kinds of forks.
const (
	// ForkAfter: the old term's entry was written after the newer term's:
	// the list it wrote (what it read, then its element) holds the newer
	// entry before it.
	ForkAfter = "after"
	// ForkBranch: both entries were acknowledged and neither list holds
	// the other's entry: the log took the old leader's write on a branch
	// of its own, and one of the two branches is lost.
	ForkBranch = "branch"
)

// checkForks finds the deposed leaders' entries the log accepted besides
// a newer term's, from the lists the acknowledged writes wrote (what each
// read, then its element), not from timing: an entry whose list holds an
// entry of a newer term before it (ForkAfter), and pairs of an older and a
// newer term's entries on divergent branches, neither list holding the
// other's entry (ForkBranch). Term fencing prevents both: once the newer
// leader has read the log, the old leader's write is refused, and before
// that the newer leader's read holds the old entry. O(n²) in the
// acknowledged entries.
func checkForks(ls []Leadership, workers int) ForkResult {
	type written struct {
		ref  EntryRef
		list map[int64]bool
	}
	var acked []written
	term := map[int64]int64{}
	for _, l := range ls {
		for _, e := range l.Entries {
			term[e.Element] = l.Term
			if e.Written == nil || e.Written.Type != history.Ok {
				continue
			}
			w := written{ref: EntryRef{Leader: l.Process, Term: l.Term, Seq: e.Seq, Element: e.Element, SentNS: e.SentNS, AnswerNS: e.WrittenNS},
				list: make(map[int64]bool, len(e.Read)+1)}
			for _, x := range e.Read {
				w.list[x] = true
			}
			w.list[e.Element] = true
			acked = append(acked, w)
		}
	}
	res := ForkResult{Verdict: checkers.Verdict{Valid: checkers.Valid}}
	add := func(f Fork) {
		res.Count++
		if len(res.Forks) < checkers.MaxViolations {
			res.Forks = append(res.Forks, f)
		}
	}
	byElement := map[int64]EntryRef{}
	for _, a := range acked {
		byElement[a.ref.Element] = a.ref
	}
	for _, a := range acked {
		// The newest entry the old one was written after.
		var newer *EntryRef
		for x := range a.list {
			if t, ok := term[x]; ok && t > a.ref.Term && (newer == nil || t > newer.Term) {
				if r, ok := byElement[x]; ok {
					newer = &r
				}
			}
		}
		if newer != nil {
			add(Fork{Kind: ForkAfter, Stale: a.ref, Newer: *newer})
		}
	}
	slices.SortFunc(acked, func(a, b written) int { return cmp.Compare(a.ref.AnswerNS, b.ref.AnswerNS) })
	for _, a := range acked {
		for _, b := range acked {
			if b.ref.Term > a.ref.Term && !a.list[b.ref.Element] && !b.list[a.ref.Element] {
				add(Fork{Kind: ForkBranch, Stale: a.ref, Newer: b.ref})
				break // one branch fork per old entry
			}
		}
	}
	slices.SortFunc(res.Forks, func(a, b Fork) int { return cmp.Compare(a.Stale.AnswerNS, b.Stale.AnswerNS) })
	switch {
	case res.Count > 0:
		res.Valid = checkers.Invalid
		f := res.Forks[0]
		how := "was written after"
		if f.Kind == ForkBranch {
			how = "was accepted on a branch apart from"
		}
		res.Message = fmt.Sprintf("the log forked %d times: the first, entry %d.%d of %s %s entry %d.%d of %s (a newer term)",
			res.Count, f.Stale.Term, f.Stale.Seq, f.Stale.Leader.Client(workers), how, f.Newer.Term, f.Newer.Seq, f.Newer.Leader.Client(workers))
	case len(acked) == 0:
		res.Message = "no entry was acknowledged: nothing to fork"
	default:
		res.Message = fmt.Sprintf("%d acknowledged entries, one log: no entry of an old term after or beside a newer term's", len(acked))
	}
	return res
}

// checkSplitBrain finds the leaderships during which another client was
// elected: one window per deposed leader, from the first election of
// another client to the deposed leader's end (resigning, or its
// operation's end). Informational: the lock service does not promise that
// a deposed leader knows it is deposed.
func checkSplitBrain(ls []Leadership) SplitBrainResult {
	sorted := slices.Clone(ls)
	slices.SortFunc(sorted, func(a, b Leadership) int { return cmp.Compare(a.ElectedNS, b.ElectedNS) })
	res := SplitBrainResult{Verdict: checkers.Verdict{Valid: checkers.Valid}}
	for i, a := range sorted {
		for _, b := range sorted[i+1:] {
			if b.ElectedNS >= a.EndNS {
				break
			}
			if a.Process == b.Process {
				continue
			}
			res.Count++
			if len(res.Windows) < checkers.MaxViolations {
				res.Windows = append(res.Windows, Window{Leaders: [2]history.Process{a.Process, b.Process},
					Terms: [2]int64{a.Term, b.Term}, FromNS: b.ElectedNS, ToNS: a.EndNS})
			}
			break
		}
	}
	res.Message = fmt.Sprintf("%d leaderships went on after another client was elected", res.Count)
	return res
}

// asLockAppend rewrites a history's leaderships as lock-append operations,
// one per entry, so that lock-append's checkers read them: entry k of a
// leadership is an append of its element by the leader's process, invoked
// when entry k-1 was answered (the first: when the lead operation was
// invoked), completed when the log answered it (or as the lead operation
// completed, for an entry without an answer; never, for one whose
// operation never completed). The first entry carries the grant
// (acquired, with the term as token). A leadership that started no entry
// is one append of its first element with the operation's outcome. Final
// reads, the nemesis's events and everything else pass through unchanged.
func asLockAppend(events []history.Event, ops []history.Op, leads []lead) ([]history.Event, error) {
	var out []history.Event
	for _, e := range events {
		if e.Process == history.Nemesis {
			out = append(out, e)
		}
	}
	add := func(t int64, p history.Process, typ history.Type, f string, v any) error {
		var raw json.RawMessage
		if v != nil {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			raw = b
		}
		out = append(out, history.Event{Time: t, Process: p, Type: typ, F: f, Value: raw})
		return nil
	}
	next := 0 // leads[next] is the next lead operation of ops
	for i := range ops {
		o := &ops[i]
		if o.F != FLead {
			out = append(out, o.Invoke)
			out = append(out, o.Phases...)
			if o.Complete != nil {
				out = append(out, *o.Complete)
			}
			continue
		}
		inv, done, l, elected := leads[next].inv, leads[next].done, leads[next].l, leads[next].elected
		next++
		grant := func(t int64) error {
			if !elected {
				return nil
			}
			return add(t, o.Process, history.Phase, la.PhaseAcquired, la.Acquired{Token: l.Term})
		}
		if len(l.Entries) == 0 {
			if err := add(o.Invoke.Time, o.Process, history.Invoke, la.FAppend, la.Invoke{Element: inv.Elements[0]}); err != nil {
				return nil, err
			}
			if err := grant(max(l.ElectedNS, o.Invoke.Time)); err != nil {
				return nil, err
			}
			if o.Complete != nil {
				c := la.Completion{Element: inv.Elements[0], Token: l.Term, Reason: done.Reason, Error: done.Error}
				if err := add(o.Complete.Time, o.Process, o.Complete.Type, la.FAppend, c); err != nil {
					return nil, err
				}
			}
			continue
		}
		start := o.Invoke.Time
		for k, e := range l.Entries {
			if err := add(start, o.Process, history.Invoke, la.FAppend, la.Invoke{Element: e.Element}); err != nil {
				return nil, err
			}
			if k == 0 {
				if err := grant(max(l.ElectedNS, start)); err != nil {
					return nil, err
				}
			}
			c := la.Completion{Element: e.Element, Token: l.Term, Read: e.Read}
			if e.Read != nil {
				if err := add(max(e.StartNS, start), o.Process, history.Phase, la.PhaseRead, la.ReadValue{Value: e.Read}); err != nil {
					return nil, err
				}
			}
			if e.SentNS >= 0 {
				if err := add(max(e.SentNS, start), o.Process, history.Phase, la.PhaseWriteSent, nil); err != nil {
					return nil, err
				}
			}
			switch {
			case e.Written != nil:
				c.Rev, c.Reason, c.Error = e.Written.Rev, e.Written.Reason, e.Written.Error
				if err := add(max(e.WrittenNS, start), o.Process, e.Written.Type, la.FAppend, c); err != nil {
					return nil, err
				}
				start = max(e.WrittenNS, start)
				if e.Written.Type != history.Ok {
					// The leader stopped here (the worker writes no entry
					// after one not acknowledged).
					goto next
				}
			case o.Complete != nil:
				// The leadership ended in this entry before its write
				// was answered: the lead operation's outcome is the
				// entry's (fail: it never sent the write; info:
				// unknown).
				t := o.Complete.Type
				if t == history.Ok {
					t = history.Fail // stopped before the write, after earlier entries
				}
				if t == history.Fail && e.SentNS >= 0 {
					t = history.Info
				}
				c.Reason, c.Error = done.Reason, done.Error
				if err := add(max(o.Complete.Time, start), o.Process, t, la.FAppend, c); err != nil {
					return nil, err
				}
				goto next
			default:
				goto next // never completed: info
			}
		}
	next:
	}
	slices.SortStableFunc(out, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	for i := range out {
		out[i].Index = i
	}
	return out, nil
}

// Summary is the election result's figures (store.WorkloadResult): the
// log's acknowledged and lost entries, its term-fencing rejections and the
// lead operations by outcome.
func (r *Result) Summary() checkers.Summary {
	return checkers.UpdatesSummary(r.Valid, r.LostUpdates, r.FenceRejections, r.FirstLostUpdateNS, r.Checkers.Stats)
}

// CutText returns a copy of r whose free text (its error, each checker's
// message and error) is cut by cut, for a page that shows a result read
// from elsewhere. The copy is a *Result.
func (r *Result) CutText(cut func(string) string) any {
	c := *r
	c.Error = cut(c.Error)
	k := &c.Checkers
	for _, v := range []*checkers.Verdict{&k.Linearizable.Verdict, &k.LostUpdates.Verdict, &k.Terms.Verdict, &k.ForkedLog.Verdict, &k.SplitBrain.Verdict, &k.Stats.Verdict} {
		v.CutText(cut)
	}
	return &c
}
