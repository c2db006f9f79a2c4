// Package resources defines what a lock protects: the resource a critical
// section reads and writes back with its element appended, and the ways
// that resource can tie a write to the lock (its fencing modes). Only the
// resource can stop a stale lock holder, so the resource, not the lock
// service, decides which fencing modes exist.
//
// A resource is its own axis of a run (--resource): the list can live in the
// lock service's own store (lock-store, the default), in a PostgreSQL table
// (postgres), or behind a fencing proxy in front of a store that cannot
// compare tokens (proxy). Each resource lives in its own folder and is listed
// once, in internal/clients/tables' resource table; resourcetest holds the contract
// every resource passes on real containers.
package resources

import (
	"context"
	"errors"
	"time"

	"github.com/fencecheck/fencecheck/targets"
)

// Resource is a kind of protected store.
type Resource interface {
	// Name is the value of --resource.
	Name() string
	// Fencings lists the fencing modes the resource offers; the first is
	// FencingNone.
	Fencings() []targets.Fencing
	// Nodes are the containers the resource runs on the run's network, in
	// start order; none when it lives in the lock service. Faults with the
	// resource scope (kill:resource, ...) hit the first.
	Nodes() []NodeSpec
	// Ready returns nil once the resource serves at nodes (the started
	// Nodes, in order), or the last reason it does not when ctx ends.
	Ready(ctx context.Context, nodes []targets.Node) error
	// Dial returns one client's handle of the resource. lock is the client
	// of the lock service that the same worker (or the harness) uses: a
	// resource that lives in the lock service stores through it. Dial does
	// not retry; neither does any call on the Store.
	Dial(ctx context.Context, cfg Config, lock targets.Client) (Store, error)
}

// NodeSpec is one container of a resource.
type NodeSpec struct {
	// Name is the node's name and host name on the run's network ("pg",
	// "proxy", ...); it must not look like a server (n1) or worker (w1).
	Name string
	// Image is the image kind it runs (package images: base, worker).
	Image string
	Cmd   []string
	Env   []string
	// Port is the port clients use.
	Port int
	// DataDir is the directory that holds the resource's durable state,
	// as targets.NodeSpec.DataDir ("" if none).
	DataDir string
}

// Config is what a Store needs.
type Config struct {
	// Endpoints are the resource's nodes' host:port, in Nodes order.
	Endpoints []string `json:"endpoints,omitempty"`
	// Prefix scopes the run's data (keys, rows, files).
	Prefix string `json:"prefix"`
	// RPCTimeout bounds each request.
	RPCTimeout time.Duration `json:"rpc_timeout"`
}

// Access is what a critical section brings to the resource: the lease it
// holds (nil for a writer that does not take the lock) and the fencing mode
// of this resource in the run.
type Access struct {
	Lease   targets.Lease
	Fencing targets.Fencing
}

// State is what a read returned: the list, and the resource's own version
// of it where the resource has one (0 otherwise), which cas fencing on a
// version column compares.
type State struct {
	List    []int64
	Version int64
}

// Store is one client's handle of a resource.
type Store interface {
	// Reset makes the list empty and forgets every fence. Only the harness
	// calls it, before the workers start.
	Reset(ctx context.Context) error
	// Read returns the list. Under FencingToken it is a fenced read: the
	// resource raises the highest token it accepted to the lease's, or
	// refuses the read with an error wrapping ErrFenced when it holds a
	// higher one already; so the fence moves when a new holder reads, and a
	// stale holder's write that lands between the new holder's read and
	// write is refused too. An empty list is empty, never nil.
	Read(ctx context.Context, a Access) (State, error)
	// Write replaces the list, fenced as a.Fencing says; read is what the
	// same critical section read. It returns the resource's revision of the
	// write where it has one (increasing with every write; 0 otherwise). A
	// write the fencing refused returns an error wrapping ErrFenced: it
	// certainly did not take effect. Any other error leaves the outcome
	// unknown.
	Write(ctx context.Context, a Access, read State, list []int64) (rev int64, err error)
	Close() error
}

// AuditLog is a log that does not check tokens (--audit-log): every holder
// appends what it is about to write before its fenced write, so that the
// log can be held against what the fenced resource kept. A resource that can
// hold one implements AuditLogger.
type AuditLog interface {
	// Reset empties the log (the harness, before the run).
	Reset(ctx context.Context) error
	Append(ctx context.Context, e AuditEntry) error
	// Entries returns the whole log, in append order.
	Entries(ctx context.Context) ([]AuditEntry, error)
	Close() error
}

// AuditEntry is one line of the audit log: "process P, token T, wrote
// element E".
type AuditEntry struct {
	Process int64 `json:"process"`
	Token   int64 `json:"token"`
	Element int64 `json:"element"`
}

// AuditLogger is a resource that can keep an audit log for a run (in its
// own containers).
type AuditLogger interface {
	Resource
	DialAuditLog(ctx context.Context, cfg Config) (AuditLog, error)
}

// OneFence is a resource whose token fencing keeps one highest token for
// everything it stores (the fencing proxy: one state file), not one per
// list. Tokens of two locks are not ordered, so a run of several locks
// (--locks) cannot fence it with tokens.
type OneFence interface {
	OneFence() bool
}

// Errors.
var (
	// ErrFenced: the resource refused a read or a write because of its
	// fencing (the same error the lock-store resource's targets return).
	ErrFenced = targets.ErrFenced
	// ErrBadConfig: a resource or fencing mode the run cannot have.
	ErrBadConfig = targets.ErrBadConfig
	// ErrNoStore: the target keeps no list of its own (no lock-store).
	ErrNoStore = errors.New("the target has no store of its own")
)

// Offers reports whether r offers fencing mode f. Every resource that
// offers token offers term (targets.FencingTerm): the term is the token.
func Offers(r Resource, f targets.Fencing) bool {
	f = f.Applied()
	for _, g := range r.Fencings() {
		if g == f {
			return true
		}
	}
	return false
}
