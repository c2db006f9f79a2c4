// Package workloads defines what a workload is: the operations its clients
// run, how a worker runs one against the lock service and the resources, how
// the history is checked and summed up. The harness, the store, the report
// and the CLI know workloads only through this interface; each workload
// lives in its own folder (workloads/lockappend, workloads/register) and is
// listed once, in internal/clients/tables' workload table. Its report page is paired
// with it in package views, so that a workload links no report (the worker
// binary links the workloads).
package workloads

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Workload is one kind of test.
type Workload interface {
	// Name is the value of --workload, and results.json's "workload".
	Name() string
	// Validate checks, before anything starts, that the run can be done:
	// what the target and the resources offer, the configuration. Errors
	// wrap targets.ErrBadConfig.
	Validate(t targets.Target, res []resources.Resource, cfg Config) error
	// Next returns the next invocation (f and value). n is unique per call
	// in the run (operation ids, unique elements); r is the worker's own
	// seeded source.
	Next(r *rand.Rand, cfg Config, n int64) (f string, value any)
	// Execute runs one operation in a worker and returns its completion
	// type and value. It never retries: anything it cannot vouch for is
	// history.Info.
	Execute(ctx context.Context, c Clients, cfg Config, f string, value json.RawMessage, env Env) (history.Type, any)
	// Unknown is the value of the info completion the harness records when
	// an operation times out or its worker is lost: the invocation's value
	// and the reason.
	Unknown(invoke json.RawMessage, reason string) any
	// FinalReads are the reads the harness makes after healing, each
	// recorded as an operation of its own (none: the workload has no final
	// state to read).
	FinalReads(c Clients) []FinalRead
	// Check checks a history as recorded. Its result's JSON fields go to
	// the top level of results.json.
	Check(events []history.Event, opts checkers.Options) store.WorkloadResult
	// Decode reads the workload's result back from results.json.
	Decode(raw []byte) (store.WorkloadResult, error)
	// Summary writes the end-of-run figures of res (whose Result is the
	// workload's), one a line, each indented by two spaces with its label
	// in a 17-character column; a client is named by its worker of
	// workers (history.Process.Worker), as the report names it.
	Summary(w io.Writer, res *store.Results, workers int)
}

// Config is the workloads' configuration of a run; each workload reads its
// part. Its knobs are the spec's (spec.WorkerKnobs), carried as they are;
// it adds what the harness resolves for the workers.
type Config struct {
	spec.WorkerKnobs
	// Fencings is the fencing mode of each resource of the run, by name.
	Fencings map[string]targets.Fencing `json:"fencings,omitempty"`
	// Lock is the lock of the client this configuration is for (each
	// worker's and each generator's own, client i's is i mod Locks): its
	// setup's key prefixes are the lock's, and its operations name it.
	Lock int `json:"lock,omitempty"`
}

// Clients is what an operation runs against in a worker (or in the
// harness): the lock service's client and the run's resources, in order.
type Clients struct {
	// OfLock is the lock these clients are for, in a run of several
	// (Config.Lock): the harness dials one set of clients per lock.
	OfLock    int
	Lock      targets.Client
	Resources []Resource
	// Audit is the audit log, nil without --audit-log.
	Audit resources.AuditLog
}

// Resource is one resource of the run as a client sees it.
type Resource struct {
	Name    string
	Fencing targets.Fencing
	Store   resources.Store
}

// Env is what a worker gives an operation besides its clients.
type Env struct {
	// Process is the history process the operation runs as.
	Process history.Process
	// Report sends a phase of the operation to the harness at once; v is
	// nil or the phase's value.
	Report func(phase string, v any)
	// Failpoint marks the moment a fault aimed at the critical section
	// must be in place (after the lease check, before the work and the
	// write). It tells the harness that the operation holds the lock with
	// token, and blocks until the harness answers: at once when no fault
	// waits for a holder, after the fault is in place otherwise (a paused
	// worker reads the answer when it resumes). It gives up after a bound
	// and reports whether the harness answered.
	Failpoint func(ctx context.Context, token int64) bool
	// Skew is the offset of the worker's lease clock (clock-skew:client).
	Skew func() time.Duration
}

// Described is a workload whose runs keep their state in the target's own
// store (no resources, no fencing) and are named and described by its own
// settings instead (register: its registers and read mode).
type Described interface {
	// RunName is a run's default name after "TARGET-"
	// ("register-linearizable").
	RunName(cfg Config) string
	// Describe is a run in words, for its summary line ("8 keys,
	// linearizable reads").
	Describe(cfg Config) string
}

// SideWriting is a workload that can run a side writer (--side-writer): a
// batch job that writes the run's first resource without the lock and
// without a token, as a forgotten write path would.
type SideWriting interface {
	// SideWrite runs one batch that appends element: read, work, write,
	// no lock and no token. Its invocation is Next's for n = element; it
	// returns the completion.
	SideWrite(ctx context.Context, c Clients, element int64) (history.Type, any)
}

// Fenced is a workload that takes only some fencing modes: a matrix
// skips its cells of the others (and says so).
type Fenced interface {
	// Fencings are the modes the workload takes, none included.
	Fencings() []targets.Fencing
}

// Targeted is a workload that runs on some targets only: a matrix skips
// its cells on the others, and says why.
type Targeted interface {
	// Supports returns nil when the workload can run on t, else why not
	// (wrapping targets.ErrBadConfig); Validate checks it too.
	Supports(t targets.Target) error
}

// FinalRead is one read of the final state, recorded as operation F.
type FinalRead struct {
	F    string
	Read func(ctx context.Context) (any, error)
}
