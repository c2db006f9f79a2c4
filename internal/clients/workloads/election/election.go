// Package election is the leader-election workload: every client
// campaigns for leadership with the lock service's own election recipe
// (targets.Elector); the leader does leader work, appending a few entries
// {term, leader, seq} to a log (the run's resource), then resigns. A deposed
// leader that was paused or partitioned keeps acting as leader: its entry
// of an old term can land after an entry of a newer term (the log forks),
// or erase it (a lost entry). With --fencing term the log refuses an entry
// whose term is lower than the highest it accepted, as a Raft follower
// refuses an old term.
//
// An entry's element is unique in the run; its term is the leadership's
// term (the Lease's Token), its leader the history process, its seq its
// place in the leadership (1, 2, ...). The log is the resource's list of
// elements, appended by read-modify-write as lock-append does.
package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// Functions (the f of history events). The final reads are lock-append's
// (la.FFinalRead, value la.ReadValue).
const (
	// FLead is one leadership: campaign, leader work, resign. Invoke
	// value: Invoke. Completion value: Completion. Ok: elected, and every
	// entry was acknowledged. Fail: no entry can have been written (not
	// elected, or the first read, check or write failed for certain).
	// Info: an entry's outcome is unknown. Each entry's own outcome is in
	// its PhaseWritten.
	FLead = "lead"
)

// Phases of a leadership, reported by the worker as they happen.
const (
	// PhaseElected: the client leads. Value: Elected.
	PhaseElected = "elected"
	// PhaseEntry: the leader starts entry seq. Value: Entry.
	PhaseEntry = "entry"
	// PhaseRead: the leader read the log for the entry. Value:
	// la.ReadValue.
	PhaseRead = la.PhaseRead
	// PhaseChecked: the leader checked that its leadership has time left.
	// Value: la.Checked.
	PhaseChecked = la.PhaseChecked
	// PhaseWriteSent: the entry's write is about to leave. Value: none.
	PhaseWriteSent = la.PhaseWriteSent
	// PhaseWritten: the log answered the entry's write. Value: Written.
	PhaseWritten = "written"
	// PhaseResigning: the leader starts resigning; from here on it no
	// longer believes it leads. Value: none.
	PhaseResigning = "resigning"
	// PhaseResigned: the leadership was given up. Value: la.Released.
	PhaseResigned = "resigned"
)

// Fail reasons of a leadership (Completion.Reason), besides lock-append's
// la.ReasonReadFailed, la.ReasonLeaseShort and la.ReasonFenced.
const (
	// ReasonNotElected: the campaign did not make the client leader in
	// time.
	ReasonNotElected = "not-elected"
)

// Invoke is the value of a lead invocation: the elements of the entries it
// appends if it leads, in order (entry seq i+1 is Elements[i]).
type Invoke struct {
	Elements []int64 `json:"elements"`
}

// Elected is the value of the elected phase.
type Elected struct {
	Term int64 `json:"term"`
}

// Entry is the value of the entry phase: one log entry {term, leader, seq}
// (the leader is the event's process) and its element.
type Entry struct {
	Term    int64 `json:"term"`
	Seq     int   `json:"seq"`
	Element int64 `json:"element"`
}

// Written is the value of the written phase: the log's answer to an
// entry's write. Type is ok (acknowledged), fail (refused: Reason fenced)
// or info (unknown).
type Written struct {
	Element int64        `json:"element"`
	Type    history.Type `json:"type"`
	Rev     int64        `json:"rev,omitempty"`
	Reason  string       `json:"reason,omitempty"`
	Error   string       `json:"error,omitempty"`
}

// Completion is the value of a lead completion.
type Completion struct {
	// Term is the leadership's term, 0 if not elected.
	Term int64 `json:"term,omitempty"`
	// Written is the number of entries the log acknowledged.
	Written int `json:"written"`
	// Reason says why a fail failed or why an info is unknown; Error is
	// the underlying error text.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// Elements is the invocation's, for completions the harness makes
	// (Unknown).
	Elements []int64 `json:"elements,omitempty"`
}

// logAccess is how a leader reaches the log: term fencing is the
// resource's token fencing with the term as the token.
func logAccess(lease targets.Lease, f targets.Fencing) resources.Access {
	return resources.Access{Lease: lease, Fencing: f.Applied()}
}

// Lead runs one leadership: campaign, then for each element an entry (read
// the log, check the leadership's time left, the failpoint before the first
// entry's work, work, write the log with the element appended), then
// resign. It never retries. A leader stops its leader work at the first
// entry that is not acknowledged: a refused entry means it was deposed, an
// unknown one leaves it unsure. It returns the completion type and value:
// fail when no entry can have been written, info when the last entry's
// outcome is unknown, ok when every entry it sent was acknowledged or
// refused after at least one acknowledged (its Reason then says why it
// stopped).
func Lead(ctx context.Context, c workloads.Clients, cfg workloads.Config, elements []int64, env workloads.Env) (history.Type, Completion) {
	var done Completion
	el, ok := c.Lock.(targets.Elector)
	if !ok {
		done.Reason, done.Error = "bad-op", "the target's client has no election recipe"
		return history.Fail, done
	}
	if len(c.Resources) == 0 || len(elements) == 0 {
		done.Reason, done.Error = "bad-op", "no log or no entries"
		return history.Fail, done
	}
	log := c.Resources[0]
	actx, cancel := context.WithTimeout(ctx, cfg.AcquireTimeout)
	lease, err := el.Campaign(actx, fmt.Sprintf("p%d", env.Process))
	cancel()
	if err != nil {
		done.Reason, done.Error = ReasonNotElected, err.Error()
		return history.Fail, done
	}
	done.Term = lease.Token()
	env.Report(PhaseElected, Elected{Term: done.Term})
	defer func() {
		env.Report(PhaseResigning, nil)
		r := la.Released{}
		if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
			r.Error = err.Error()
		}
		env.Report(PhaseResigned, r)
	}()
	// stop is the outcome when entry i ends the leader work with a fail
	// of the given reason: fail if nothing was written yet, else ok (the
	// acknowledged entries stand).
	stop := func(reason, msg string) (history.Type, Completion) {
		done.Reason, done.Error = reason, msg
		if done.Written == 0 {
			return history.Fail, done
		}
		return history.Ok, done
	}
	access := logAccess(lease, log.Fencing)
	for i, element := range elements {
		env.Report(PhaseEntry, Entry{Term: done.Term, Seq: i + 1, Element: element})
		st, err := log.Store.Read(ctx, access)
		switch {
		case errors.Is(err, resources.ErrFenced):
			return stop(la.ReasonFenced, err.Error())
		case err != nil:
			return stop(la.ReasonReadFailed, err.Error())
		}
		if st.List == nil {
			st.List = []int64{}
		}
		env.Report(PhaseRead, la.ReadValue{Value: st.List})
		left := lease.Remaining()
		if env.Skew != nil {
			left -= env.Skew()
		}
		ok := left > cfg.Margin
		env.Report(PhaseChecked, la.Checked{RemainingMS: left.Milliseconds(), OK: ok})
		if !ok {
			return stop(la.ReasonLeaseShort, "")
		}
		// A fault aimed at the leader's work is in place once this
		// returns.
		if i == 0 && env.Failpoint != nil {
			env.Failpoint(ctx, done.Term)
		}
		if err := workloads.DoWork(ctx, cfg); err != nil {
			return stop("cancelled", err.Error())
		}
		env.Report(PhaseWriteSent, nil)
		written := append(append(make([]int64, 0, len(st.List)+1), st.List...), element)
		rev, err := log.Store.Write(ctx, access, st, written)
		w := Written{Element: element, Type: history.Ok, Rev: rev}
		switch {
		case errors.Is(err, resources.ErrFenced):
			w.Type, w.Reason, w.Error = history.Fail, la.ReasonFenced, err.Error()
		case err != nil:
			w.Type, w.Reason, w.Error = history.Info, "write-unknown", err.Error()
		}
		env.Report(PhaseWritten, w)
		switch w.Type {
		case history.Info:
			done.Reason, done.Error = w.Reason, w.Error
			return history.Info, done
		case history.Fail:
			return stop(w.Reason, w.Error)
		}
		done.Written++
	}
	return history.Ok, done
}
