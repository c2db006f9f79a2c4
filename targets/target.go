// Package targets defines what a lock service under test provides to
// fencecheck: how its nodes run in containers, how to tell that they serve,
// which node leads, and the client a worker uses against it: a lock recipe
// that grants leases with fencing tokens. What the lock protects is another
// axis (package resources); a target whose client also implements Store
// offers its own key-value store as the resource "lock-store".
//
// Each target lives in its own folder (targets/etcd, ...) and is listed once,
// in internal/clients/tables' target table.
package targets

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Target is a system under test.
type Target interface {
	// Name is the value of --target.
	Name() string
	// Image names the image its servers run (see package images).
	Image() string
	// Nodes returns the server containers of an n-node cluster, or an error
	// wrapping ErrBadConfig when the target cannot run n nodes.
	Nodes(n int) ([]NodeSpec, error)
	// Validate checks client settings the target cannot honour (a lease TTL
	// finer than it supports, ...), with an error wrapping ErrBadConfig.
	Validate(cfg ClientConfig) error
	// Ready returns nil once every node serves clients, or the last reason
	// it does not when ctx ends.
	Ready(ctx context.Context, nodes []Node) error
	// Leader returns the name of the node that leads now.
	Leader(ctx context.Context, nodes []Node) (string, error)
	// Dial returns a client of the cluster. It does not retry operations:
	// every call on the client is one attempt.
	Dial(ctx context.Context, cfg ClientConfig) (Client, error)
}

// NodeSpec is one server container of a cluster.
type NodeSpec struct {
	Name string   // n1, n2, ...: also the node's host name on the run's network
	Cmd  []string // the server's command line; it runs as the container's PID 1
	Env  []string
	// Port is the client port, which Ready and clients use.
	Port int
	// Image is the image kind the node runs (see package kinds); "" is the
	// target's Image(). A target with more than one kind of server (etcd
	// under Kubernetes' apiservers) names each node's.
	Image string
	// Files are written into the node's container before it starts (keys,
	// certificates, configuration), their directories made as needed.
	Files []File
	// Tier names the node's kind in a target with more than one kind of
	// server ("etcd", "apiserver"; see Tiered); "" in a target with one.
	// Every node is a server to the faults, which can pick nodes of one
	// tier (pause-server:one@etcd); the report names a node's tier.
	Tier string
	// DataDir is the directory in the container that holds the server's
	// durable state ("" if none): where the harness mounts a lazy disk
	// for the disk faults (disk-slow, kill:lose-unsynced), its content
	// first copied from the image.
	DataDir string
}

// File is a file of NodeSpec.Files.
type File struct {
	Path string // absolute, in the container
	Data []byte
	Mode int64 // permission bits; 0 is 0o644
}

// Node is a running server: its name and the address of its client port,
// reachable from the harness and from the workers.
type Node struct {
	Name string
	Addr string // host:port
	Tier string // its NodeSpec's
}

// Tiered is implemented by targets with servers of more than one kind
// (NodeSpec.Tier): ClientTier names the tier clients talk to, LeaderTier
// the tier of the server Leader names.
type Tiered interface {
	ClientTier() string
	LeaderTier() string
}

// ClientConfig is what a client needs: where the servers are, the lease it
// takes, and the keys of this run.
type ClientConfig struct {
	Endpoints []string      `json:"endpoints"`
	TTL       time.Duration `json:"ttl"`
	// Prefix scopes every key of the run (lock, value, fence).
	Prefix string `json:"prefix"`
	// RPCTimeout bounds each request a client sends.
	RPCTimeout time.Duration `json:"rpc_timeout"`
	// LockDelay is the time a lock stays unavailable after its holder's
	// lease ends (Consul's lock-delay); nil means the target's default.
	// Targets without one ignore it.
	LockDelay *time.Duration `json:"lock_delay,omitempty"`
	// Recipe is the lock recipe Acquire uses, one of the target's Recipes
	// ("" is its first). Targets with one recipe ignore it.
	Recipe string `json:"recipe,omitempty"`
	// Credentials are what clients present to the servers and trust in
	// them; nil for servers that ask for none. They are secrets: the
	// workers get them, test.json never records them.
	Credentials *Credentials `json:"credentials,omitempty"`
}

// Credentials authenticate a client to servers that serve TLS and ask who
// calls.
type Credentials struct {
	// CA is the PEM certificate of the authority that signed the servers'
	// certificates, which clients trust (and no other).
	CA string `json:"ca,omitempty"`
	// ServerName is the name the servers' certificates carry, which
	// clients check in place of the address they dial.
	ServerName string `json:"server_name,omitempty"`
	// Token is a bearer token.
	Token string `json:"token,omitempty"`
	// Cert and Key are the PEM client certificate and its key that
	// clients present (mutual TLS); empty: none.
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
	// Username and Password authenticate clients where the servers ask
	// for them (etcd's auth, a Redis password or ACL user); Username may
	// be empty with a Password alone (Redis's requirepass).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// TLS, with no CA, trusts the servers' certificates by the machine's
	// own authorities: servers that serve TLS signed by a public CA.
	TLS bool `json:"tls,omitempty"`
}

// TLSConfig is the client TLS configuration of c: nil when c asks for
// no TLS (no CA, no client certificate, TLS unset), else one that trusts
// c.CA alone (or the machine's authorities without one), checks
// ServerName when set, and presents Cert.
func (c *Credentials) TLSConfig() (*tls.Config, error) {
	if c == nil || c.CA == "" && c.Cert == "" && !c.TLS {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: c.ServerName, MinVersion: tls.VersionTLS12}
	if c.CA != "" {
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM([]byte(c.CA)) {
			return nil, errors.New("no PEM certificate in the CA")
		}
	}
	if c.Cert != "" || c.Key != "" {
		pair, err := tls.X509KeyPair([]byte(c.Cert), []byte(c.Key))
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Attacher is implemented by targets that can run against servers
// fencecheck did not start and does not own (--endpoints: a team's
// staging cluster). The harness starts no server: it calls Attach once,
// with the endpoints as the user gave them and the credentials to
// present, and runs the target it returns, whose Ready, Leader and Dial
// reach those servers, each endpoint a Node. Only faults on the client
// side apply (nemesis.Shape.Foreign), and every key the run writes is
// under its ClientConfig.Prefix.
type Attacher interface {
	Target
	// Attach checks the endpoints (their scheme, no secret in them),
	// returns the nodes they are, named s1, s2, ... in order, and the
	// target that presents creds (nil: none) to them. Errors wrap
	// ErrBadConfig.
	Attach(endpoints []string, creds *Credentials) (attached Target, nodes []Node, err error)
}

// Purger is implemented by targets whose clients can remove every key
// of a run (those under its prefix) when it ends: what an attached run
// leaves behind on servers that are not fencecheck's.
type Purger interface {
	// Purge deletes the keys under cfg.Prefix, and nothing else.
	Purge(ctx context.Context, cfg ClientConfig) error
}

// Secured is implemented by targets whose servers serve TLS and
// authenticate clients with material made for each run (a certificate
// authority, a token): the harness calls Secure once per run, runs the
// target it returns (whose Nodes write the material into the servers, and
// whose Ready and Leader present the credentials), and gives creds to
// every client (ClientConfig.Credentials).
type Secured interface {
	Target
	Secure() (secured Target, creds Credentials, err error)
}

// Endpoints are the addresses of the nodes of t that clients talk to:
// those of its ClientTier (Tiered), or every node.
func Endpoints(t Target, nodes []Node) []string {
	tier := ""
	if tt, ok := t.(Tiered); ok {
		tier = tt.ClientTier()
	}
	var out []string
	for _, n := range nodes {
		if n.Tier == tier {
			out = append(out, n.Addr)
		}
	}
	return out
}

// ImageRunner is implemented by targets whose servers can run from a user's
// own image (--image target=REF): each node's command is the server binary
// with flags, and needs nothing else from fencecheck's image (no shell, no
// file). The harness runs that command as the container's PID 1, in place of
// the image's entry point, with the binary found as the image names it.
type ImageRunner interface {
	Target
	// ServerBinary is the server binary's file name ("etcd"). The harness
	// runs the path the image's entry point or command gives a file of
	// that name, else the name itself, looked up on the image's PATH.
	ServerBinary() string
	// ServerVersion asks the running servers which version they run, for
	// test.json: a user's image says nothing of it.
	ServerVersion(ctx context.Context, nodes []Node) (string, error)
}

// Versioned is implemented by targets that can run more than one server
// version (--version).
type Versioned interface {
	Target
	// Versions lists the values of --version, the default first.
	Versions() []string
	// WithVersion is the target running version v, one of Versions.
	WithVersion(v string) Target
	// VersionName is the value of --version it runs (one of Versions).
	VersionName() string
}

// WithVersion is t running version v ("" leaves t as it is), or an error
// wrapping ErrBadConfig that names the versions t has.
func WithVersion(t Target, v string) (Target, error) {
	if v == "" {
		return t, nil
	}
	vt, ok := t.(Versioned)
	if !ok {
		return nil, fmt.Errorf("%w: target %s runs one version; --version %q is not available", ErrBadConfig, t.Name(), v)
	}
	for _, have := range vt.Versions() {
		if have == v {
			return vt.WithVersion(v), nil
		}
	}
	return nil, fmt.Errorf("%w: target %s has no version %q (available: %s)", ErrBadConfig, t.Name(), v, strings.Join(vt.Versions(), ", "))
}

// Reciper is implemented by targets with more than one lock recipe
// (--recipe).
type Reciper interface {
	// Recipes lists the values of --recipe, the default first.
	Recipes() []string
}

// CheckRecipe returns nil if t has recipe r ("" is always its default), or
// an error wrapping ErrBadConfig that names the recipes t has.
func CheckRecipe(t Target, r string) error {
	if r == "" {
		return nil
	}
	rt, ok := t.(Reciper)
	if !ok {
		return fmt.Errorf("%w: target %s has one lock recipe; --recipe %q is not available", ErrBadConfig, t.Name(), r)
	}
	for _, have := range rt.Recipes() {
		if have == r {
			return nil
		}
	}
	return fmt.Errorf("%w: target %s has no recipe %q (available: %s)", ErrBadConfig, t.Name(), r, strings.Join(rt.Recipes(), ", "))
}

// LeaseBounder is implemented by targets whose lock can stay unavailable
// longer than the TTL after its holder's last renewal: a server-side timer
// longer than the TTL (Consul's is 2 TTL), a lock-delay.
type LeaseBounder interface {
	// MaxLease is the longest a lock can stay unavailable after its
	// holder's last renewal; past it, another client can acquire it.
	MaxLease(cfg ClientConfig) time.Duration
}

// MaxLease is t's MaxLease if it has one, else the TTL. Faults that must
// outlast a lease (a holder pause) and client timeouts that must outlast a
// faulty holder are derived from it.
func MaxLease(t Target, cfg ClientConfig) time.Duration {
	if lb, ok := t.(LeaseBounder); ok {
		return lb.MaxLease(cfg)
	}
	return cfg.TTL
}

// NodeDefaulter is implemented by targets whose usual cluster is not 3
// nodes (a single Redis, 5 Redlock masters).
type NodeDefaulter interface {
	DefaultNodes() int
}

// DefaultNodes is t's DefaultNodes if it has one, else 3.
func DefaultNodes(t Target) int {
	if d, ok := t.(NodeDefaulter); ok {
		return d.DefaultNodes()
	}
	return 3
}

// Profile is a target's defaults for a run: the settings with which an
// unfenced lock-append run under pause-holder, given no flag but --target
// and --fencing, finds a lost update (5 of 5 seeds, measured by bench
// -profiles), and a fenced one stays valid. A flag that is given overrides
// its field; a zero field takes the general default (ProfileOf).
type Profile struct {
	// TTL is the lease a run takes (general default 2 s).
	TTL time.Duration
	// LockDelay is the lock-delay a run asks for; nil is the target's own
	// default (Consul's 15 s). Targets without a lock-delay leave it nil.
	LockDelay *time.Duration
	// NemesisInterval is the quiet time between two faults (3 s).
	NemesisInterval time.Duration
	// TimeLimit is how long clients run operations (30 s).
	TimeLimit time.Duration
	// ReadyTimeout is how long the cluster may take to serve (30 s).
	ReadyTimeout time.Duration
	// Why says, in a line, what differs from the general defaults and why
	// ("" for none).
	Why string
}

// Profiler is implemented by targets whose profile differs from the
// general defaults: leases that cannot be as short as 2 s (Consul's
// sessions last at least 10 s), servers slow to start.
type Profiler interface {
	Profile() Profile
}

// The general defaults of a profile.
const (
	DefaultProfileTTL          = 2 * time.Second
	DefaultProfileInterval     = 3 * time.Second
	DefaultProfileTimeLimit    = 30 * time.Second
	DefaultProfileReadyTimeout = 30 * time.Second
)

// ProfileOf is t's profile with every zero field set to the general
// default: TTL 2 s, nemesis interval 3 s, time limit 30 s, ready timeout
// 30 s.
func ProfileOf(t Target) Profile {
	var p Profile
	if pr, ok := t.(Profiler); ok {
		p = pr.Profile()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.TTL, DefaultProfileTTL)
	def(&p.NemesisInterval, DefaultProfileInterval)
	def(&p.TimeLimit, DefaultProfileTimeLimit)
	def(&p.ReadyTimeout, DefaultProfileReadyTimeout)
	return p
}

// DefaultTTL is the TTL of t's profile: the lease a run takes when --ttl is
// not given.
func DefaultTTL(t Target) time.Duration { return ProfileOf(t).TTL }

// KV is a key-value store of integer values: the client of the register
// workload, for targets that offer one.
type KV interface {
	// Get reads key in the given read mode (one of the target's
	// ReadModes); found is false when the key is absent.
	Get(ctx context.Context, key string, mode string) (value int64, found bool, err error)
	// Put sets key to value.
	Put(ctx context.Context, key string, value int64) error
	// CAS sets key to new if it holds old. ok is false, with no error, when
	// it does not: the write certainly did not happen.
	CAS(ctx context.Context, key string, old, new int64) (ok bool, err error)
}

// ReadModer is implemented by targets whose KV has read modes; the first is
// the default.
type ReadModer interface {
	ReadModes() []string
}

// LinearizableReader is implemented by targets some of whose read modes
// promise linearizable reads: a register run in such a mode must be valid
// (matrix judges it); runs in the other modes show what the weaker modes
// allow.
type LinearizableReader interface {
	LinearizableReadModes() []string
}

// PromisesLinearizable reports whether t promises linearizable reads in
// read mode mode.
func PromisesLinearizable(t Target, mode string) bool {
	lr, ok := t.(LinearizableReader)
	if !ok {
		return false
	}
	for _, m := range lr.LinearizableReadModes() {
		if m == mode {
			return true
		}
	}
	return false
}

// Client is one worker's connection to the lock service. A target's client
// may also implement Store (the lock-store resource) and KV (the register
// workload).
type Client interface {
	Locker
	Close() error
}

// Locker is a lock service.
type Locker interface {
	// Acquire blocks until the caller holds the lock, then returns its lease.
	// An error means the lock is not held by this call.
	Acquire(ctx context.Context) (Lease, error)
}

// Lease is a held lock.
type Lease interface {
	// Token is the fencing token of this grant: it must grow with every
	// grant of the lock, across failures of the lock service.
	Token() int64
	// Remaining is the client's own estimate of the time left on the lease,
	// as a careful client would compute it from its last renewal.
	Remaining() time.Duration
	// Release gives the lock up and stops renewing the lease.
	Release(ctx context.Context) error
}

// Believer is implemented by leases whose lock library can say, when
// asked, whether it still believes this client holds the lock: its own
// signal (a session's Done channel, a lost channel, a local deadline, a
// session state), asked again after a fault, right before a write. Held
// answers that belief; an error is no answer. A lease that does not
// implement it cannot answer, and what fencecheck judges of its beliefs
// (the belief windows) is unknown, never valid.
type Believer interface {
	Held(ctx context.Context) (bool, error)
}

// Elector is implemented by clients whose lock service has a
// leader-election recipe of its own: the election workload campaigns with
// it.
type Elector interface {
	// Campaign blocks until the caller leads the election, then returns its
	// leadership as a Lease: Token is the term, which must grow with every
	// leadership, across failures of the lock service; Remaining is the
	// client's estimate of the time before the service may elect another;
	// Release resigns. candidate is the caller's name, stored as the
	// leader's value where the recipe keeps one. An error means the caller
	// does not lead.
	Campaign(ctx context.Context, candidate string) (Lease, error)
}

// Elected is implemented by targets whose servers elect their leader among
// themselves (a Raft or Zab quorum, Sentinels' failover), so that Leader's
// answer may change during a run: the harness then asks Leader every
// leaders.Poll (internal/verdicts/records/leaders) while the clients run and
// records its first answer and each change (the results' leaders), which
// the report marks on the server
// lanes (a one-server cluster too: it has one answer). ElectsLeader false
// is a setup of the target with nothing to elect. A target whose Leader is
// a node the harness fixed (a single server, Redlock's n1) does not
// implement it.
type Elected interface {
	ElectsLeader() bool
}

// LeaderAsker is implemented by elected targets whose Leader sets up
// something costly each time it is called (a client that authenticates):
// the harness's watch asks through one asker for the whole run. ask
// answers as Leader does; done releases what the asker holds.
type LeaderAsker interface {
	LeaderAsker(ctx context.Context, nodes []Node) (ask func(context.Context) (string, error), done func(), err error)
}

// Electing is implemented by targets whose client is an Elector. Election
// names the recipe and what its term is, in words, for the report: "etcd
// concurrency.Election; term: the leader key's create revision".
type Electing interface {
	Election() string
}

// Store is the lock service's own store holding the list that the lock
// protects: the resource "lock-store" (package resources/lockstore). Its
// cas fencing ties a write to the lock's own state, which only the lock
// service can check.
type Store interface {
	// Reset makes the resource an empty list and forgets any fencing token.
	Reset(ctx context.Context) error
	// Read returns the list.
	Read(ctx context.Context) ([]int64, error)
	// ReadFenced reads the list on behalf of lease under token fencing: the
	// resource raises the highest token it accepted to the lease's, or
	// refuses the read with an error wrapping ErrFenced when it holds a
	// higher one already. So the fence moves when a new holder reads, not
	// only when it writes: a stale holder's write that lands between the new
	// holder's read and write is refused too.
	ReadFenced(ctx context.Context, lease Lease) ([]int64, error)
	// Write replaces the list, fenced as f says, on behalf of lease. Token
	// fencing (here and in ReadFenced) needs only the lease's Token, so a
	// lease from any lock client will do (a user's client program);
	// FencingCAS needs a lease from this target's own Acquire.
	// It returns the resource's revision of the write where the resource has
	// one (0 otherwise). A write the fencing refused returns an error
	// wrapping ErrFenced: it certainly did not take effect.
	Write(ctx context.Context, list []int64, lease Lease, f Fencing) (rev int64, err error)
}

// Fencing is how a write is tied to the lock.
type Fencing string

// Fencing modes.
const (
	// FencingNone writes unconditionally, as most code does.
	FencingNone Fencing = "none"
	// FencingToken rejects a read or a write whose token is lower than the
	// highest token the resource has accepted (from a read or a write).
	FencingToken Fencing = "token"
	// FencingCAS ties the write to lock ownership with the resource's own
	// compare-and-set.
	FencingCAS Fencing = "cas"
	// FencingTerm is the election workload's token fencing: the log
	// refuses an entry whose term is lower than the highest it accepted, as
	// a Raft follower refuses an old term. Any resource that offers token
	// offers term (the term is the token).
	FencingTerm Fencing = "term"
)

// Applied is the mode a resource applies for f: term is token fencing
// with the term as the token; every other mode is itself.
func (f Fencing) Applied() Fencing {
	if f == FencingTerm {
		return FencingToken
	}
	return f
}

// Fencings lists the fencing modes.
var Fencings = []Fencing{FencingNone, FencingToken, FencingCAS, FencingTerm}

// ParseFencing returns the mode named s, or an error that lists the modes.
func ParseFencing(s string) (Fencing, error) {
	for _, f := range Fencings {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Fencings))
	for i, f := range Fencings {
		names[i] = string(f)
	}
	return "", fmt.Errorf("%w: unknown fencing %q (valid: %s)", ErrBadConfig, s, strings.Join(names, ", "))
}

// Errors.
var (
	// ErrFenced: the resource refused a read or a write because of its
	// fencing.
	ErrFenced = errors.New("rejected by fencing")
	// ErrBadConfig: settings the target cannot run with.
	ErrBadConfig = errors.New("bad configuration")
)
