package lockappend

import (
	"context"
	"errors"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
)

// Execute runs one critical section: acquire, read every resource (fenced
// reads where a resource's fencing is token), check the lease, the
// failpoint, work, under --recheck ask the library whether it still holds
// the lock (and fail if not), log to the audit log (if any), write every resource's
// list with element appended (fenced as each resource's mode says),
// release. It never retries. It returns the completion type and value:
//
//   - Fail when nothing can have been written: the lock was not acquired, a
//     read failed or was fenced, the lease was too short, the library said
//     it no longer holds the lock (--recheck), the audit log
//     failed, or fencing refused every write;
//   - Info when a write was sent and its outcome is unknown;
//   - Ok when every write was acknowledged, or, with several resources,
//     when some were acknowledged and the others refused by fencing (a
//     partial update: Reason "partial", each outcome in Resources).
//
// With several resources every write is attempted, whatever the previous
// one's outcome, so that each resource's fencing is seen on its own. The
// lock is released before Execute returns, so that every phase of the
// operation is reported before its completion.
func Execute(ctx context.Context, c workloads.Clients, cfg workloads.Config, element int64, env workloads.Env) (history.Type, la.Completion) {
	done := la.Completion{Element: element}
	if len(c.Resources) == 0 {
		done.Reason, done.Error = "bad-op", "no resource to write"
		return history.Fail, done
	}
	actx, cancel := context.WithTimeout(ctx, cfg.AcquireTimeout)
	lease, err := c.Lock.Acquire(actx)
	cancel()
	if err != nil {
		done.Reason, done.Error = la.ReasonNotAcquired, err.Error()
		return history.Fail, done
	}
	done.Token = lease.Token()
	env.Report(la.PhaseAcquired, la.Acquired{Token: done.Token})
	defer func() {
		env.Report(la.PhaseReleasing, nil)
		r := la.Released{}
		if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
			r.Error = err.Error()
		}
		env.Report(la.PhaseReleased, r)
	}()
	if cfg.Recheck {
		// Stopped before the release above: no answer follows releasing.
		defer sampleBelief(ctx, lease, env)()
	}

	multi := len(c.Resources) > 1
	parts := make([]la.ResourcePart, len(c.Resources))
	reads := make([]resources.State, len(c.Resources))
	finish := func() la.Completion {
		done.Read = parts[0].Read
		done.Rev = parts[0].Rev
		if multi {
			done.Resources = parts
		}
		return done
	}
	for i, r := range c.Resources {
		parts[i].Resource = r.Name
		st, err := r.Store.Read(ctx, resources.Access{Lease: lease, Fencing: r.Fencing})
		switch {
		case errors.Is(err, resources.ErrFenced):
			// A newer holder has been at the resource: nothing will be
			// written anywhere.
			done.Reason, done.Error = la.ReasonFenced, err.Error()
			return history.Fail, finish()
		case err != nil:
			done.Reason, done.Error = la.ReasonReadFailed, err.Error()
			return history.Fail, finish()
		}
		if st.List == nil {
			st.List = []int64{} // read, and empty: never null in the history
		}
		reads[i], parts[i].Read = st, st.List
		rv := la.ReadValue{Value: st.List}
		if multi {
			rv.Resource = r.Name
		}
		env.Report(la.PhaseRead, rv)
	}

	left := lease.Remaining()
	if env.Skew != nil {
		left -= env.Skew()
	}
	ok := left > cfg.Margin
	env.Report(la.PhaseChecked, la.Checked{RemainingMS: left.Milliseconds(), OK: ok})
	if !ok {
		done.Reason = la.ReasonLeaseShort
		return history.Fail, finish()
	}
	// A fault aimed at the critical section is in place once this returns.
	if env.Failpoint != nil {
		env.Failpoint(ctx, done.Token)
	}

	if err := workloads.DoWork(ctx, cfg); err != nil {
		done.Reason, done.Error = "cancelled", err.Error()
		return history.Fail, finish()
	}
	if cfg.Recheck {
		if write, why := recheck(ctx, lease, env); !write {
			done.Reason, done.Error = la.ReasonNotHeld, why
			return history.Fail, finish()
		}
	}

	if c.Audit != nil {
		e := resources.AuditEntry{Process: int64(env.Process), Token: done.Token, Element: element}
		a := la.Audited{Token: done.Token, Element: element}
		if err := c.Audit.Append(ctx, e); err != nil {
			a.Error = err.Error()
			env.Report(la.PhaseAudited, a)
			done.Reason, done.Error = la.ReasonAuditFailed, err.Error()
			return history.Fail, finish()
		}
		env.Report(la.PhaseAudited, a)
	}

	env.Report(la.PhaseWriteSent, nil)
	for i, r := range c.Resources {
		written := append(append(make([]int64, 0, len(parts[i].Read)+1), parts[i].Read...), element)
		rev, err := r.Store.Write(ctx, resources.Access{Lease: lease, Fencing: r.Fencing}, reads[i], written)
		switch {
		case errors.Is(err, resources.ErrFenced):
			parts[i].Type, parts[i].Reason, parts[i].Error = history.Fail, la.ReasonFenced, err.Error()
		case err != nil:
			parts[i].Type, parts[i].Reason, parts[i].Error = history.Info, "write-unknown", err.Error()
		default:
			parts[i].Type, parts[i].Rev = history.Ok, rev
		}
	}
	return outcome(parts), completion(finish(), parts)
}

// outcome composes the writes' outcomes: info if any is unknown, ok if
// any was acknowledged, else fail.
func outcome(parts []la.ResourcePart) history.Type {
	t := history.Fail
	for _, p := range parts {
		switch p.Type {
		case history.Info:
			return history.Info
		case history.Ok:
			t = history.Ok
		}
	}
	return t
}

// completion sets the completion's reason from the writes' outcomes.
func completion(done la.Completion, parts []la.ResourcePart) la.Completion {
	var acked, fenced int
	for _, p := range parts {
		switch {
		case p.Type == history.Ok:
			acked++
		case p.Reason == la.ReasonFenced:
			fenced++
		}
	}
	for _, p := range parts {
		if p.Type != history.Ok {
			done.Reason, done.Error = p.Reason, p.Error
			break
		}
	}
	if acked > 0 && fenced > 0 && acked+fenced == len(parts) {
		done.Reason = la.ReasonPartial
	}
	return done
}
