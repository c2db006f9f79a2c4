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
// (target, workload, resources, faults) against its tables. Every default
// is set here, once: Default, and Resolve with what the harness reads of
// the target (Profile).
package spec

import (
	"time"
)

// Spec is one run's configuration. The zero value of a duration means
// "the default" until the harness resolves it; a resolved Spec (as test.json
// records it) has every duration set.
type Spec struct {
	// WorkerKnobs are the knobs the workers read, carried as they are
	// to the workloads' configuration and each worker's setup.
	WorkerKnobs

	// What runs.
	Target   string // --target: the lock service
	Version  string // --version: its server version ("" the default)
	Recipe   string // --recipe: its lock recipe ("" the default)
	Workload string // --workload
	// Resource are what the lock protects, in write order (--resource).
	Resource []string
	// Fencing is the --fencing value: one mode, or RESOURCE=MODE,...
	Fencing    string
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
	TimeLimit time.Duration // --time-limit
	Nodes     int           // --nodes: servers (0: the target's usual)

	// Lease and timing.
	TTL          time.Duration  // --ttl
	LockDelay    *time.Duration // --lock-delay (nil: the target's)
	RPCTimeout   time.Duration  // --rpc-timeout
	OpTimeout    time.Duration  // --op-timeout
	ReadyTimeout time.Duration  // --ready-timeout

	// Check.
	CheckTimeout time.Duration // --check-timeout
	// CheckMemory is the check's memory budget in bytes (nil: the
	// default, a quarter of the machine's memory; 0: no limit).
	CheckMemory *uint64

	// KeepData is --keep-data: when the nodes' data directories are
	// copied into the run's directory before teardown (KeepAuto,
	// KeepAlways, KeepNever); KeepDataLimit (--keep-data-limit) bounds
	// the bytes that copy stores in all (nil until resolved).
	KeepData      string
	KeepDataLimit *uint64

	// The user's client program (--client-dir, --client-cmd,
	// --client-image): not recorded, a directory is not in test.json.
	ClientDir, ClientCmd, ClientImage string

	// Where it goes.
	Name    string // --name ("" TARGET-WORKLOAD-FENCING)
	Results string // --results
}

// WorkerKnobs are the knobs the workers read. Spec embeds them, and the
// workloads' configuration (workloads.Config) embeds them in turn, so they
// reach each worker's setup as they are, with their JSON names in the
// worker protocol; test.json writes them through the knob table, as every
// knob. Adding a knob a worker reads is a field here and a line of Knobs.
type WorkerKnobs struct {
	// AuditLog: every holder appends an entry to the audit log before its
	// writes (--audit-log).
	AuditLog bool `json:"audit_log,omitempty"`
	// Concurrency is the number of lock clients (--concurrency).
	Concurrency int `json:"concurrency,omitempty"`
	// Locks is the lock-append workload's number of independent locks
	// (--locks; 0 and 1 are one: LockCount).
	Locks int `json:"locks,omitempty"`
	// Keys is the register workload's number of registers (--keys);
	// ReadMode its read mode (--read-mode).
	Keys     int    `json:"keys,omitempty"`
	ReadMode string `json:"read_mode,omitempty"`
	// Work is the time between the lease check and the write (--work):
	// the window where a pause or a partition lands; WorkCPU spends it
	// computing instead of waiting (--work-cpu).
	Work    time.Duration `json:"work,omitempty"`
	WorkCPU bool          `json:"work_cpu,omitempty"`
	// Recheck is the careful holder (--recheck): right before its write,
	// the holder asks its library whether it still holds the lock
	// (targets.Believer) and writes only if told so; and every holder is
	// asked every BeliefEvery while it believes it holds the lock, each
	// answer a phase of its operation (lockappend.PhaseHeld).
	Recheck bool `json:"recheck,omitempty"`
	// BeliefTolerance is how long after the next holder's grant a library
	// may still have said "held" before the belief check is invalid
	// (--belief-tolerance; 0: DefaultBeliefTolerance).
	BeliefTolerance time.Duration `json:"belief_tolerance,omitempty"`
	// Margin is the lease time a careful client wants left before it goes
	// ahead (--margin); with less, it fails the operation without writing.
	Margin time.Duration `json:"margin,omitempty"`
	// AcquireTimeout bounds the wait for the lock (--acquire-timeout); a
	// client that does not get it in time fails the operation.
	AcquireTimeout time.Duration `json:"acquire_timeout,omitempty"`
}

// DefaultBeliefTolerance is --belief-tolerance's default: two of the
// 50 ms questions (lockappend.BeliefEvery), as a holder's answer and the
// next holder's grant are each timed when the harness hears them.
const DefaultBeliefTolerance = 100 * time.Millisecond

// Tolerance is BeliefTolerance, or its default.
func (k WorkerKnobs) Tolerance() time.Duration {
	if k.BeliefTolerance > 0 {
		return k.BeliefTolerance
	}
	return DefaultBeliefTolerance
}

// LockCount is the number of locks: Locks, at least 1.
func (k WorkerKnobs) LockCount() int { return max(k.Locks, 1) }

// The defaults that do not depend on the target.
const (
	DefaultConcurrency  = 5
	DefaultLocks        = 1
	DefaultKeys         = 8
	DefaultWork         = 250 * time.Millisecond
	DefaultCheckTimeout = 60 * time.Second
	DefaultFencing      = "none"
	// DefaultKeepDataLimit bounds what --keep-data stores: enough for
	// the data of a short run of any target (etcd's preallocated WAL
	// segments are holes, not counted), not a disk filled night after
	// night.
	DefaultKeepDataLimit = 256 << 20
)

// --keep-data's values.
const (
	// KeepAuto keeps the data of an invalid run only (the default).
	KeepAuto = "auto"
	// KeepAlways keeps every run's data; KeepNever none.
	KeepAlways = "always"
	KeepNever  = "never"
)

// KeepModes are --keep-data's values, the default first.
var KeepModes = []string{KeepAuto, KeepAlways, KeepNever}

// Default is a Spec with the defaults that do not depend on the target:
// what `run -h` shows.
func Default() Spec {
	s := Spec{
		Target: "etcd", Workload: "lock-append", Resource: []string{"lock-store"},
		Nemesis: "pause-holder", Results: "./results",
	}
	s.Concurrency = DefaultConcurrency
	s.fillFixed()
	return s
}

// fillFixed fills the knobs left zero whose default is a constant.
func (s *Spec) fillFixed() {
	if s.Fencing == "" {
		s.Fencing = DefaultFencing
	}
	if s.Keys == 0 {
		s.Keys = DefaultKeys
	}
	if s.Locks == 0 {
		s.Locks = DefaultLocks
	}
	def(&s.Work, DefaultWork)
	def(&s.CheckTimeout, DefaultCheckTimeout)
	if s.KeepData == "" {
		s.KeepData = KeepAuto
	}
	if s.KeepDataLimit == nil {
		n := uint64(DefaultKeepDataLimit)
		s.KeepDataLimit = &n
	}
}

func def(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

// Profile is what a run's defaults take from its target (the harness
// fills it from targets.ProfileOf and the target's capabilities).
type Profile struct {
	TTL             time.Duration
	LockDelay       *time.Duration // nil: none
	NemesisInterval time.Duration
	TimeLimit       time.Duration
	ReadyTimeout    time.Duration
	// ReadMode is the target's first read mode ("": it has none).
	ReadMode string
	// MaxLease is the longest a lease of the target can last for a TTL
	// and a lock-delay (nil: the TTL).
	MaxLease func(ttl time.Duration, lockDelay *time.Duration) time.Duration
}

// Resolve fills in the knobs left zero, in one place: the constants
// (fillFixed); the TTL, lock-delay (when nil), nemesis interval, time
// limit, ready timeout and read mode from the target's profile p; and,
// with L the target's longest lease (p.MaxLease: the TTL for etcd), margin
// TTL/4, acquire timeout 5 L (longer than a holder pause, so that waiters
// are still waiting when a paused holder's lease expires), RPC timeout 4 L
// and at least 2 s (longer than any fault, as for a client that waits out
// a partition: its request, held in its TCP connection, lands when the
// partition heals), operation timeout long enough for an acquire, the
// work, the longest pause (3 L) and two RPCs.
func (s *Spec) Resolve(p Profile) {
	s.fillFixed()
	def(&s.TTL, p.TTL)
	if s.LockDelay == nil {
		s.LockDelay = p.LockDelay
	}
	def(&s.NemesisInterval, p.NemesisInterval)
	def(&s.TimeLimit, p.TimeLimit)
	def(&s.ReadyTimeout, p.ReadyTimeout)
	if s.ReadMode == "" {
		s.ReadMode = p.ReadMode
	}
	lease := s.TTL
	if p.MaxLease != nil {
		lease = p.MaxLease(s.TTL, s.LockDelay)
	}
	def(&s.Margin, s.TTL/4)
	def(&s.AcquireTimeout, 5*lease)
	def(&s.RPCTimeout, max(2*time.Second, 4*lease))
	def(&s.OpTimeout, s.AcquireTimeout+s.Work+3*lease+2*s.RPCTimeout+2*time.Second)
}
