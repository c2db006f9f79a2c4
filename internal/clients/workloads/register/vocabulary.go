package register

// The register workload's history vocabulary: its f names, its phase and
// the value of its events. Only the workload and its checker (Check) read
// them.

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
