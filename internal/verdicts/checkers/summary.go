package checkers

import "time"

// Summary is a workload's result in the few figures every consumer of
// results outside the workload uses (matrix, trends, JUnit, rerun, sweep,
// the index of runs): one type for every workload, so that none of them
// needs to know a workload's own result type. A workload without a figure
// leaves it zero (the register workload loses no updates).
//
// In results.json the figures sit at fixed JSON names, which every
// workload's result keeps: "valid", "lost_updates" (acknowledged, lost,
// elements), "fence_rejections", "first_lost_update_ns" and
// "checkers"."stats" (ok, fail, info); store.RawResult reads them back from
// there.
type Summary struct {
	Verdict Validity
	// Updates says whether the workload counts acknowledged and lost
	// updates at all (the register workload does not: its figures below
	// are zero and mean nothing).
	Updates bool
	// Acknowledged counts the updates the store acknowledged; Lost those
	// of them missing at the end; Losses lists lost ones (the first
	// MaxViolations or so: Lost may be more).
	Acknowledged, Lost int
	Losses             []LostElement
	// FenceRejections counts writes refused by fencing.
	FenceRejections int
	// FirstLostNS is when the first lost update was destroyed (ns since
	// the start); nil when none was.
	FirstLostNS *int64
	// Ops counts the operations by outcome; nil when the result does not
	// say (one that could not be checked).
	Ops *OpCounts
}

// OpCounts counts a run's operations by outcome.
type OpCounts struct {
	OK, Fail, Info int
}

// Throughput is the acknowledged operations per second over the time the
// clients ran (0 when s has no operation counts or d is not positive).
func (s Summary) Throughput(d time.Duration) float64 {
	if s.Ops == nil || d <= 0 {
		return 0
	}
	return float64(s.Ops.OK) / d.Seconds()
}

// UpdatesSummary is the figures of a result whose workload appends to lists
// and can lose updates (lock-append's, election's): its verdict, the
// acknowledged and lost updates, the fence rejections, the first loss and
// the operations by outcome.
func UpdatesSummary(v Validity, lu LostUpdates, fenceRejections int, firstLostNS *int64, st StatsResult) Summary {
	return Summary{Verdict: v, Updates: true, Acknowledged: lu.Acknowledged, Lost: lu.Lost,
		Losses: lu.Elements, FenceRejections: fenceRejections, FirstLostNS: firstLostNS,
		Ops: &OpCounts{OK: st.Ok, Fail: st.Fail, Info: st.Info}}
}

// CutText cuts v's message and error by cut.
func (v *Verdict) CutText(cut func(string) string) {
	v.Message, v.Error = cut(v.Message), cut(v.Error)
}
