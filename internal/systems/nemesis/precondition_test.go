package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/platform/netdelay"
)

// shapedEnv is a fakeEnv of a given shape: its servers, its resource
// containers, a server clock that cannot be skewed when clock is set, and
// no lazy disks when disk is set.
type shapedEnv struct {
	*fakeEnv
	servers, resources []string
	clock, disk        error
}

func (e *shapedEnv) SlowSync(ctx context.Context, node string, d time.Duration) error {
	if e.disk != nil {
		return e.disk
	}
	return e.fakeEnv.SlowSync(ctx, node, d)
}
func (e *shapedEnv) LoseUnsynced(ctx context.Context, node string) (DiskLoss, error) {
	if e.disk != nil {
		return DiskLoss{}, e.disk
	}
	return e.fakeEnv.LoseUnsynced(ctx, node)
}
func (e *shapedEnv) DiskStats(ctx context.Context, node string) (DiskStats, error) {
	if e.disk != nil {
		return DiskStats{}, e.disk
	}
	return e.fakeEnv.DiskStats(ctx, node)
}

func (e *shapedEnv) Servers() []string   { return e.servers }
func (e *shapedEnv) Resources() []string { return e.resources }
func (e *shapedEnv) Leader(context.Context) (string, error) {
	return e.servers[len(e.servers)-1], nil
}
func (e *shapedEnv) SkewProcessClock(context.Context, string, time.Duration) error { return e.clock }
func (e *shapedEnv) RateProcessClock(context.Context, string, float64) error       { return e.clock }

// allFaults is every fault of the table, with each of its scopes, and
// each followed by the second parts some faults take (netem:corrupt:client,
// partition-client:replies:resource, kill:one:lose-unsynced).
func allFaults(t *testing.T) []Fault {
	t.Helper()
	var out []Fault
	for _, e := range table {
		for _, sc := range append([]string{""}, e.Scopes...) {
			for _, then := range []string{"", ":" + ScopeResource, ":" + NetemClient, ":" + LoseUnsynced} {
				if sc == "" && then != "" {
					continue
				}
				f, err := e.New(sc + then)
				if err != nil {
					continue // a parameter, not a scope (pause-holder's xM)
				}
				out = append(out, f)
			}
		}
	}
	if len(out) < 25 {
		t.Fatalf("only %d faults and scopes in the table", len(out))
	}
	return out
}

// A fault's precondition says exactly what its injection finds: for every
// fault and scope of the table and every shape of run (1 to 3 servers, a
// resource container or none, a server clock that can be skewed or not,
// lazy disks or none), Applies returns nil if and only if Inject into a run
// of that shape succeeds; a fault without a precondition injects into every
// shape.
func TestPreconditionsMatchInjection(t *testing.T) {
	noClock := errors.New("vdso: clock skew unsupported on plan9/mips")
	noDisk := errors.New("a lazy disk needs FUSE: open /dev/fuse: no such file or directory")
	for _, f := range allFaults(t) {
		p, hasPre := f.(Precondition)
		for servers := 1; servers <= 3; servers++ {
			for _, containers := range [][]string{nil, {"pg"}} {
				for _, clock := range []error{nil, noClock} {
					disk := noDisk
					if clock == nil {
						disk = nil // one dimension for both: they fail alike
					}
					s := Shape{Target: "etcd", Servers: servers, Resources: []string{"lock-store"}, ProcessClock: clock, Disk: disk, ServerData: true}
					env := &shapedEnv{fakeEnv: &fakeEnv{holders: make(chan Holder, 1)}, clock: clock, disk: disk}
					for i := 1; i <= servers; i++ {
						env.servers = append(env.servers, fmt.Sprintf("n%d", i))
					}
					if containers != nil {
						s.Resources, s.Containers, env.resources = []string{"postgres"}, []string{"postgres"}, containers
						s.DataContainers = s.Containers
					}
					env.holders <- env.fakeEnv.holder("w1", 0, 7)
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, injErr := f.Inject(ctx, env, rand.New(rand.NewPCG(1, 2)))
					cancel()
					var pre error
					if hasPre {
						pre = p.Applies(s)
					}
					what := fmt.Sprintf("%s on %d servers, containers %v, clock error %v", f.Name(), servers, containers, clock)
					switch {
					case pre == nil && injErr != nil:
						t.Errorf("%s: applies, but Inject failed: %v", what, injErr)
					case pre != nil && injErr == nil:
						t.Errorf("%s: does not apply (%v), but Inject succeeded", what, pre)
					case pre != nil && !errors.Is(pre, ErrCannotApply):
						t.Errorf("%s: %v does not wrap ErrCannotApply", what, pre)
					}
				}
			}
		}
	}
}

// Each precondition says why, in words the user can act on.
func TestPreconditionMessages(t *testing.T) {
	lockStore := Shape{Target: "redis", Servers: 1, Resources: []string{"lock-store"}}
	for _, c := range []struct {
		spec  string
		shape Shape
		want  []string
	}{
		{"partition:resource", lockStore, []string{"--nemesis partition:resource: cannot apply to this run", "(lock-store) have none", "--resource postgres or proxy"}},
		{"kill:resource", lockStore, []string{"--nemesis kill:resource", "(lock-store) have none"}},
		{"pause-server:resource", lockStore, []string{"--nemesis pause-server:resource", "(lock-store) have none"}},
		{"partition", lockStore, []string{"--nemesis partition:one", "a partition between servers needs 2 servers; this redis run has 1 (--nodes)"}},
		{"partition:bridge", Shape{Target: "etcd", Servers: 2}, []string{"a bridge needs 3 servers; this etcd run has 2"}},
		{"kill:minority", lockStore, []string{"--nemesis kill:minority", "a minority of servers needs 3 servers"}},
		{"clock-skew:server", Shape{Servers: 3, ProcessClock: errors.New("vdso: clock skew unsupported on darwin/arm64")},
			[]string{"--nemesis clock-skew:server", "a process's clock cannot be skewed here: vdso: clock skew unsupported on darwin/arm64"}},
		{"clock-rate:client:x0.5", Shape{Servers: 3, ProcessClock: errors.New("vdso: clock skew unsupported on darwin/arm64")},
			[]string{"--nemesis clock-rate:client:x0.5", "a process's clock rate cannot be changed here"}},
		{"clock-skew:wall", Shape{Servers: 3, ProcessClock: errors.New("vdso: clock skew unsupported on darwin/arm64")},
			[]string{"--nemesis clock-skew:wall", "a process's clock cannot be skewed here"}},
		{"kill:lose-unsynced", Shape{Target: "redis-sentinel", Servers: 5, ServerData: false},
			[]string{"--nemesis kill:all:lose-unsynced", "the servers of target redis-sentinel name no data directory"}},
		{"disk-slow", Shape{Target: "etcd", Servers: 3, ServerData: true, Disk: errors.New("mounting a lazy disk (FUSE) needs root; fencecheck runs as uid 1000")},
			[]string{"--nemesis disk-slow:one", "needs root"}},
		{"disk-slow:resource", Shape{Target: "etcd", Servers: 1, ServerData: true, Resources: []string{"proxy"}, Containers: []string{"proxy"}},
			[]string{"--nemesis disk-slow:resource", "the resource's container (proxy) names no data directory"}},
		{"kill:resource:lose-unsynced", lockStore, []string{"(lock-store) have none"}},
		{"netem:corrupt:resource", lockStore, []string{"--nemesis netem:corrupt:resource", "(lock-store) have none"}},
	} {
		fs, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckApplies(fs, c.shape)
		if !errors.Is(err, ErrCannotApply) {
			t.Errorf("%s: %v, want ErrCannotApply", c.spec, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.spec, err, w)
			}
		}
	}
	// Every fault that cannot apply is named, and only those.
	fs, err := Parse("pause-holder,partition:resource,kill:leader,clock-skew:client,netem,kill:resource")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckApplies(fs, lockStore)
	if err == nil || strings.Count(err.Error(), "--nemesis ") != 2 || !strings.Contains(err.Error(), "kill:resource") {
		t.Errorf("two faults that cannot apply: %v", err)
	}
	if err := CheckApplies(fs[:1], lockStore); err != nil {
		t.Errorf("pause-holder on one redis: %v", err)
	}
	if err := CheckApplies(fs, Shape{Servers: 3, Containers: []string{"postgres"}}); err != nil {
		t.Errorf("every fault on 3 servers and a postgres: %v", err)
	}
}

// foreignEnv is a shapedEnv whose servers are not fencecheck's (a run
// attached with --endpoints): every action on a server fails, as the
// harness's does, for a server has no container of fencecheck's.
type foreignEnv struct{ *shapedEnv }

var errForeign = errors.New("server not fencecheck's")

func (e foreignEnv) server(node string) error {
	if strings.HasPrefix(node, "n") {
		return fmt.Errorf("%s: %w", node, errForeign)
	}
	return nil
}
func (e foreignEnv) Signal(ctx context.Context, node, sig string) error {
	if err := e.server(node); err != nil {
		return err
	}
	return e.shapedEnv.Signal(ctx, node, sig)
}
func (e foreignEnv) Kill(ctx context.Context, node string) error {
	if err := e.server(node); err != nil {
		return err
	}
	return e.shapedEnv.Kill(ctx, node)
}
func (e foreignEnv) NetExec(ctx context.Context, node string, cmd ...string) (string, error) {
	if err := e.server(node); err != nil {
		return "", err
	}
	return e.shapedEnv.NetExec(ctx, node, cmd...)
}
func (e foreignEnv) Shape(ctx context.Context, node string, p netdelay.Policy) error {
	if err := e.server(node); err != nil {
		return err
	}
	return e.shapedEnv.Shape(ctx, node, p)
}
func (e foreignEnv) SkewProcessClock(ctx context.Context, node string, d time.Duration) error {
	if err := e.server(node); err != nil {
		return err
	}
	return e.shapedEnv.SkewProcessClock(ctx, node, d)
}
func (e foreignEnv) RateProcessClock(ctx context.Context, node string, r float64) error {
	if err := e.server(node); err != nil {
		return err
	}
	return e.shapedEnv.RateProcessClock(ctx, node, r)
}
func (e foreignEnv) LimitCPU(ctx context.Context, node string, cpus float64) error {
	if err := e.server(node); err != nil {
		return err
	}
	return e.shapedEnv.LimitCPU(ctx, node, cpus)
}
func (e foreignEnv) SlowSync(ctx context.Context, node string, d time.Duration) error {
	if err := e.server(node); err != nil {
		return err
	}
	return e.shapedEnv.SlowSync(ctx, node, d)
}

// In a run attached to servers that are not fencecheck's (Shape.Foreign),
// a fault applies if and only if its injection acts on no server: every
// fault and scope of the table is injected into an env whose servers
// refuse every action, and Applies must say beforehand which will fail,
// naming why.
func TestForeignServersRefuseServerFaults(t *testing.T) {
	const why = "the servers at https://s1:2379 are not fencecheck's (--endpoints)"
	allowed, refused := 0, 0
	for _, f := range allFaults(t) {
		s := Shape{Target: "etcd", Servers: 3, Resources: []string{"postgres"}, Containers: []string{"postgres"},
			DataContainers: []string{"postgres"}, ServerData: true, Foreign: why}
		env := foreignEnv{&shapedEnv{fakeEnv: &fakeEnv{holders: make(chan Holder, 1)}, servers: []string{"n1", "n2", "n3"}, resources: []string{"pg"}}}
		env.holders <- env.fakeEnv.holder("w1", 0, 7)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, injErr := f.Inject(ctx, env, rand.New(rand.NewPCG(1, 2)))
		cancel()
		var pre error
		if p, ok := f.(Precondition); ok {
			pre = p.Applies(s)
		}
		switch {
		case pre == nil && injErr != nil:
			t.Errorf("%s: applies to foreign servers, but Inject failed: %v", f.Name(), injErr)
		case pre != nil && injErr == nil:
			t.Errorf("%s: refused (%v), but Inject touched no server", f.Name(), pre)
		case pre != nil && !errors.Is(injErr, errForeign):
			t.Errorf("%s: refused, and Inject failed for another reason: %v", f.Name(), injErr)
		case pre != nil && !strings.Contains(pre.Error(), why):
			t.Errorf("%s: %v does not say why", f.Name(), pre)
		case pre != nil:
			refused++
		default:
			allowed++
		}
	}
	if allowed < 10 || refused < 10 {
		t.Errorf("%d faults allowed and %d refused: the table should have many of each", allowed, refused)
	}
}
