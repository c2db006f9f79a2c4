package cli

import (
	"os"
	"strings"
	"testing"
	"time"
)

// refuseCPU bounds the CPU time fencecheck may use to refuse bad input
// (exit 254 before anything starts): its start and its checks take tens of
// milliseconds of CPU, however loaded the machine (load stretches the wall
// clock, not the work), while a refusal that first did real work (checked
// a history, built an image, started a cluster) takes seconds. That nothing
// started is shown by looking, apart: no call to the Engine (a fake one
// that counts them), no run directory, the exit code where a container
// start would give 255.
const refuseCPU = 5 * time.Second

// refusedEarly checks that a run of the binary refused its input as bad
// (254), saying want, before it called the Docker Engine (engine: the fake
// one it was given), within refuseCPU of CPU time.
func (r cliResult) refusedEarly(t *testing.T, engine *fakeEngine, want string) {
	t.Helper()
	if r.code != exitBadArgs {
		t.Errorf("exit %d, want 254", r.code)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("message %q lacks %q", lastLines(r.stderr, 5), want)
	}
	if r.cpu > refuseCPU {
		t.Errorf("used %s of CPU time to refuse, want under %s", r.cpu, refuseCPU)
	}
	if n := engine.dials.Swap(0); n != 0 {
		t.Errorf("called the Docker Engine %d times before refusing", n)
	}
}

// Bad input exits 254 at once (refusedEarly), before any container starts,
// with a message that lists the valid values. These run the real binary
// and need no Docker (DOCKER_HOST points nowhere, so a container start
// would fail with 255 instead).
func TestBadArguments(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // in the message
	}{
		{"unknown target", []string{"run", "--target", "chubby"}, "valid: etcd"},
		{"attach a target that cannot", []string{"run", "--target", "zookeeper", "--endpoints", "10.0.0.1:2181"}, "target zookeeper runs only on servers fencecheck starts"},
		{"credentials without endpoints", []string{"run", "--tls-ca", "/etc/hostname"}, "--tls-* and --auth are what clients present to existing servers: they go with --endpoints"},
		{"a password in an endpoint", []string{"run", "--endpoints", "https://root:pw@10.0.0.1:2379"}, "no user or password in an endpoint"},
		{"an endpoint's scheme", []string{"run", "--target", "redis", "--endpoints", "https://10.0.0.1:6379"}, "scheme https: this target takes redis, rediss"},
		{"an endpoint without a port", []string{"run", "--endpoints", "10.0.0.1"}, "want HOST:PORT"},
		{"attached servers' version", []string{"run", "--version", "3.5.35", "--endpoints", "10.0.0.1:2379"}, "--endpoints with --version"},
		{"attached servers and --nodes", []string{"run", "--nodes", "3", "--endpoints", "10.0.0.1:2379"}, "--nodes 3 with 1 endpoints"},
		{"a server fault on attached servers", []string{"run", "--nemesis", "pause-server", "--endpoints", "10.0.0.1:2379"}, "the servers at 10.0.0.1:2379 are not fencecheck's"},
		{"a client program on attached servers", []string{"run", "--target", "redis", "--client-dir", "../../examples/clients/redis-py", "--endpoints", "10.0.0.1:6379"}, "--client-dir with --endpoints"},
		{"a scenario on attached servers", []string{"run", "--scenario", "etcd-11456", "--endpoints", "10.0.0.1:2379"}, "--scenario plays its story on servers fencecheck starts"},
		{"redis-nopersist attached", []string{"run", "--target", "redis-nopersist", "--endpoints", "10.0.0.1:6379"}, "use --target redis"},
		{"an IPv6 endpoint", []string{"run", "--endpoints", "[fd00::1]:2379"}, "the workers' network is IPv4"},
		{"two Redis endpoints", []string{"run", "--target", "redis", "--endpoints", "a:1,b:2"}, "give one endpoint, not 2"},
		{"unknown workload", []string{"run", "--workload", "queue"}, "valid: lock-append"},
		{"unknown fencing", []string{"run", "--fencing", "hope"}, "valid: none, token, cas"},
		{"unknown nemesis", []string{"run", "--nemesis", "pause-holder,meteor"}, "valid: none, clock-rate[:client|server], clock-skew[:client|server|wall], clock-strobe"},
		{"nemesis scope", []string{"run", "--nemesis", "pause-client:all"}, "takes no scope"},
		{"pause-holder parameter", []string{"run", "--nemesis", "pause-holder:all"}, "pause-holder takes xM (hold M TTLs"},
		{"pause-holder multiple", []string{"run", "--nemesis", "pause-holder:x0"}, "the TTL multiple must be a number in (0, 50]"},
		{"bad nemesis scope", []string{"run", "--nemesis", "partition:everything"}, "valid: one, leader, halves, majorities-ring, bridge, resource"},
		{"a power loss of servers with no data directory", []string{"run", "--target", "redis-sentinel", "--nemesis", "kill:lose-unsynced"}, "--nemesis kill:all:lose-unsynced: cannot apply to this run: the servers of target redis-sentinel name no data directory"},
		{"a slow disk under a resource in the lock service", []string{"run", "--target", "redis", "--nemesis", "disk-slow:resource"}, "--nemesis disk-slow:resource: cannot apply to this run"},
		{"a slow disk's delay", []string{"run", "--nemesis", "disk-slow:one:0s"}, "the delay is a duration in (0, 1m0s]"},
		{"a pooling mode PgBouncer targets do not offer", []string{"run", "--target", "pg-advisory-pgbouncer-statement"}, "pg-advisory, pg-advisory-pgbouncer, pg-advisory-pgbouncer-session"},
		{"pg-advisory's keepalives in seconds", []string{"run", "--target", "pg-advisory", "--ttl", "1s"}, "pg-advisory maps --ttl onto the server's TCP keepalive settings, in whole seconds: at least 2s"},
		{"a fencing mode pg-advisory's lock-store lacks", []string{"run", "--target", "pg-advisory", "--fencing", "term"}, "--fencing term is the election workload's"},
		{"unknown resource", []string{"run", "--resource", "s3"}, "unknown resource \"s3\" (valid: lock-store, postgres, proxy, proxy-volatile)"},
		{"a fencing mode the resource lacks", []string{"run", "--resource", "proxy", "--fencing", "cas"}, "resource proxy has no fencing \"cas\" (valid: none, token)"},
		{"a per-resource mode for a resource not in the run", []string{"run", "--resource", "postgres", "--fencing", "proxy=token"}, "names resource \"proxy\", which is not in the run (resources: postgres)"},
		{"a per-resource mode the resource lacks", []string{"run", "--resource", "postgres,proxy", "--fencing", "postgres=token,proxy=cas"}, "resource proxy has no fencing \"cas\" (valid: none, token)"},
		{"a resource twice", []string{"run", "--resource", "postgres,postgres"}, "names postgres twice"},
		{"register fenced", []string{"run", "--workload", "register", "--fencing", "token"}, "takes no lock"},
		{"register with an audit log", []string{"run", "--workload", "register", "--audit-log"}, "--audit-log goes with the lock-append workload"},
		{"register with a side writer", []string{"run", "--workload", "register", "--side-writer"}, "has no side writer"},
		{"register without a key-value store mode", []string{"run", "--workload", "register", "--read-mode", "stale"}, "valid: linearizable, serializable"},
		{"term fencing with lock-append", []string{"run", "--fencing", "term"}, "--fencing term is the election workload's"},
		{"election without a recipe", []string{"run", "--target", "redis", "--workload", "election"}, "target redis has no leader-election recipe"},
		{"election fenced by token", []string{"run", "--workload", "election", "--fencing", "token"}, "fences its log with --fencing term (or none)"},
		{"election on two logs", []string{"run", "--workload", "election", "--resource", "postgres,proxy"}, "appends to one log"},
		{"election with an audit log", []string{"run", "--workload", "election", "--audit-log"}, "--audit-log goes with the lock-append workload"},
		{"election with a side writer", []string{"run", "--workload", "election", "--side-writer"}, "has no side writer"},
		{"malformed duration", []string{"run", "--ttl", "2 seconds"}, "invalid value"},
		{"malformed time limit", []string{"run", "--time-limit", "soon"}, "invalid value"},
		{"zero concurrency", []string{"run", "--concurrency", "0"}, "at least 1"},
		{"sub-second ttl", []string{"run", "--ttl", "1500ms"}, "whole seconds"},
		{"zookeeper ttl under 2 ticks", []string{"run", "--target", "zookeeper", "--ttl", "1s"}, "zookeeper session timeouts are between 2 and 20 ticks (2s to 20s with tickTime 1s); --ttl 1s is not"},
		{"zookeeper ttl over 20 ticks", []string{"run", "--target", "zookeeper", "--ttl", "30s"}, "between 2 and 20 ticks"},
		{"matrix: a zookeeper ttl out of bounds", []string{"matrix", "--target", "etcd,zookeeper", "--ttl", "25s"}, "between 2 and 20 ticks"},
		{"too many nodes", []string{"run", "--nodes", "9"}, "1 to 7 nodes"},
		{"bad name", []string{"run", "--name", "../x"}, "run name"},
		{"stray argument", []string{"run", "etcd"}, "unexpected argument"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"check without dir", []string{"check"}, "one RUN_DIR"},
		{"check of a non-run", []string{"check", "/"}, "not a run directory"},
		{"images verb", []string{"images", "push"}, "images takes build, scratch, list, prune, tags, save DIR or load DIR (build, scratch and tags name KIND[@VERSION]...)"},
		{"images scratch of nothing", []string{"images", "scratch"}, "images scratch names the server"},
		{"images scratch of zookeeper", []string{"images", "scratch", "zookeeper"}, `a scratch image needs a Go-built server (etcd, consul), not "zookeeper"`},
		{"images scratch of Debian's etcd", []string{"images", "scratch", "etcd@debian"}, "etcd@debian is Debian bookworm's etcd-server package, not built from Go source"},
		{"images scratch of an unknown version", []string{"images", "scratch", "consul@0.1"}, `consul has no version "0.1"`},
		{"image: matrix, a version axis", []string{"matrix", "--version", "3.6.16,3.5.35", "--image", "target=etcd:3.6"}, "--image target=etcd:3.6 runs one server build: give one --target and at most one --version"},
		{"image: no kind", []string{"run", "--image", "quay.io/coreos/etcd:v3.6.16"}, `want KIND=IMAGE (target=IMAGE for the lock service's servers), not "quay.io/coreos/etcd:v3.6.16"`},
		{"image: empty reference", []string{"run", "--image", "target="}, "want KIND=IMAGE"},
		{"image: unknown kind", []string{"run", "--image", "sidecar=etcd:3"}, `no image kind "sidecar"`},
		{"image: malformed reference", []string{"run", "--image", "target=Etcd::v3"}, "target=Etcd::v3: not an image reference"},
		{"image: upper case repository", []string{"run", "--image", "target=MyEtcd:3.6"}, "not an image reference"},
		{"image: given twice", []string{"run", "--image", "target=etcd:3.5", "--image", "target=etcd:3.6"}, "target= given twice"},
		{"image: a target that needs fencecheck's", []string{"run", "--target", "zookeeper", "--image", "target=zookeeper:3.8"}, "target zookeeper cannot run from your image (only etcd, consul can)"},
		{"image: matrix, a target axis", []string{"matrix", "--target", "etcd,redis", "--image", "target=etcd:3.6"}, "runs one server build: give one --target"},
		{"image: matrix, a target that needs fencecheck's", []string{"matrix", "--target", "redis", "--image", "target=redis:7.2"}, "target redis cannot run from your image"},
		{"image: scenario, malformed", []string{"run", "--scenario", "etcd-11456", "--image", "target=a b"}, "not an image reference"},
		{"images: an unknown version", []string{"images", "build", "etcd@3.3.0"}, "etcd has no version \"3.3.0\" (available: 3.6.16, 3.7.3, 3.5.35, 3.4.3, debian)"},
		{"images: an unknown kind", []string{"images", "build", "mysql"}, "unknown image \"mysql\""},
		{"unknown version", []string{"run", "--version", "3.3.0"}, "target etcd has no version \"3.3.0\" (available: 3.6.16, 3.7.3, 3.5.35, 3.4.3, debian)"},
		{"a version of a target with one", []string{"run", "--target", "redis", "--version", "7.0.15"}, "target redis runs one version"},
		{"unknown recipe", []string{"run", "--recipe", "paxos"}, "target etcd has no recipe \"paxos\" (available: mutex, lock-rpc)"},
		{"a recipe of a target with one", []string{"run", "--target", "redis", "--recipe", "mutex"}, "target redis has one lock recipe"},
		{"matrix: unknown version in the list", []string{"matrix", "--version", "3.6.16,2.3"}, "target etcd has no version \"2.3\""},
		{"matrix: unknown target in the list", []string{"matrix", "--target", "etcd,chubby"}, "valid: etcd"},
		{"matrix: a cell the target cannot run", []string{"matrix", "--target", "etcd,consul", "--ttl", "2s"}, "consul (nemesis pause-holder, fencing none): bad configuration: consul sessions have a TTL of at least 10s"},
		{"matrix: unknown fencing in the list", []string{"matrix", "--fencing", "none,hope"}, "valid: none, token, cas"},
		{"matrix: unknown nemesis in a cell", []string{"matrix", "--nemesis", "pause-holder", "--nemesis", "meteor"}, "unknown nemesis \"meteor\""},
		{"matrix: unknown workload", []string{"matrix", "--workload", "lock-append,nosuch"}, "unknown workload \"nosuch\" (valid: lock-append, register, election)"},
		{"matrix: registers in weak read modes only", []string{"matrix", "--workload", "register", "--read-mode", "serializable"}, "no cell would be judged"},
		{"matrix: no runs", []string{"matrix", "--runs", "0"}, "between 1 and 100"},
		{"matrix: empty list", []string{"matrix", "--fencing", ","}, "empty list"},
		{"matrix: nothing judged", []string{"matrix", "--fencing", "none"}, "no cell would be judged"},
		{"sweep: a range going down", []string{"sweep", "--pause", "3..0.25"}, "the range must go up"},
		{"sweep: one step", []string{"sweep", "--steps", "1"}, "a range takes 2 to 100 steps"},
		{"sweep: a pause past the bound", []string{"sweep", "--pause", "0.5,80"}, "80 is not in (0, 50] TTLs"},
		{"sweep: a margin of a whole TTL", []string{"sweep", "--margin", "0.25,1"}, "a TTL multiple must be in [0, 1)"},
		{"sweep: a margin past the TTL", []string{"sweep", "--margin", "3s"}, "--margin 3s must be in [0, --ttl 2s)"},
		{"sweep: its own time limit", []string{"sweep", "--time-limit", "10s"}, "--time-limit: the sweep sets it"},
		{"sweep: unknown fencing", []string{"sweep", "--fencing", "none,hope"}, "valid: none, token, cas"},
		{"sweep: a target's bad ttl", []string{"sweep", "--target", "consul", "--ttl", "2s"}, "consul sessions have a TTL of at least 10s"},
		{"sweep: no runs", []string{"sweep", "--runs", "0"}, "between 1 and 100"},
		{"sweep: register workload", []string{"sweep", "--workload", "register"}, "lock-append workload only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			engine := newFakeEngine(t)
			r := runCLI(t, []string{engine.host}, c.args...)
			r.refusedEarly(t, engine, c.want)
		})
	}
}

// noRunWritten checks that a refused command wrote nothing into the
// results directory res (a missing directory is as good): the refusal
// came before any run, which would have made its directory first.
func noRunWritten(t *testing.T, res string) {
	t.Helper()
	ents, err := os.ReadDir(res)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("the refused command wrote %s into %s", e.Name(), res)
	}
}
