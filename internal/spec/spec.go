// Package spec is a run's configuration as plain data, and the table of its
// knobs: every flag of `fencecheck run` is declared once, in Knobs, with its
// name, help, default, bounds, test.json key and whether a matrix can vary
// it. From the table come the flags of every command that takes run flags
// (Spec.Flags), test.json's configuration (Spec's MarshalJSON and
// UnmarshalJSON), the command line that runs a stored run again
// (Spec.Args), the report's configuration rows (Spec.Rows), the bounds
// checks (Spec.CheckBounds) and the docs' flag reference (Reference).
//
// A Spec holds names and numbers only; the harness resolves the names
// (target, workload, resources, faults) against its tables, and fills the
// defaults that depend on the target's profile (harness.Config.Defaults).
package spec

import (
	"time"
)

// Spec is one run's configuration. The zero value of a duration means
// "the default" until the harness resolves it; a resolved Spec (as test.json
// records it) has every duration set.
type Spec struct {
	// What runs.
	Target   string // --target: the lock service
	Version  string // --version: its server version ("" the default)
	Recipe   string // --recipe: its lock recipe ("" the default)
	Workload string // --workload
	// Resource are what the lock protects, in write order (--resource).
	Resource []string
	// Fencing is the --fencing value: one mode, or RESOURCE=MODE,...
	Fencing    string
	AuditLog   bool // --audit-log
	SideWriter bool // --side-writer
	// Image are the user's own images by kind (--image KIND=REF).
	Image map[string]string

	// Existing servers (--endpoints): the run starts none and attaches to
	// these; TLS files and auth are what its clients present to them.
	Endpoints     []string // --endpoints
	TLSCA         string   // --tls-ca: a PEM file
	TLSCert       string   // --tls-cert: a PEM file
	TLSKey        string   // --tls-key: a PEM file
	TLSServerName string   // --tls-server-name
	// Auth is --auth, USER:PASSWORD: a secret, never recorded nor shown
	// (Knob.Secret); AuthFile names a file that holds it.
	Auth     string
	AuthFile string

	// Faults.
	Nemesis         string        // --nemesis, as given
	NemesisInterval time.Duration // --nemesis-interval
	Seed            uint64        // --seed (0: pick one)

	// Size.
	TimeLimit   time.Duration // --time-limit
	Concurrency int           // --concurrency: lock clients
	Nodes       int           // --nodes: servers (0: the target's usual)
	Locks       int           // --locks: independent locks (lock-append)
	Keys        int           // --keys: registers (register)
	ReadMode    string        // --read-mode (register)

	// Lease and timing.
	TTL            time.Duration  // --ttl
	LockDelay      *time.Duration // --lock-delay (nil: the target's)
	Work           time.Duration  // --work
	WorkCPU        bool           // --work-cpu
	Margin         time.Duration  // --margin
	AcquireTimeout time.Duration  // --acquire-timeout
	RPCTimeout     time.Duration  // --rpc-timeout
	OpTimeout      time.Duration  // --op-timeout
	ReadyTimeout   time.Duration  // --ready-timeout

	// Check.
	CheckTimeout time.Duration // --check-timeout
	// CheckMemory is the check's memory budget in bytes (nil: the
	// default, a quarter of the machine's memory; 0: no limit).
	CheckMemory *uint64

	// The user's client program (--client-dir, --client-cmd,
	// --client-image): not recorded, a directory is not in test.json.
	ClientDir, ClientCmd, ClientImage string

	// Where it goes.
	Name    string // --name ("" TARGET-WORKLOAD-FENCING)
	Results string // --results
}

// Default is a Spec with the defaults that do not depend on the target:
// what `run -h` shows.
func Default() Spec {
	return Spec{
		Target: "etcd", Workload: "lock-append", Resource: []string{"lock-store"}, Fencing: "none",
		Nemesis: "pause-holder", Concurrency: 5, Locks: 1, Keys: 8,
		Work: 250 * time.Millisecond, CheckTimeout: 60 * time.Second, Results: "./results",
	}
}
