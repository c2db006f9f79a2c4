package lockappend

import (
	"fmt"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Checkers holds each checker's result under its results.json
// name.
type Checkers struct {
	Linearizable   checkers.LinearizableResult `json:"linearizable"`
	LostUpdates    checkers.LostUpdatesResult  `json:"lost-updates"`
	TokenMonotonic checkers.TokensResult       `json:"token-monotonic"`
	Overlap        checkers.OverlapResult      `json:"overlap"`
	Stats          checkers.StatsResult        `json:"stats"`
}

// Result is the verdict on a lock-append history; json.Marshal of
// it is results.json's checker part:
//
//	{"valid": true|false|"unknown",
//	 "checkers": {"linearizable": {"valid": ...}, "lost-updates": {...}, ...},
//	 "lost_updates": {"acknowledged": N, "lost": M, "elements": [...]},
//	 "fence_rejections": K, "overlaps": O}
//
// Error is set (and present in JSON) only when the history could not be
// read at all.
type Result struct {
	// Valid composes linearizable, lost-updates, token-monotonic and
	// stats; overlap is informational and never makes a run invalid.
	Valid    checkers.Validity `json:"valid"`
	Error    string            `json:"error,omitempty"`
	Checkers Checkers          `json:"checkers"`
	// LostUpdates, FenceRejections and Overlaps repeat the headline figures
	// of the lost-updates, stats and overlap checkers.
	LostUpdates     checkers.LostUpdates `json:"lost_updates"`
	FenceRejections int                  `json:"fence_rejections"`
	Overlaps        int                  `json:"overlaps"`
	// FirstLostUpdateNS is when the first acknowledged update was
	// destroyed (the overwriting write's acknowledgement, ns since the
	// start), if any was.
	FirstLostUpdateNS *int64 `json:"first_lost_update_ns,omitempty"`
	// Resources holds each resource's own result when the run wrote more
	// than one; the fields above then compose them (see checkResources).
	Resources map[string]*Result `json:"resources,omitempty"`
	// Locks holds each lock's own result when the run had several
	// (--locks, by LockName); the fields above then compose them (see
	// checkLocks).
	Locks map[string]*Result `json:"locks,omitempty"`
	// PartialUpdates are the critical sections that some resources
	// acknowledged and others refused by fencing (runs with several
	// resources).
	PartialUpdates *PartialUpdates `json:"partial_updates,omitempty"`
	// AuditLog holds the audit log against the fenced resources' outcomes
	// (runs with --audit-log): a finding, never part of the verdict.
	AuditLog *AuditLogResult `json:"audit_log,omitempty"`

	err error
}

// Err is why the checkers could not judge the history, nil when they could:
// it wraps checkers.ErrBadHistory (it could not be read) or
// checkers.ErrAssumption (it breaks an assumption of the checkers). A
// result read back from JSON has none.
func (r *Result) Err() error { return r.err }

// Check runs every lock-append checker on a history as recorded. Each
// checker is protected: one that panics gives Unknown with the panic in its
// Error, and the others still run. A history that does not pair (see
// history.Pair) or whose values do not decode gives Unknown everywhere, with
// the error.
//
// A history of a run with several locks (--locks) is checked lock by lock
// (checkLocks); a history of several resources, resource by resource
// (checkResources), and for partial updates; a history with an audit log's
// final read, against the log.
func Check(events []history.Event, opts checkers.Options) Result {
	ops, err := history.Pair(events)
	if err != nil {
		return failed(fmt.Errorf("checkers: %w: %w", checkers.ErrBadHistory, err))
	}
	if err := checkAssumptions(ops); err != nil {
		return failed(err)
	}
	of, locks, err := opLocks(ops)
	if err != nil {
		return failed(err)
	}
	if len(locks) > 1 {
		res, err := checkLocks(ops, of, locks, opts)
		if err != nil {
			return failed(err)
		}
		return res
	}
	return checkPaired(ops, opts)
}

// checkPaired checks the paired operations of one lock.
func checkPaired(ops []history.Op, opts checkers.Options) Result {
	names, err := resourceNames(ops)
	if err != nil {
		return failed(err)
	}
	var res Result
	if len(names) > 1 {
		if res, err = checkResources(ops, names, opts); err != nil {
			return failed(err)
		}
		if res.PartialUpdates, err = checkPartial(ops); err != nil {
			return failed(err)
		}
	} else {
		res = checkOps(ops, opts)
	}
	if res.AuditLog, err = checkAudit(ops); err != nil {
		return failed(err)
	}
	return res
}

// checkOps runs every checker on a single-resource history.
func checkOps(ops []history.Op, opts checkers.Options) Result {
	h, err := ParseHistory(ops)
	if err != nil {
		return failed(err)
	}
	var c Checkers
	c.Linearizable = checkers.Protect(checkers.NameLinearizable, func() checkers.LinearizableResult { return h.Linearizable(opts) })
	c.LostUpdates = checkers.Protect(checkers.NameLostUpdates, func() checkers.LostUpdatesResult { return h.LostUpdates() })
	c.TokenMonotonic = checkers.Protect(checkers.NameTokenMonotonic, func() checkers.TokensResult { return h.Tokens() })
	c.Overlap = checkers.Protect(checkers.NameOverlap, func() checkers.OverlapResult { return h.Overlap() })
	c.Stats = checkers.Protect(checkers.NameStats, func() checkers.StatsResult { return h.Stats() })
	return compose(c)
}

// compose fills a Result from its checkers' results.
func compose(c Checkers) Result {
	lost := c.LostUpdates.LostUpdates
	if lost.Elements == nil {
		lost.Elements = []checkers.LostElement{}
	}
	return Result{
		Valid:             checkers.Compose(c.Linearizable.Valid, c.LostUpdates.Valid, c.TokenMonotonic.Valid, c.Stats.Valid),
		Checkers:          c,
		LostUpdates:       lost,
		FenceRejections:   c.Stats.FenceRejections,
		Overlaps:          c.Overlap.Overlaps,
		FirstLostUpdateNS: c.LostUpdates.FirstLostNS,
	}
}

// failed is the result for a history the checkers cannot read, or that
// breaks one of their assumptions.
func failed(err error) Result {
	v := checkers.CannotCheck(err)
	r := compose(Checkers{
		Linearizable:   checkers.LinearizableResult{Verdict: v},
		LostUpdates:    checkers.LostUpdatesResult{Verdict: v},
		TokenMonotonic: checkers.TokensResult{Verdict: v},
		Overlap:        checkers.OverlapResult{Verdict: v},
		Stats:          checkers.StatsResult{Verdict: v, FailReasons: map[string]int{}, LateResults: map[string]int{}},
	})
	r.Error, r.err = err.Error(), err
	return r
}

// Verdict is r.Valid (store.WorkloadResult).
func (r *Result) Verdict() checkers.Validity { return r.Valid }

// SetVerdict sets r.Valid (store.WorkloadResult).
func (r *Result) SetVerdict(v checkers.Validity) { r.Valid = v }

// Summary is the lock-append result's figures (store.WorkloadResult).
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
	for _, v := range []*checkers.Verdict{&k.Linearizable.Verdict, &k.LostUpdates.Verdict, &k.TokenMonotonic.Verdict, &k.Overlap.Verdict, &k.Stats.Verdict} {
		v.CutText(cut)
	}
	return &c
}
