package checkers

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/internal/history"
)

// Options tune the checkers.
type Options struct {
	// Timeout bounds Porcupine's search; 0 means no bound. A search that
	// runs out gives Unknown.
	Timeout time.Duration
	// MemoryBudget bounds, in bytes, the memory the process holds while
	// a check runs (Porcupine's search can outgrow any machine); 0 means
	// no bound. The memory is the Go runtime's, heap and all it maps less
	// what it returned to the system, for the whole process (checks that
	// run at once share it), measured every 50 ms (5 ms near the budget).
	// When it comes within a reserve of the budget (1/16 of it, at most
	// 256 MiB) the search stops and the verdict is Unknown, never Valid
	// nor Invalid, saying "memory budget B exceeded (peak P) after
	// checking N of M operations". During the check the runtime's soft
	// memory limit is lowered to that point, and restored after.
	// DefaultMemoryBudget is the CLI's default.
	MemoryBudget uint64
	// VisualizationPath, when not empty, is the file where the
	// linearizability checker writes Porcupine's visualization of an
	// illegal history; VisualizationName is the name results report for it
	// (default: the path's base name), for a file written aside and moved
	// into place later.
	VisualizationPath string
	VisualizationName string

	// Tests only: memSample replaces the measure of the process's memory,
	// and tripAfter (> 0) exceeds the budget at that many model steps.
	memSample func() uint64
	tripAfter int64
}

func (o Options) visualizationName() string {
	if o.VisualizationName != "" {
		return o.VisualizationName
	}
	return filepath.Base(o.VisualizationPath)
}

// Checker names, as results.json keys them.
const (
	NameLinearizable   = "linearizable"
	NameLostUpdates    = "lost-updates"
	NameTokenMonotonic = "token-monotonic"
	NameOverlap        = "overlap"
	NameStats          = "stats"
)

// LockAppendCheckers holds each checker's result under its results.json
// name.
type LockAppendCheckers struct {
	Linearizable   LinearizableResult `json:"linearizable"`
	LostUpdates    LostUpdatesResult  `json:"lost-updates"`
	TokenMonotonic TokensResult       `json:"token-monotonic"`
	Overlap        OverlapResult      `json:"overlap"`
	Stats          StatsResult        `json:"stats"`
}

// LockAppendResult is the verdict on a lock-append history; json.Marshal of
// it is results.json's checker part:
//
//	{"valid": true|false|"unknown",
//	 "checkers": {"linearizable": {"valid": ...}, "lost-updates": {...}, ...},
//	 "lost_updates": {"acknowledged": N, "lost": M, "elements": [...]},
//	 "fence_rejections": K, "overlaps": O}
//
// Error is set (and present in JSON) only when the history could not be
// read at all.
type LockAppendResult struct {
	// Valid composes linearizable, lost-updates, token-monotonic and
	// stats; overlap is informational and never makes a run invalid.
	Valid    Validity           `json:"valid"`
	Error    string             `json:"error,omitempty"`
	Checkers LockAppendCheckers `json:"checkers"`
	// LostUpdates, FenceRejections and Overlaps repeat the headline figures
	// of the lost-updates, stats and overlap checkers.
	LostUpdates     LostUpdates `json:"lost_updates"`
	FenceRejections int         `json:"fence_rejections"`
	Overlaps        int         `json:"overlaps"`
	// FirstLostUpdateNS is when the first acknowledged update was
	// destroyed (the overwriting write's acknowledgement, ns since the
	// start), if any was.
	FirstLostUpdateNS *int64 `json:"first_lost_update_ns,omitempty"`
	// Resources holds each resource's own result when the run wrote more
	// than one; the fields above then compose them (see checkResources).
	Resources map[string]*LockAppendResult `json:"resources,omitempty"`
	// Locks holds each lock's own result when the run had several
	// (--locks, by LockName); the fields above then compose them (see
	// checkLocks).
	Locks map[string]*LockAppendResult `json:"locks,omitempty"`
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
// it wraps ErrBadHistory (it could not be read) or ErrAssumption (it breaks
// an assumption of the checkers). A result read back from JSON has none.
func (r *LockAppendResult) Err() error { return r.err }

// CheckLockAppend runs every lock-append checker on a history as recorded.
// Each checker is protected: one that panics gives Unknown with the panic in
// its Error, and the others still run. A history that does not pair (see
// history.Pair) or whose values do not decode gives Unknown everywhere, with
// the error.
//
// A history of a run with several locks (--locks) is checked lock by lock
// (checkLocks); a history of several resources, resource by resource
// (checkResources), and for partial updates; a history with an audit log's
// final read, against the log.
func CheckLockAppend(events []history.Event, opts Options) LockAppendResult {
	ops, err := history.Pair(events)
	if err != nil {
		return failed(fmt.Errorf("checkers: %w: %w", ErrBadHistory, err))
	}
	if err := checkLockAppendAssumptions(ops); err != nil {
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
func checkPaired(ops []history.Op, opts Options) LockAppendResult {
	names, err := resourceNames(ops)
	if err != nil {
		return failed(err)
	}
	var res LockAppendResult
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
func checkOps(ops []history.Op, opts Options) LockAppendResult {
	h, err := parseLockAppend(ops)
	if err != nil {
		return failed(err)
	}
	var c LockAppendCheckers
	c.Linearizable = Protect(NameLinearizable, func() LinearizableResult { return checkLinearizable(h, opts) })
	c.LostUpdates = Protect(NameLostUpdates, func() LostUpdatesResult { return checkLostUpdates(h) })
	c.TokenMonotonic = Protect(NameTokenMonotonic, func() TokensResult { return checkTokens(h) })
	c.Overlap = Protect(NameOverlap, func() OverlapResult { return checkOverlap(h) })
	c.Stats = Protect(NameStats, func() StatsResult { return checkStats(h) })
	return compose(c)
}

// compose fills a LockAppendResult from its checkers' results.
func compose(c LockAppendCheckers) LockAppendResult {
	lost := c.LostUpdates.LostUpdates
	if lost.Elements == nil {
		lost.Elements = []LostElement{}
	}
	return LockAppendResult{
		Valid:             Compose(c.Linearizable.Valid, c.LostUpdates.Valid, c.TokenMonotonic.Valid, c.Stats.Valid),
		Checkers:          c,
		LostUpdates:       lost,
		FenceRejections:   c.Stats.FenceRejections,
		Overlaps:          c.Overlap.Overlaps,
		FirstLostUpdateNS: c.LostUpdates.FirstLostNS,
	}
}

// failed is the result for a history the checkers cannot read, or that
// breaks one of their assumptions.
func failed(err error) LockAppendResult {
	v := unknown(err)
	if errors.Is(err, ErrAssumption) {
		v = assumptionBroken(err)
	}
	r := compose(LockAppendCheckers{
		Linearizable:   LinearizableResult{Verdict: v},
		LostUpdates:    LostUpdatesResult{Verdict: v},
		TokenMonotonic: TokensResult{Verdict: v},
		Overlap:        OverlapResult{Verdict: v},
		Stats:          StatsResult{Verdict: v, FailReasons: map[string]int{}, LateResults: map[string]int{}},
	})
	r.Error, r.err = err.Error(), err
	return r
}

// Verdict is r.Valid (store.WorkloadResult).
func (r *LockAppendResult) Verdict() Validity { return r.Valid }

// SetVerdict sets r.Valid (store.WorkloadResult).
func (r *LockAppendResult) SetVerdict(v Validity) { r.Valid = v }
