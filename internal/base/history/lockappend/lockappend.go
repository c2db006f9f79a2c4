// Package lockappend is the history vocabulary of the lock-append workload
// (workloads/lockappend): the f names, phases and value shapes of its
// events, which the workload, its view, the scenarios and sweep read (the
// shared checkers and report read what the workload decodes from them). Each client repeats a
// critical section that acquires a lock, reads a list, checks its lease,
// works, and writes the list back with its own unique element appended,
// carrying its fencing token. A stale lock holder's write can replace a
// list that already holds another client's acknowledged element: a lost
// update.
package lockappend

import (
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Functions (the f of history events).
const (
	// FAppend is one critical section. Invoke value: Invoke. Completion
	// value: Completion. Ok: the write was acknowledged. Fail: certainly not
	// written (lock not acquired, lease too short, write fenced). Info: the
	// write's outcome is unknown.
	FAppend = "append"
	// FFinalRead is the harness's read of the list after healing, at the end
	// of a run. Invoke value: none. Ok value: ReadValue.
	FFinalRead = "final-read"
)

// Phases of a critical section, reported by the worker as they happen
// (history events of type phase).
const (
	// PhaseAcquired: the lock is held (history.PhaseAcquired, which the
	// liveness checker reads). Value: Acquired.
	PhaseAcquired = history.PhaseAcquired
	// PhaseRead: the list was read. Value: ReadValue.
	PhaseRead = "read"
	// PhaseChecked: the client checked its lease. Value: Checked.
	PhaseChecked = "checked"
	// PhaseAudited: the holder appended its entry to the audit log
	// (--audit-log), before its write. Value: Audited.
	PhaseAudited = "audited"
	// PhaseWriteSent: the write request is about to leave (with several
	// resources, the first). Value: none.
	PhaseWriteSent = "write-sent"
	// PhaseHeld: under --recheck, the holder's lock library answered
	// whether it still holds the lock (targets.Believer): every
	// BeliefEvery while the holder believes it holds it (a paused holder
	// answers when it resumes), and once more right before its write (the
	// careful holder: Held.Recheck). Value: Held.
	PhaseHeld = "held"
	// PhaseReleasing: the client starts giving the lock up; from here on it
	// no longer believes it holds it. Value: none.
	PhaseReleasing = "releasing"
	// PhaseReleased: the lock was given up. Value: Released.
	PhaseReleased = "released"
	// PhaseLate is recorded by the harness, not the worker
	// (history.PhaseLate): the completion of an operation that the harness
	// had already recorded as info because it timed out. Value: Late.
	PhaseLate = history.PhaseLate
)

// Fail reasons (Completion.Reason of a fail).
const (
	ReasonNotAcquired = "not-acquired"
	ReasonReadFailed  = "read-failed"
	ReasonLeaseShort  = "lease-short"
	ReasonFenced      = "fenced"
	// ReasonAuditFailed: the audit log's append failed; nothing was
	// written to the resources.
	ReasonAuditFailed = "audit-failed"
	// ReasonNotHeld: under --recheck, the holder's library said, right
	// before the write, that it no longer holds the lock (or did not
	// answer): nothing was written.
	ReasonNotHeld = "not-held"
	// ReasonPartial: with several resources, some writes were refused by
	// fencing and the others acknowledged (the completion is ok; each
	// resource's outcome is in Completion.Resources).
	ReasonPartial = "partial"
)

// Invoke is the value of an append invocation.
type Invoke struct {
	Element int64 `json:"element"`
	// Lock is the lock the operation takes, in a run of several locks
	// (--locks; 0, left out, in a run of one): each lock protects lists
	// of its own, and the checkers check each lock's operations apart.
	Lock int `json:"lock,omitempty"`
}

// Acquired is the value of the acquired phase.
type Acquired struct {
	Token int64 `json:"token"`
}

// ReadValue is a read list: the value of the read phase and of a final read.
// Resource names the resource read in a run with several (empty with one).
type ReadValue struct {
	Value    []int64 `json:"value"`
	Resource string  `json:"resource,omitempty"`
	// Lock is the lock whose list this is, in a run of several locks.
	Lock int `json:"lock,omitempty"`
}

// Checked is the value of the checked phase: the lease time the client
// believed it had left, and whether that was above its safety margin.
type Checked struct {
	RemainingMS int64 `json:"remaining_ms"`
	OK          bool  `json:"ok"`
}

// BeliefEvery is how often a holder's library is asked whether it still
// holds the lock under --recheck.
const BeliefEvery = 50 * time.Millisecond

// Held is the value of the held phase: the library's answer (Held), or
// no answer (Error: the question failed; Unknown: the library cannot be
// asked, and the belief check is unknown). Recheck marks the careful
// holder's question right before its write. AnsweredMono is when the
// library answered, on the kernel's monotonic clock
// (history.KernelMonotonic): the phase itself is timed when the harness
// hears it, which can be long after the answer (the holder paused, or
// starved of CPU, between the answer and its message). AskedMono is when
// the question was put, on the same clock: the library formed its answer
// no sooner, and a question to a client program answered just before
// the holder was paused is read, and stamped answered, only after it
// resumes.
type Held struct {
	Held         bool   `json:"held"`
	Error        string `json:"error,omitempty"`
	Unknown      bool   `json:"unknown,omitempty"`
	Recheck      bool   `json:"recheck,omitempty"`
	AskedMono    int64  `json:"asked_mono_ns,omitempty"`
	AnsweredMono int64  `json:"answered_mono_ns,omitempty"`
}

// Released is the value of the released phase.
type Released struct {
	Error string `json:"error,omitempty"`
}

// Completion is the value of an append completion.
type Completion struct {
	Element int64 `json:"element"`
	// Token is the fencing token of the grant, 0 if the lock was not
	// acquired.
	Token int64 `json:"token,omitempty"`
	// Read is the list the client read; null if it read nothing.
	Read []int64 `json:"read"`
	// Rev is the resource's revision of an acknowledged write, where the
	// resource has revisions.
	Rev int64 `json:"rev,omitempty"`
	// Reason says why a fail failed (Reason* constants) or why an info is
	// unknown (the error text).
	Reason string `json:"reason,omitempty"`
	// Error is the underlying error text of a fail or info.
	Error string `json:"error,omitempty"`
	// Resources are each resource's part of the operation, in the run's
	// order, when the run has more than one resource; Read and Rev above
	// are then the first resource's.
	Resources []ResourcePart `json:"resources,omitempty"`
}

// ResourcePart is what one critical section did to one resource of a run
// with several.
type ResourcePart struct {
	Resource string `json:"resource"`
	// Read is the list read from this resource; null if it was not read.
	Read []int64 `json:"read"`
	// Type is the outcome of the write to this resource: ok
	// (acknowledged), fail (certainly not applied: refused by fencing, or
	// never sent) or info; empty when no write was attempted.
	Type history.Type `json:"type,omitempty"`
	Rev  int64        `json:"rev,omitempty"`
	// Reason and Error say why a fail or info failed.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Audited is the value of the audited phase: the entry the holder logged.
type Audited struct {
	Token   int64  `json:"token"`
	Element int64  `json:"element"`
	Error   string `json:"error,omitempty"`
}

// FAuditRead is the harness's read of the audit log after healing.
// Invoke value: none. Ok value: AuditValue.
const FAuditRead = "audit-read"

// AuditValue is the value of an ok audit read: every entry of the log.
type AuditValue struct {
	Entries []AuditEntry `json:"entries"`
}

// AuditEntry is one line of the audit log: "process P, token T, wrote
// element E".
type AuditEntry struct {
	Process history.Process `json:"process"`
	Token   int64           `json:"token"`
	Element int64           `json:"element"`
}

// Late is the value of the late-result phase: history.Late with the
// completion decoded.
type Late struct {
	Type       history.Type `json:"type"`
	Completion Completion   `json:"completion"`
}
