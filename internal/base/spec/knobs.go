package spec

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
)

// Knob is one setting of a run: one field of Spec, one flag, one test.json
// key, one row of the report, one line of the docs' flag reference.
type Knob struct {
	// Flag is the flag's name, without dashes.
	Flag string
	// Key is its test.json key ("": not recorded, as --results).
	Key string
	// Help is the flag's help; where Choices names a list, the command
	// that adds the flags appends it (": etcd, consul, ...").
	Help    string
	Choices string
	// Axis: matrix can vary it (a comma-separated list, one cell each).
	Axis bool
	// Replay: part of the command line that runs a stored run again
	// (Args); where the run is stored and the client program's directory
	// are not (its command and image are: they go with the directory
	// given again).
	Replay bool
	// Least and Most bound a duration or a count (0: no bound); Positive
	// asks for more than zero. CheckBounds checks them in table order,
	// naming the flag.
	Positive    bool
	Least, Most int64
	// Unset, for Args, is what an empty value stands for ("none").
	Unset string
	// Workload, if set, is the only workload the knob applies to; a run
	// of another records it unset (Spec.ForWorkload).
	Workload string
	// Secret: the value is a secret (--auth): not recorded (no Key), not
	// replayed, not a report row, shown nowhere.
	Secret bool
	// Attach: the knob names the servers a run attaches to, or what its
	// clients present to them (--endpoints, --tls-*, --auth,
	// --auth-file). A rerun takes it from its own command line, never from
	// a stored run (rerun.Attach): a test.json someone else wrote could
	// name any local file and any server.
	Attach bool
	// File is what an experiment file (run -f, matrix -f, a stored
	// run's test.json read as one) may say of the knob: FileSets (the
	// zero value) for a knob, FileAsks for the servers a run attaches to,
	// their credentials and where results go, FileNever for a secret and
	// a client program's directory (its build step runs on this machine,
	// as root). One rule for every command that reads a file, stated
	// here and nowhere else (internal/verdicts/experiment applies it).
	File FileRule

	field func(*Spec) value
}

// FileRule is what an experiment file may say of a knob (Knob.File). A
// file may come from anyone (a colleague, an issue, a CI artifact, a
// results directory someone else could write): it may set what a run
// does, never which servers it reaches, what it presents to them, what
// runs on this machine, or where root writes.
type FileRule int

const (
	// FileSets: a file sets the knob (the command line's flag overrides
	// it).
	FileSets FileRule = iota
	// FileAsks: a file may name the knob, but its value comes from the
	// command line only: a file that names it without the flag given
	// there (for a credential, --endpoints) is refused, and the file's
	// value is never used.
	FileAsks
	// FileNever: a file that names the knob is refused, whatever the
	// command line says.
	FileNever
)

// Bounds of the durations.
const (
	// MaxTTL bounds --ttl: a lease of an hour is already beyond any test
	// (and defaults derived from a huge TTL would overflow).
	MaxTTL = time.Hour
	// MinTimeout is the least --rpc-timeout and --ready-timeout: below a
	// millisecond no request and no cluster could make it.
	MinTimeout = time.Millisecond
	// MaxDuration bounds every other duration (--time-limit and
	// --lock-delay too, and a schedule step's after and hold:
	// history.MaxStepDuration): a week.
	MaxDuration = 7 * 24 * time.Hour
	// MaxConcurrency is the most lock clients (one container each).
	MaxConcurrency = 64
)

func dur(p func(*Spec) *time.Duration) func(*Spec) value {
	return func(s *Spec) value { return durationValue{p(s)} }
}
func integer(p func(*Spec) *int) func(*Spec) value {
	return func(s *Spec) value { return intValue{p(s)} }
}
func str(p func(*Spec) *string) func(*Spec) value {
	return func(s *Spec) value { return stringValue{p(s)} }
}
func boolean(p func(*Spec) *bool) func(*Spec) value {
	return func(s *Spec) value { return boolValue{p(s)} }
}

// Knobs are the run's settings, in the order the bounds are checked, the
// report lists them and Args writes them: what runs, the faults, the size,
// the lease, the check, where it goes. Adding a knob is a field of Spec
// and a line here (and what reads it).
var Knobs = []Knob{
	{Flag: "target", Key: "target", Axis: true, Replay: true, Choices: "targets",
		Help: "lock service under test", field: str(func(s *Spec) *string { return &s.Target })},
	{Flag: "version", Key: "version", Axis: true, Replay: true, Choices: "versions",
		Help: "the target's server version (default the first)", field: str(func(s *Spec) *string { return &s.Version })},
	{Flag: "recipe", Key: "recipe", Axis: true, Replay: true, Choices: "recipes",
		Help: "the target's lock recipe (default the first)", field: str(func(s *Spec) *string { return &s.Recipe })},
	{Flag: "workload", Key: "workload", Axis: true, Replay: true, Choices: "workloads",
		Help: "workload", field: str(func(s *Spec) *string { return &s.Workload })},
	{Flag: "resource", Key: "resource", Axis: true, Replay: true, Choices: "resources",
		Help:  "what the lock protects, comma-separated in write order",
		field: func(s *Spec) value { return listValue{&s.Resource} }},
	{Flag: "fencing", Key: "fencing", Axis: true, Replay: true,
		Help:  "how writes are fenced at the resource: none, token, cas (as the resource offers), or RESOURCE=MODE,... for each",
		field: str(func(s *Spec) *string { return &s.Fencing })},
	{Flag: "audit-log", Workload: "lock-append", Replay: true,
		Help:  "before its write, every holder appends an entry (its client, its token, the element) to an audit log that checks no token",
		field: boolean(func(s *Spec) *bool { return &s.AuditLog })},
	{Flag: "side-writer", Workload: "lock-append", Key: "side_writer", Axis: true, Replay: true,
		Help:  "a batch job writes the first resource every 3s without the lock and without a token",
		field: boolean(func(s *Spec) *bool { return &s.SideWriter })},
	{Flag: "image", Key: "image", Replay: true, Choices: "image runners",
		Help:  "your own image, from the local Docker Engine, as KIND=IMAGE: target=IMAGE runs the servers from it (an image with no shell and no iptables will do: faults act from outside)",
		field: func(s *Spec) value { return mapValue{&s.Image, checkImage} }},
	{Flag: "endpoints", Attach: true, File: FileAsks, Key: "endpoints", Replay: true, Choices: "attachers",
		Help:  "existing servers to test, comma-separated (https://etcd-1:2379,...; redis://HOST:PORT or rediss:// for TLS; docs/staging.md): fencecheck starts no server, only its workers, allows only client-side faults, and writes and deletes only under the run's own key prefix; targets that can attach",
		field: func(s *Spec) value { return listValue{&s.Endpoints} }},
	{Flag: "tls-ca", Attach: true, File: FileAsks, Key: "tls_ca", Replay: true,
		Help: "with --endpoints: PEM file of the authority that signed the servers' certificates, which clients trust", field: str(func(s *Spec) *string { return &s.TLSCA })},
	{Flag: "tls-cert", Attach: true, File: FileAsks, Key: "tls_cert", Replay: true,
		Help: "with --endpoints: PEM file of the client certificate clients present (with --tls-key)", field: str(func(s *Spec) *string { return &s.TLSCert })},
	{Flag: "tls-key", Attach: true, File: FileAsks, Key: "tls_key", Replay: true,
		Help: "with --endpoints: PEM file of the client certificate's key", field: str(func(s *Spec) *string { return &s.TLSKey })},
	{Flag: "tls-server-name", Attach: true, File: FileAsks, Key: "tls_server_name", Replay: true,
		Help: "with --endpoints: the name the servers' certificates carry, checked in place of the endpoint's host", field: str(func(s *Spec) *string { return &s.TLSServerName })},
	{Flag: "auth", Secret: true, Attach: true, File: FileNever,
		Help: "with --endpoints: USER:PASSWORD clients authenticate with (a Redis password alone: :PASSWORD; a Consul ACL token: :TOKEN); never recorded: prefer --auth-file", field: str(func(s *Spec) *string { return &s.Auth })},
	{Flag: "auth-file", Attach: true, File: FileAsks, Key: "auth_file", Replay: true,
		Help: "with --endpoints: a file whose first line is --auth's USER:PASSWORD (its path is recorded, not its content)", field: str(func(s *Spec) *string { return &s.AuthFile })},

	{Flag: "nemesis", Key: "nemesis", Axis: true, Replay: true, Unset: "none", Choices: "faults",
		Help: "faults, comma-separated", field: str(func(s *Spec) *string { return &s.Nemesis })},

	{Flag: "concurrency", Key: "concurrency", Axis: true, Replay: true, Least: 1, Most: MaxConcurrency,
		Help: "number of lock clients (one container each)", field: integer(func(s *Spec) *int { return &s.Concurrency })},
	{Flag: "nodes", Key: "nodes", Axis: true, Replay: true,
		Help: "number of servers (default: the target's usual cluster: 3; redis 1, redis-sentinel 2, redlock 5)", field: integer(func(s *Spec) *int { return &s.Nodes })},
	{Flag: "locks", Workload: "lock-append", Key: "locks", Axis: true, Replay: true, Least: 1, Most: MaxConcurrency,
		Help: "lock-append workload: independent locks, each protecting its own list; client i takes lock i mod N, and each lock's history is checked on its own", field: integer(func(s *Spec) *int { return &s.Locks })},
	{Flag: "keys", Workload: "register", Key: "keys", Axis: true, Replay: true, Least: 1, Most: 1 << 20,
		Help: "register workload: number of registers", field: integer(func(s *Spec) *int { return &s.Keys })},
	{Flag: "read-mode", Workload: "register", Key: "read_mode", Axis: true, Replay: true,
		Help: "register workload: the target's read mode (etcd: linearizable, serializable; default the target's first)", field: str(func(s *Spec) *string { return &s.ReadMode })},
	{Flag: "time-limit", Key: "time_limit", Axis: true, Replay: true, Positive: true, Most: int64(MaxDuration),
		Help: "how long clients run operations (default the target's profile: 30s; consul 45s)", field: dur(func(s *Spec) *time.Duration { return &s.TimeLimit })},
	{Flag: "ttl", Key: "ttl", Axis: true, Replay: true, Positive: true, Most: int64(MaxTTL),
		Help: "lease TTL of the lock (default the target's profile: 2s; consul 10s, its minimum)", field: dur(func(s *Spec) *time.Duration { return &s.TTL })},
	{Flag: "lock-delay", Key: "lock_delay", Axis: true, Replay: true, Most: int64(MaxDuration),
		Help:  "Consul's lock-delay after a lease ends (default the target's profile: 0, the worst case; Consul's own default is 15s; other targets have none)",
		field: func(s *Spec) value { return optDurationValue{&s.LockDelay} }},
	{Flag: "work", Key: "work", Axis: true, Replay: true, Positive: true, Most: int64(MaxDuration),
		Help: "time between the lease check and the write", field: dur(func(s *Spec) *time.Duration { return &s.Work })},
	{Flag: "work-cpu", Key: "work_cpu", Axis: true, Replay: true,
		Help: "spend --work computing (that much CPU time of one thread, which a CPU throttle stretches) instead of waiting", field: boolean(func(s *Spec) *bool { return &s.WorkCPU })},
	{Flag: "recheck", Key: "recheck", Axis: true, Replay: true,
		Help: "the careful holder (lock-append): right before its write, after the fault aimed at it, a holder asks its lock library whether it still holds the lock and writes only if told so; and every holder is asked every 50 ms while it believes it holds the lock, each answer recorded (the belief check)", field: boolean(func(s *Spec) *bool { return &s.Recheck })},
	{Flag: "belief-tolerance", Key: "belief_tolerance", Axis: true, Replay: true, Most: int64(MaxDuration),
		Help: "with --recheck, how long after the next holder's grant a library may still have said \"held\" before the belief check is invalid (default 100ms: two of the 50 ms questions, each answer and grant timed when the harness hears it)", field: dur(func(s *Spec) *time.Duration { return &s.BeliefTolerance })},
	{Flag: "nemesis-interval", Key: "nemesis_interval", Axis: true, Replay: true, Positive: true, Most: int64(MaxDuration),
		Help: "quiet time between two faults (default the target's profile: 3s; consul 2s)", field: dur(func(s *Spec) *time.Duration { return &s.NemesisInterval })},
	{Flag: "acquire-timeout", Key: "acquire_timeout", Replay: true, Positive: true, Most: int64(MaxDuration),
		Help: "how long a client waits for the lock (default 5 TTL)", field: dur(func(s *Spec) *time.Duration { return &s.AcquireTimeout })},
	{Flag: "rpc-timeout", Key: "rpc_timeout", Replay: true, Positive: true, Least: int64(MinTimeout), Most: int64(MaxDuration),
		Help: "a client's limit on each request (default 4 leases: longer than any fault, so a cut-off client's request lands when the network heals)", field: dur(func(s *Spec) *time.Duration { return &s.RPCTimeout })},
	{Flag: "ready-timeout", Key: "ready_timeout", Replay: true, Positive: true, Least: int64(MinTimeout), Most: int64(MaxDuration),
		Help: "how long the cluster may take to serve, past it exit 255 (default the target's profile: 30s; zookeeper 90s)", field: dur(func(s *Spec) *time.Duration { return &s.ReadyTimeout })},
	{Flag: "check-timeout", Key: "check_timeout", Replay: true, Positive: true, Most: int64(MaxDuration),
		Help: "time limit of the linearizability check (past it: unknown)", field: dur(func(s *Spec) *time.Duration { return &s.CheckTimeout })},
	{Flag: "op-timeout", Key: "op_timeout", Replay: true, Positive: true, Most: int64(MaxDuration),
		Help: "after this an operation is recorded as info (default: enough for acquire, work, the longest pause)", field: dur(func(s *Spec) *time.Duration { return &s.OpTimeout })},
	{Flag: "margin", Key: "margin", Axis: true, Replay: true,
		Help: "lease time a client wants left before it writes (default TTL/4)", field: dur(func(s *Spec) *time.Duration { return &s.Margin })},
	{Flag: "check-memory", Key: "check_memory", Replay: true,
		Help:  "memory budget of the linearizability check, with a unit (6GiB, 512MiB; 0: no limit; default a quarter of the machine's memory); past it: unknown",
		field: func(s *Spec) value { return bytesValue{&s.CheckMemory} }},
	{Flag: "seed", Key: "seed", Replay: true,
		Help:  "random seed of the nemesis (0: pick one and record it)",
		field: func(s *Spec) value { return uint64Value{&s.Seed} }},

	{Flag: "client-dir", Axis: true, File: FileNever,
		Help:  "your own lock client: a directory with client.json and the program, which each worker runs and drives over the client protocol (docs/client-protocol.md); builtin: the target's own recipe",
		field: func(s *Spec) value { return clientDirValue{&s.ClientDir} }},
	{Flag: "client-cmd", Key: "client_cmd", Replay: true,
		Help: "with --client-dir: the command that starts the program (run with /bin/sh -c in the directory's copy), instead of client.json's", field: str(func(s *Spec) *string { return &s.ClientCmd })},
	{Flag: "client-image", Key: "client_image", Replay: true,
		Help: "with --client-dir: an image of yours to run the program in (fencecheck adds its worker binary), instead of fencecheck's worker image", field: str(func(s *Spec) *string { return &s.ClientImage })},
	{Flag: "keep-data", Key: "keep_data",
		Help:  "when each server's and resource's data directory is copied into the run's data/ before teardown: auto (when the run is invalid), always, never",
		field: func(s *Spec) value { return choiceValue{&s.KeepData, KeepModes} }},
	{Flag: "keep-data-limit", Key: "keep_data_limit", Positive: true,
		Help:  "most bytes --keep-data stores in all, with a unit (runs of zeros, left as holes, not counted); files past it are left out and listed",
		field: func(s *Spec) value { return bytesValue{&s.KeepDataLimit} }},
	{Flag: "name", Key: "name",
		Help: "run name (default TARGET-WORKLOAD-FENCING)", field: str(func(s *Spec) *string { return &s.Name })},
	{Flag: "results", File: FileAsks,
		Help: "results directory", field: str(func(s *Spec) *string { return &s.Results })},
}

// Value is the knob's field of s, as a flag.Value.
func (k Knob) Value(s *Spec) interface {
	String() string
	Set(string) error
} {
	return k.field(s)
}

// IsZero says whether the knob is unset (zero) in s.
func (k Knob) IsZero(s *Spec) bool { return k.field(s).zero() }

// imageKinds are the keys --image takes, with what each replaces.
var imageKinds = map[string]string{
	"target": "the lock service's servers",
}

// imageID is an image id as the Engine prints it (full or short).
var imageID = regexp.MustCompile(`^(sha256:)?[0-9a-f]{12,64}$`)

// checkImage vets one KIND=REF of --image: a known kind, given once, a
// well-formed reference or image id. Whether the image exists is checked
// when the cluster starts.
func checkImage(one, kind, ref string, m map[string]string) error {
	if kind == "" || ref == "" {
		return fmt.Errorf("want KIND=IMAGE (%s), not %q", kindList(), one)
	}
	if _, known := imageKinds[kind]; !known {
		return fmt.Errorf("no image kind %q: %s", kind, kindList())
	}
	if _, dup := m[kind]; dup {
		return fmt.Errorf("%s= given twice", kind)
	}
	if !imageID.MatchString(ref) {
		if _, err := reference.ParseNormalizedNamed(ref); err != nil {
			return fmt.Errorf("%s=%s: not an image reference (NAME[:TAG][@DIGEST] or an image id): %w", kind, ref, err)
		}
	}
	return nil
}

func kindList() string {
	var ks []string
	for k, what := range imageKinds {
		ks = append(ks, k+"=IMAGE for "+what)
	}
	sort.Strings(ks)
	return strings.Join(ks, "; ")
}
