package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// StatsResult counts the appends of a run by outcome.
type StatsResult struct {
	Verdict
	Ok   int `json:"ok"`
	Fail int `json:"fail"`
	// Info counts appends that completed info or never completed.
	Info int `json:"info"`
	// FailReasons counts fails by Completion.Reason ("" when none given).
	FailReasons map[string]int `json:"fail_reasons"`
	// LateResults counts late results by the type the worker finally
	// reported.
	LateResults map[string]int `json:"late_results"`
	// FenceRejections counts writes the resource refused by fencing: fails
	// with reason fenced, and late results that say so.
	FenceRejections int `json:"fence_rejections"`
	// Rejected are the first MaxListedRejections of those writes, in
	// invocation order: who wrote, with which token, when it was refused.
	Rejected []FenceRejection `json:"rejected,omitempty"`
	// SideWrites counts the side writer's batches (--side-writer), which
	// the counts above leave out.
	SideWrites int `json:"side_writes,omitempty"`
}

// FenceRejection is a write the resource refused by fencing.
type FenceRejection struct {
	Process history.Process `json:"process"`
	Element int64           `json:"element"`
	// Token is the fencing token of the write's grant, 0 when unknown.
	Token int64 `json:"token"`
	// At is when the refusal was reported: the completion, or the late
	// result of an operation recorded as info (ns since the start).
	At int64 `json:"at_ns"`
}

// MaxListedRejections bounds StatsResult.Rejected: the terminal shows the
// first few, the report every one from the history.
const MaxListedRejections = 10

// ListRejection adds r to list unless it holds MaxListedRejections.
func ListRejection(list []FenceRejection, r FenceRejection) []FenceRejection {
	if len(list) >= MaxListedRejections {
		return list
	}
	return append(list, r)
}

// checkStats counts the appends of a history by outcome, fail reason and
// late result, and the fence rejections. It is Valid if at least one append
// completed ok, and Unknown otherwise: a run where nothing succeeded cannot
// tell anything.
func checkStats(h *AppendHistory) StatsResult {
	res := StatsResult{FailReasons: map[string]int{}, LateResults: map[string]int{}}
	for i := range h.appends {
		a := &h.appends[i]
		if a.Op.Process.IsSideWriter() {
			res.SideWrites++
			continue
		}
		switch a.Type() {
		case history.Ok:
			res.Ok++
		case history.Fail:
			res.Fail++
			res.FailReasons[a.Comp.Reason]++
			if a.Comp.Fenced {
				res.FenceRejections++
				res.Rejected = ListRejection(res.Rejected, a.rejection(a.Op.Complete.Time))
			}
		default:
			res.Info++
		}
		if a.Late != nil {
			res.LateResults[string(a.Late.Type)]++
			if a.Late.Type == history.Fail && a.Late.Fenced {
				res.FenceRejections++
				res.Rejected = ListRejection(res.Rejected, a.rejection(a.LateAt))
			}
		}
	}
	total := res.Ok + res.Fail + res.Info
	if res.Ok == 0 {
		res.Valid = Unknown
		res.Message = fmt.Sprintf("no operation succeeded (%d appends): the run cannot tell", total)
		return res
	}
	res.Valid = Valid
	res.Message = fmt.Sprintf("%d appends: %d ok, %d fail, %d info; %d fence rejections", total, res.Ok, res.Fail, res.Info, res.FenceRejections)
	return res
}

// FailReasonsText writes fail counts by reason, most first (then by
// name): "12 lease-short, 9 not-acquired, 1 without a reason".
func FailReasonsText(reasons map[string]int) string {
	names := make([]string, 0, len(reasons))
	for r, n := range reasons {
		if n > 0 {
			names = append(names, r)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(reasons[b], reasons[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, r := range names {
		what := r
		if r == "" {
			what = "without a reason"
		}
		parts[i] = fmt.Sprintf("%d %s", reasons[r], what)
	}
	return strings.Join(parts, ", ")
}

// rejection is the append as a write refused by fencing at at.
func (a *AppendOp) rejection(at int64) FenceRejection {
	tok, _ := a.tokenOf()
	return FenceRejection{Process: a.Op.Process, Element: a.Element, Token: tok, At: at}
}
