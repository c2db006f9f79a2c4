// Package register is the history vocabulary of the register workload
// (workloads/register): its f names, its phase and the value of its events.
// Clients read, write and compare-and-set integer registers on a few keys of
// the target's key-value store; the history is checked by a CAS-register
// model partitioned by key (checkers).
package register

// Functions (the f of history events).
const (
	FRead  = "read"
	FWrite = "write"
	FCAS   = "cas"
)

// PhaseSending is the one phase of a register operation: its request is
// about to leave. Value: none.
const PhaseSending = "sending"

// Value is the value of every register event. Invocation: Key, and Value
// (write) or Old and New (cas). Completion: the same, and for an ok read the
// Value read (null when the key is absent). Error says why a fail or info
// failed.
type Value struct {
	Key   string `json:"key"`
	Value *int64 `json:"value,omitempty"`
	Old   *int64 `json:"old,omitempty"`
	New   *int64 `json:"new,omitempty"`
	// Absent is true for an ok read of a key that does not exist.
	Absent bool   `json:"absent,omitempty"`
	Error  string `json:"error,omitempty"`
}
