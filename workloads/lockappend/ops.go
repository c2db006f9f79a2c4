// Package lockappend is the seed workload: each client repeats a critical
// section that acquires a lock, reads a list, checks its lease, works, and
// writes the list back with its own unique element appended, carrying its
// fencing token. A stale lock holder's write can replace a list that already
// holds another client's acknowledged element: a lost update.
//
// This file fixes the history vocabulary of the workload (the f names, phases
// and value shapes); critical.go runs the critical section in a worker.
package lockappend

import "github.com/fencecheck/fencecheck/history"

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
	// PhaseAcquired: the lock is held. Value: Acquired.
	PhaseAcquired = "acquired"
	// PhaseRead: the list was read. Value: ReadValue.
	PhaseRead = "read"
	// PhaseChecked: the client checked its lease. Value: Checked.
	PhaseChecked = "checked"
	// PhaseWriteSent: the write request is about to leave. Value: none.
	PhaseWriteSent = "write-sent"
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
)

// Invoke is the value of an append invocation.
type Invoke struct {
	Element int64 `json:"element"`
}

// Acquired is the value of the acquired phase.
type Acquired struct {
	Token int64 `json:"token"`
}

// ReadValue is a read list: the value of the read phase and of a final read.
type ReadValue struct {
	Value []int64 `json:"value"`
}

// Checked is the value of the checked phase: the lease time the client
// believed it had left, and whether that was above its safety margin.
type Checked struct {
	RemainingMS int64 `json:"remaining_ms"`
	OK          bool  `json:"ok"`
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
}

// Late is the value of the late-result phase: history.Late with the
// completion decoded.
type Late struct {
	Type       history.Type `json:"type"`
	Completion Completion   `json:"completion"`
}
