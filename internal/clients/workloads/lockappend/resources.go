package lockappend

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// A lock-append run can write several resources in each critical section
// (--resource postgres,proxy). Each resource is then checked on its own, as
// a single-resource history: the history projected on it (each append's
// part for that resource: what it read there, how its write there ended;
// that resource's final read). The run's verdict composes them. Partial
// updates (a write refused by one resource and acknowledged by another) and
// the audit log are checked on the whole history.

// PartialUpdates are the critical sections whose writes some resources
// acknowledged and others refused by fencing: a stale holder stopped at one
// resource and not at another.
type PartialUpdates struct {
	Count    int             `json:"count"`
	Elements []PartialUpdate `json:"elements"`
}

// PartialUpdate is one partial update.
type PartialUpdate struct {
	Element    int64           `json:"element"`
	Process    history.Process `json:"process"`
	Token      int64           `json:"token"`
	AcceptedBy []string        `json:"accepted_by"`
	RefusedBy  []string        `json:"refused_by"`
	// At is when the operation completed (ns since the start).
	At int64 `json:"at_ns"`
}

// AuditLogResult holds the audit log (--audit-log) against what the fenced
// resources kept: entries the log has for writes that fencing refused are
// claims of writes that never happened. It is a finding; it never changes
// the verdict.
type AuditLogResult struct {
	// Entries is the number of entries in the log's final read.
	Entries int `json:"entries"`
	// RefusedButLogged counts entries whose write every resource, or some
	// resource, refused by fencing; Elements lists them.
	RefusedButLogged int              `json:"refused_but_logged"`
	Elements         []RefusedLogLine `json:"elements"`
	// Read is false when the history has no final read of the log.
	Read bool `json:"read"`
}

// RefusedLogLine is an audit log entry for a write that fencing refused.
type RefusedLogLine struct {
	Element   int64           `json:"element"`
	Process   history.Process `json:"process"`
	Token     int64           `json:"token"`
	RefusedBy []string        `json:"refused_by,omitempty"`
}

// ResourceNames are the resources a history names, in the order its
// appends list them (none in a single-resource history).
func ResourceNames(ops []history.Op) ([]string, error) { return resourceNames(ops) }

// Project is the single-resource history of resource r (first: the run's
// first resource), as the checkers check it.
func Project(ops []history.Op, r string, first bool) ([]history.Op, error) {
	return project(ops, r, first)
}

func resourceNames(ops []history.Op) ([]string, error) {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for i := range ops {
		o := &ops[i]
		switch o.F {
		case la.FAppend:
			if o.Complete == nil || len(o.Complete.Value) == 0 || !strings.Contains(string(o.Complete.Value), `"resources"`) {
				continue
			}
			var c la.Completion
			if err := o.Complete.Decode(&c); err != nil {
				return nil, checkers.BadOp(o, err)
			}
			for _, p := range c.Resources {
				add(p.Resource)
			}
		case la.FFinalRead:
			if o.Type() != history.Ok {
				continue
			}
			var v la.ReadValue
			if err := o.Complete.Decode(&v); err != nil {
				return nil, checkers.BadOp(o, err)
			}
			add(v.Resource)
		}
	}
	return names, nil
}

// project returns the single-resource history of resource r (the first
// resource of the run when first is true): each append with its part for r
// as its completion (and late result), its read phases of r, and r's final
// reads. An append with no parts (one that never completed, or the side
// writer's, which writes the first resource only) is kept as it is, the
// side writer's only in the first resource's history. The audit log's read
// is left out.
func project(ops []history.Op, r string, first bool) ([]history.Op, error) {
	out := make([]history.Op, 0, len(ops))
	for i := range ops {
		o := ops[i]
		switch o.F {
		case la.FAuditRead:
			continue
		case la.FFinalRead:
			if o.Type() == history.Ok {
				var v la.ReadValue
				if err := o.Complete.Decode(&v); err != nil {
					return nil, checkers.BadOp(&o, err)
				}
				if v.Resource != r {
					continue
				}
			} else if !first {
				continue
			}
		case la.FAppend:
			p, err := projectAppend(o, r)
			if err != nil {
				return nil, err
			}
			if p == nil {
				if !first {
					continue
				}
				p = &o
			}
			o = *p
		}
		out = append(out, o)
	}
	return out, nil
}

// projectAppend is an append's part for resource r, nil when the append
// has no parts (the side writer's) and so belongs to the first resource.
func projectAppend(o history.Op, r string) (*history.Op, error) {
	if o.Process.IsSideWriter() {
		return nil, nil
	}
	if o.Complete != nil && len(o.Complete.Value) > 0 {
		var c la.Completion
		if err := o.Complete.Decode(&c); err != nil {
			return nil, checkers.BadOp(&o, err)
		}
		if len(c.Resources) > 0 {
			typ, pc := part(o.Complete.Type, c, r)
			b, err := json.Marshal(pc)
			if err != nil {
				return nil, err
			}
			done := *o.Complete
			done.Type, done.Value = typ, b
			o.Complete = &done
		}
	}
	var phases []history.Event
	for _, e := range o.Phases {
		switch e.F {
		case la.PhaseRead:
			var v la.ReadValue
			if len(e.Value) > 0 && json.Unmarshal(e.Value, &v) == nil && v.Resource != "" && v.Resource != r {
				continue
			}
		case la.PhaseLate:
			var l la.Late
			if err := json.Unmarshal(e.Value, &l); err != nil {
				return nil, checkers.BadOp(&o, err)
			}
			if len(l.Completion.Resources) > 0 {
				l.Type, l.Completion = part(l.Type, l.Completion, r)
				b, err := json.Marshal(l)
				if err != nil {
					return nil, err
				}
				e.Value = b
			}
		}
		phases = append(phases, e)
	}
	o.Phases = phases
	return &o, nil
}

// part is a completion's part for resource r: its read and the outcome of
// its write there. A resource that was not written (the operation failed
// before its writes) has the operation's own outcome.
func part(t history.Type, c la.Completion, r string) (history.Type, la.Completion) {
	out := la.Completion{Element: c.Element, Token: c.Token, Reason: c.Reason, Error: c.Error}
	for _, p := range c.Resources {
		if p.Resource != r {
			continue
		}
		out.Read = p.Read
		if p.Type != "" {
			t = p.Type
			out.Rev, out.Reason, out.Error = p.Rev, p.Reason, p.Error
		}
	}
	return t, out
}

// checkResources checks each resource of a multi-resource history on its
// own and composes the results: the verdict and each checker's verdict
// compose over the resources, the lost elements and fence rejections add up
// (each lost element naming its resource), and Resources holds each one's
// result.
func checkResources(ops []history.Op, names []string, opts checkers.Options) (Result, error) {
	per := make(map[string]*Result, len(names))
	var all []Result
	for i, n := range names {
		pops, err := project(ops, n, i == 0)
		if err != nil {
			return Result{}, err
		}
		o := opts
		if o.VisualizationPath != "" && i > 0 {
			o.VisualizationPath = ""
		}
		r := checkOps(pops, o)
		for j := range r.LostUpdates.Elements {
			r.LostUpdates.Elements[j].Resource = n
		}
		for j := range r.Checkers.LostUpdates.Elements {
			r.Checkers.LostUpdates.Elements[j].Resource = n
		}
		per[n] = &r
		all = append(all, r)
	}
	out := composeResults(names, all)
	out.Resources = per
	return out, nil
}

// composeResults composes the results of parts of one history (its
// resources, its locks), named names: every checker's verdict over the
// parts, the lost elements of all (oldest acknowledgement first), the sums
// of acknowledged, lost and fence rejections, the first loss. The other
// fields are the first part's (the operations' counts among them: parts
// that are resources share their operations).
func composeResults(names []string, all []Result) Result {
	out := all[0]
	out.Checkers = composeCheckers(names, all)
	out.LostUpdates = checkers.LostUpdates{Elements: []checkers.LostElement{}}
	out.FenceRejections, out.FirstLostUpdateNS = 0, nil
	var vs []checkers.Validity
	for _, r := range all {
		vs = append(vs, r.Valid)
		out.LostUpdates.Acknowledged += r.LostUpdates.Acknowledged
		out.LostUpdates.Lost += r.LostUpdates.Lost
		out.LostUpdates.Elements = append(out.LostUpdates.Elements, r.LostUpdates.Elements...)
		out.FenceRejections += r.FenceRejections
		if f := r.FirstLostUpdateNS; f != nil && (out.FirstLostUpdateNS == nil || *f < *out.FirstLostUpdateNS) {
			out.FirstLostUpdateNS = f
		}
	}
	slices.SortStableFunc(out.LostUpdates.Elements, func(x, y checkers.LostElement) int {
		return int(min(max(x.Acknowledged-y.Acknowledged, -1), 1))
	})
	out.Valid = checkers.Compose(vs...)
	return out
}

// composeCheckers composes each checker's verdict over the resources; its
// message names each resource's.
func composeCheckers(names []string, rs []Result) Checkers {
	c := rs[0].Checkers
	join := func(get func(Checkers) checkers.Verdict) checkers.Verdict {
		var vs []checkers.Validity
		var msgs []string
		for i, r := range rs {
			v := get(r.Checkers)
			vs = append(vs, v.Valid)
			msgs = append(msgs, names[i]+": "+v.Message)
		}
		return checkers.Verdict{Valid: checkers.Compose(vs...), Message: strings.Join(msgs, "; ")}
	}
	c.Linearizable.Verdict = join(func(c Checkers) checkers.Verdict { return c.Linearizable.Verdict })
	c.LostUpdates.Verdict = join(func(c Checkers) checkers.Verdict { return c.LostUpdates.Verdict })
	c.TokenMonotonic.Verdict = join(func(c Checkers) checkers.Verdict { return c.TokenMonotonic.Verdict })
	c.Stats.Verdict = join(func(c Checkers) checkers.Verdict { return c.Stats.Verdict })
	return c
}

// checkPartial finds the partial updates of a multi-resource history.
func checkPartial(ops []history.Op) (*PartialUpdates, error) {
	res := &PartialUpdates{Elements: []PartialUpdate{}}
	for i := range ops {
		o := &ops[i]
		if o.F != la.FAppend || o.Complete == nil || len(o.Complete.Value) == 0 {
			continue
		}
		var c la.Completion
		if err := o.Complete.Decode(&c); err != nil {
			return nil, checkers.BadOp(o, err)
		}
		var acc, ref []string
		for _, p := range c.Resources {
			switch {
			case p.Type == history.Ok:
				acc = append(acc, p.Resource)
			case p.Reason == la.ReasonFenced:
				ref = append(ref, p.Resource)
			}
		}
		if len(acc) > 0 && len(ref) > 0 {
			res.Elements = append(res.Elements, PartialUpdate{Element: c.Element, Process: o.Process, Token: c.Token,
				AcceptedBy: acc, RefusedBy: ref, At: o.Complete.Time})
		}
	}
	res.Count = len(res.Elements)
	return res, nil
}

// checkAudit holds the audit log's final read against the appends'
// outcomes: an entry whose write a resource refused by fencing is a claim
// of a write that did not happen there.
func checkAudit(ops []history.Op) (*AuditLogResult, error) {
	var log *history.Op
	byElement := map[int64]*history.Op{}
	for i := range ops {
		o := &ops[i]
		switch o.F {
		case la.FAuditRead:
			if o.Type() == history.Ok {
				log = o
			}
		case la.FAppend:
			var inv la.Invoke
			if err := o.Invoke.Decode(&inv); err != nil {
				return nil, checkers.BadOp(o, err)
			}
			byElement[inv.Element] = o
		}
	}
	if log == nil {
		return nil, nil
	}
	res := &AuditLogResult{Read: true, Elements: []RefusedLogLine{}}
	var v la.AuditValue
	if err := log.Complete.Decode(&v); err != nil {
		return nil, checkers.BadOp(log, err)
	}
	res.Entries = len(v.Entries)
	for _, e := range v.Entries {
		o, ok := byElement[e.Element]
		if !ok || o.Complete == nil || len(o.Complete.Value) == 0 {
			continue
		}
		var c la.Completion
		if err := o.Complete.Decode(&c); err != nil {
			return nil, checkers.BadOp(o, err)
		}
		var refused []string
		if len(c.Resources) == 0 {
			if o.Complete.Type == history.Fail && c.Reason == la.ReasonFenced {
				refused = []string{""}
			}
		}
		for _, p := range c.Resources {
			if p.Reason == la.ReasonFenced {
				refused = append(refused, p.Resource)
			}
		}
		if len(refused) > 0 {
			line := RefusedLogLine{Element: e.Element, Process: e.Process, Token: e.Token}
			if refused[0] != "" {
				line.RefusedBy = refused
			}
			res.Elements = append(res.Elements, line)
		}
	}
	res.RefusedButLogged = len(res.Elements)
	return res, nil
}
