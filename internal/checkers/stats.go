package checkers

import (
	"fmt"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
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
	// SideWrites counts the side writer's batches (--side-writer), which
	// the counts above leave out.
	SideWrites int `json:"side_writes,omitempty"`
}

// CheckStats counts the appends of a history by outcome, fail reason and
// late result, and the fence rejections. It is Valid if at least one append
// completed ok, and Unknown otherwise: a run where nothing succeeded cannot
// tell anything.
func CheckStats(ops []history.Op) StatsResult {
	h, err := ParseAppendHistory(ops)
	if err != nil {
		return StatsResult{Verdict: unknown(err), FailReasons: map[string]int{}, LateResults: map[string]int{}}
	}
	return checkStats(h)
}

func checkStats(h *AppendHistory) StatsResult {
	res := StatsResult{FailReasons: map[string]int{}, LateResults: map[string]int{}}
	for i := range h.appends {
		a := &h.appends[i]
		if a.op.Process.IsSideWriter() {
			res.SideWrites++
			continue
		}
		switch a.Type() {
		case history.Ok:
			res.Ok++
		case history.Fail:
			res.Fail++
			res.FailReasons[a.comp.Reason]++
			if a.comp.Reason == lockappend.ReasonFenced {
				res.FenceRejections++
			}
		default:
			res.Info++
		}
		if a.late != nil {
			res.LateResults[string(a.late.Type)]++
			if a.late.Type == history.Fail && a.late.Completion.Reason == lockappend.ReasonFenced {
				res.FenceRejections++
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
