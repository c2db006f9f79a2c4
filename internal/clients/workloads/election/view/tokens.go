package view

import (
	"fmt"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/election"
	"github.com/fencecheck/fencecheck/internal/report"
)

// tokensInput is the fencing chart of an election run: each leadership a
// grant of its term (stale from the next higher term's election while it
// lasted), each entry a write at its term, as the log answered it; an
// entry whose element was lost, or that a fork names as a deposed
// leader's, marked.
func tokensInput(in *report.Input, r *election.Result) report.TokensInput {
	events := in.AllEvents()
	last := int64(1)
	for _, e := range events {
		last = max(last, e.Time)
	}
	t := report.TokensInput{ID: "tokens-main", From: 0, To: last}
	ops, err := history.Pair(events)
	if err != nil {
		return t
	}
	ls, err := election.Leaderships(ops)
	if err != nil {
		return t
	}
	lost := map[int64]bool{}
	for _, e := range r.LostUpdates.Elements {
		lost[e.Element] = true
	}
	type entryKey struct {
		leader history.Process
		term   int64
		seq    int
	}
	stale := map[entryKey]bool{}
	for _, f := range r.Checkers.ForkedLog.Forks {
		stale[entryKey{f.Stale.Leader, f.Stale.Term, f.Stale.Seq}] = true
	}
	workers := in.Test.Concurrency
	for i, l := range ls {
		who := report.NodeOf(l.Process, workers)
		g := report.TokenGrant{Who: who, Token: l.Term, From: l.ElectedNS, To: l.EndNS, StaleFrom: -1}
		for _, n := range ls[i+1:] {
			if n.Term > l.Term && n.ElectedNS < l.EndNS && (g.StaleFrom < 0 || n.ElectedNS < g.StaleFrom) {
				g.StaleFrom, g.StaleFromTokens = n.ElectedNS, n.Term
			}
		}
		t.Grants = append(t.Grants, g)
		for _, e := range l.Entries {
			w := report.TokenWrite{Who: who, What: fmt.Sprintf("entry %d (element %d)", e.Seq, e.Element), Token: e.Term, HasToken: true,
				Stale: stale[entryKey{l.Process, l.Term, e.Seq}]}
			switch {
			case e.Written != nil && e.Written.Type == history.Ok:
				w.Outcome, w.At, w.Lost = report.WriteAccepted, e.WrittenNS, lost[e.Element]
			case e.Written != nil && e.Written.Type == history.Fail && e.Written.Reason == la.ReasonFenced:
				w.Outcome, w.At = report.WriteRefused, e.WrittenNS
			case e.SentNS >= 0 && (e.Written == nil || e.Written.Type == history.Info):
				w.Outcome, w.At = report.WriteUnknown, e.SentNS
			default:
				continue // never sent, or refused other than by the fence
			}
			t.Writes = append(t.Writes, w)
		}
	}
	return t
}
