package nemesis

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/platform/netdelay"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		spec string
		n    int
		ok   bool
	}{
		{"", 0, true}, {"none", 0, true}, {"pause-holder", 1, true}, {" pause-holder , pause-holder ", 2, true},
		{"pause-holder:leader", 0, false}, {"meteor", 0, false}, {"pause-holder,", 0, false},
	} {
		fs, err := Parse(c.spec)
		if (err == nil) != c.ok || len(fs) != c.n {
			t.Errorf("Parse(%q) = %d faults, %v", c.spec, len(fs), err)
		}
		if err != nil && !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q): %v does not wrap ErrUnknown", c.spec, err)
		}
	}
}

// fakeEnv records signals; its holders come from a channel.
type fakeEnv struct {
	mu      sync.Mutex
	signals []string
	holders chan Holder
	// stopFails: SIGSTOP takes effect but its call returns an error, as
	// when the run's context ends while the engine applies it.
	stopFails bool
	// lease, if set, is Lease (else the TTL, 100ms).
	lease time.Duration
	// stopTakes is how long a SIGSTOP call takes.
	stopTakes time.Duration
	// killFails: a kill takes effect but its call returns an error.
	killFails bool
	// killTakes is how long a kill call takes to return.
	killTakes time.Duration
	// execFails: NetExec fails (and changes nothing).
	execFails bool
	// tiers are the servers' tiers (none: a target of one kind).
	tiers map[string]string
}

func (e *fakeEnv) Lease() time.Duration {
	if e.lease > 0 {
		return e.lease
	}
	return 100 * time.Millisecond
}
func (e *fakeEnv) TTL() time.Duration                     { return 100 * time.Millisecond }
func (e *fakeEnv) Servers() []string                      { return []string{"n1", "n2", "n3"} }
func (e *fakeEnv) Clients() []string                      { return []string{"w1", "w2"} }
func (e *fakeEnv) Tier(node string) string                { return e.tiers[node] }
func (e *fakeEnv) Resources() []string                    { return []string{"pg"} }
func (e *fakeEnv) Leader(context.Context) (string, error) { return "n2", nil }
func (e *fakeEnv) Healthy(context.Context) error          { return nil }
func (e *fakeEnv) Kill(_ context.Context, node string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signals = append(e.signals, "kill "+node)
	time.Sleep(e.killTakes)
	if e.killFails {
		return context.Canceled
	}
	return nil
}
func (e *fakeEnv) Restart(_ context.Context, node string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signals = append(e.signals, "restart "+node)
	return nil
}
func (e *fakeEnv) Addr(node string) string { return "10.0.0." + node[1:] }
func (e *fakeEnv) NetExec(_ context.Context, node string, cmd ...string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signals = append(e.signals, "exec "+node+" "+strings.Join(cmd, " "))
	if e.execFails {
		return "", errors.New("exec failed")
	}
	return "", nil
}
func (e *fakeEnv) SkewProcessClock(context.Context, string, time.Duration) error { return nil }
func (e *fakeEnv) LimitCPU(context.Context, string, float64) error               { return nil }
func (e *fakeEnv) CPUTime(context.Context, string) (time.Duration, error)        { return 0, nil }
func (e *fakeEnv) RateProcessClock(context.Context, string, float64) error       { return nil }
func (e *fakeEnv) ObservedClock(context.Context, string, time.Time) (ClockSeen, error) {
	return ClockSeen{Rate: 1}, nil
}
func (e *fakeEnv) SlowSync(_ context.Context, node string, d time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signals = append(e.signals, "slow-sync "+node+" "+d.String())
	return nil
}
func (e *fakeEnv) LoseUnsynced(_ context.Context, node string) (DiskLoss, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signals = append(e.signals, "lose-unsynced "+node)
	return DiskLoss{Files: 1, Bytes: 100}, nil
}
func (e *fakeEnv) DiskStats(context.Context, string) (DiskStats, error) {
	return DiskStats{Ops: 3, Syncs: 2, Slowed: 1}, nil
}
func (e *fakeEnv) Shape(context.Context, string, netdelay.Policy) error { return nil }
func (e *fakeEnv) Unshape(context.Context, string) (netdelay.Counts, error) {
	return netdelay.Counts{Packets: 10, Held: 5}, nil
}
func (e *fakeEnv) SkewClientClock(context.Context, string, time.Duration) error { return nil }
func (e *fakeEnv) NextHolder(ctx context.Context) (Holder, error) {
	select {
	case h := <-e.holders:
		return h, nil
	case <-ctx.Done():
		return Holder{}, ctx.Err()
	}
}
func (e *fakeEnv) Signal(_ context.Context, node, sig string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signals = append(e.signals, sig+" "+node)
	if sig == "SIGSTOP" {
		time.Sleep(e.stopTakes)
	}
	if e.stopFails && sig == "SIGSTOP" {
		return context.Canceled
	}
	return nil
}

// holder is a holder whose Proceed is recorded among env's signals.
func (e *fakeEnv) holder(node string, p history.Process, token int64) Holder {
	return Holder{Node: node, Process: p, Token: token, Proceed: func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.signals = append(e.signals, "proceed "+node)
		return true
	}}
}

// The schedule pauses the holder for 1.5 to 3 TTLs, lets it proceed only
// once it is paused, resumes it, records both, and leaves nothing paused
// when its context ends mid-fault.
func TestSchedulePausesAndAlwaysResumes(t *testing.T) {
	env := &fakeEnv{holders: make(chan Holder, 10)}
	// The context ends mid-fault when the second holder proceeds (it is
	// paused then): not after a fixed time, which a loaded machine could
	// spend before the first fault ended. 30 s is a safety net.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env.holders <- env.holder("w2", 1, 77)
	second := env.holder("w3", 2, 80)
	proceed := second.Proceed
	second.Proceed = func() bool {
		defer cancel()
		return proceed()
	}
	env.holders <- second
	rec := history.NewMemoryRecorder()
	s := &Schedule{Faults: []Fault{PauseHolder{}}, Interval: time.Millisecond, Seed: 1}
	s.Run(ctx, env, rec)
	env.mu.Lock()
	defer env.mu.Unlock()
	want := []string{"SIGSTOP w2", "proceed w2", "SIGCONT w2", "SIGSTOP w3", "proceed w3", "SIGCONT w3"}
	if len(env.signals) != len(want) {
		t.Fatalf("signals %v, want %v", env.signals, want)
	}
	for i := range want {
		if env.signals[i] != want[i] {
			t.Errorf("signal %d = %s, want %s", i, env.signals[i], want[i])
		}
	}
	faults, err := history.Faults(rec.Events())
	if err != nil || len(faults) != 2 {
		t.Fatalf("faults %v, %v", faults, err)
	}
	for i, f := range faults {
		if hit, _ := f.Aimed(); !hit || f.Holder.Phase != PhaseFailpoint {
			t.Errorf("fault on %v: %+v, want hit at the failpoint", f.Nodes, f.Holder)
		}
		// The first fault is held its whole 1.5-3 TTL (150-300ms, as
		// drawn: its hold param), at least; a busy machine may oversleep,
		// so the upper bound only catches a hold that was not kept (the
		// context's 30 s); the second is cut short when the context ends
		// mid-fault.
		held := time.Duration(f.Stop - f.Start)
		if f.Stop < 0 || held > 10*time.Second {
			t.Errorf("fault on %v held %s, want 1.5-3 TTL (150-300ms)", f.Nodes, held)
		}
		if i == 0 {
			hold := f.Hold.D()
			if hold < 150*time.Millisecond || hold > 300*time.Millisecond || held < hold-10*time.Millisecond {
				t.Errorf("fault on %v: hold %s, held %s; want a hold of 1.5-3 TTL (150-300ms), held in full", f.Nodes, hold, held)
			}
		}
	}
	if _, _, on := s.Active(); on {
		t.Errorf("a fault is still active after Run returned")
	}
}

func TestPauseHolderIsSeeded(t *testing.T) {
	params := func() history.FaultValue {
		env := &fakeEnv{holders: make(chan Holder, 1)}
		env.holders <- Holder{Node: "w1"}
		inj, err := PauseHolder{}.Inject(context.Background(), env, rand.New(rand.NewPCG(42, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return inj.Value("pause-holder")
	}
	a, b := params(), params()
	if a.Hold != b.Hold {
		t.Errorf("same seed, different faults: %v %v", a, b)
	}
}

func TestGrudges(t *testing.T) {
	n3 := []string{"a", "b", "c"}
	n5 := []string{"a", "b", "c", "d", "e"}
	cases := []struct {
		name string
		g    Grudge
		want string
	}{
		{"isolate", Isolate("b", n3), "a drops b; b drops a,c; c drops b"},
		{"halves of 3", Halves(n3), "a drops b,c; b drops a; c drops a"},
		{"halves of 5", Halves(n5), "a drops c,d,e; b drops c,d,e; c drops a,b; d drops a,b; e drops a,b"},
		{"bridge of 5", Bridge(n5), "a drops d,e; b drops d,e; d drops a,b; e drops a,b"},
		{"ring of 5", MajoritiesRing(n5), "a drops d,e; b drops e,a; c drops a,b; d drops b,c; e drops c,d"},
		{"ring of 3", MajoritiesRing(n3), "a drops c; b drops a; c drops b"},
	}
	for _, c := range cases {
		if got := c.g.String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// In a majorities ring every node still sees a majority (itself
	// included), and no two see the same set.
	seen := map[string]bool{}
	for _, x := range n5 {
		visible := len(n5) - len(MajoritiesRing(n5)[x])
		if visible < 3 {
			t.Errorf("%s sees %d of 5", x, visible)
		}
		key := strings.Join(MajoritiesRing(n5)[x], ",")
		if seen[key] {
			t.Errorf("two nodes see the same majority")
		}
		seen[key] = true
	}
}

func TestPartitionAppliesAndFlushesRules(t *testing.T) {
	env := &fakeEnv{}
	inj, err := Partition{Scope: PartLeader}.Inject(context.Background(), env, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if g := inj.Record.(*PartitionRecord).Grudge; g != "n1 drops n2; n2 drops n1,n3; n3 drops n2" && g != "n1 drops n2; n2 drops n3,n1; n3 drops n2" {
		t.Errorf("grudge %q does not isolate the leader n2", g)
	}
	if err := inj.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	env.mu.Lock()
	defer env.mu.Unlock()
	var adds, flushes, counted int
	for _, s := range env.signals {
		adds += strings.Count(s, "-A INPUT")
		if strings.Contains(s, "-F INPUT") {
			flushes++
		}
		if strings.Contains(s, "-L INPUT") && flushes == 0 {
			counted++ // the drops are counted before the rules go
		}
	}
	if adds != 4 || flushes != 3 || counted != 3 {
		t.Errorf("%d rules added, %d nodes counted, %d flushes; want 4, 3 and 3: %v", adds, counted, flushes, env.signals)
	}
	if d := inj.Record.(*PartitionRecord).Dropped; d == nil || *d != 0 {
		t.Errorf("dropped %v, want the 0 the fake's counters show", d)
	}
}

func TestScopes(t *testing.T) {
	env := &fakeEnv{}
	r := rand.New(rand.NewPCG(3, 4))
	for scope, n := range map[string]int{ScopeOne: 1, ScopeLeader: 1, ScopeMinority: 1, ScopeMajority: 2, ScopeAll: 3} {
		got, err := pickServers(context.Background(), env, r, scope)
		if err != nil || len(got) != n {
			t.Errorf("%s: %v %v, want %d servers", scope, got, err, n)
		}
	}
	if got, _ := pickServers(context.Background(), env, r, ScopeLeader); got[0] != "n2" {
		t.Errorf("leader scope picked %v", got)
	}
	for _, spec := range []string{"kill:majority", "partition:all", "netem:jitter", "clock-skew:both"} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q): no error", spec)
		}
	}
	fs, err := Parse("pause-server,kill:leader,partition:majorities-ring,partition-client,clock-skew:server,netem:loss,pause-client")
	if err != nil || len(fs) != 7 {
		t.Fatalf("Parse of every fault: %d, %v", len(fs), err)
	}
	if fs[0].Name() != "pause-server:one" {
		t.Errorf("default scope: %s", fs[0].Name())
	}
}

// A fault whose call fails after it took effect, or may have (a SIGSTOP or
// a SIGKILL whose call the run's end cut short: seen in CI, a kill:resource
// that killed PostgreSQL and was missing from the history), is recorded as
// a fault cut short, its error at its start, and healed at once: every
// node it stopped is resumed, every node it killed restarted. A fault that
// broke nothing is not recorded.
func TestFaultsCutShortAreRecordedAndHealed(t *testing.T) {
	for _, tc := range []struct {
		f    Fault
		env  func() *fakeEnv
		want []string // the calls, in order
	}{
		{PauseHolder{}, func() *fakeEnv { return &fakeEnv{stopFails: true} }, []string{"SIGSTOP w1", "proceed w1", "SIGCONT w1"}},
		{PauseClient{}, func() *fakeEnv { return &fakeEnv{stopFails: true} }, nil},
		{PauseServer{Scope: "leader"}, func() *fakeEnv { return &fakeEnv{stopFails: true} }, []string{"SIGSTOP n2", "SIGCONT n2"}},
		{KillHolder{}, func() *fakeEnv { return &fakeEnv{killFails: true} }, []string{"kill w1", "proceed w1", "restart w1"}},
		{Kill{Scope: "leader"}, func() *fakeEnv { return &fakeEnv{killFails: true} }, []string{"kill n2", "restart n2"}},
		{Kill{Scope: "resource"}, func() *fakeEnv { return &fakeEnv{killFails: true} }, []string{"kill pg", "restart pg"}},
	} {
		t.Run(tc.f.Name(), func(t *testing.T) {
			env := tc.env()
			env.holders = make(chan Holder, 1)
			env.holders <- env.holder("w1", 0, 7)
			rec := history.NewMemoryRecorder()
			s := &Schedule{Faults: []Fault{tc.f}, Seed: 1}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if !s.inject(ctx, env, rec, rand.New(rand.NewPCG(1, 1)), slog.New(slog.DiscardHandler), tc.f, nil) {
				t.Fatal("not in effect although its call may have taken effect")
			}
			if _, _, on := s.Active(); !on {
				t.Fatal("not the active fault")
			}
			s.heal(env, rec, slog.New(slog.DiscardHandler))
			env.mu.Lock()
			calls := slices.Clone(env.signals)
			env.mu.Unlock()
			if tc.want != nil && !slices.Equal(calls, tc.want) {
				t.Errorf("calls %v, want %v", calls, tc.want)
			}
			var stopped, resumed []string
			for _, c := range calls {
				if node, ok := strings.CutPrefix(c, "SIGSTOP "); ok {
					stopped = append(stopped, node)
				}
				if node, ok := strings.CutPrefix(c, "SIGCONT "); ok {
					resumed = append(resumed, node)
				}
			}
			if !slices.Equal(stopped, resumed) {
				t.Errorf("stopped %v, resumed %v; want every stopped node resumed", stopped, resumed)
			}
			faults, err := history.Faults(rec.Events())
			if err != nil || len(faults) != 1 {
				t.Fatalf("faults %+v, %v; want the one cut short", faults, err)
			}
			f := faults[0]
			if f.Fault != tc.f.Name() || len(f.Nodes) != 1 || f.Stop < f.Start || !strings.HasPrefix(f.Error, "cut short: ") || !strings.Contains(f.Error, "context canceled") {
				t.Errorf("recorded %+v; want %s on one node, stopped, its error \"cut short: ... context canceled\"", f, tc.f.Name())
			}
		})
	}
	// A partition whose first rule failed broke nothing: not recorded.
	t.Run("nothing broken", func(t *testing.T) {
		env := &fakeEnv{execFails: true}
		rec := history.NewMemoryRecorder()
		s := &Schedule{Seed: 1}
		f := Partition{Scope: "leader"}
		if s.inject(context.Background(), env, rec, rand.New(rand.NewPCG(1, 1)), slog.New(slog.DiscardHandler), f, nil) {
			t.Error("in effect although it broke nothing")
		}
		if faults, _ := history.Faults(rec.Events()); len(faults) != 0 {
			t.Errorf("recorded %+v", faults)
		}
	})
}

// The nodes whose network helpers a schedule needs: each fault that changes
// the network names its nodes, once each; the other faults none.
func TestNetNodes(t *testing.T) {
	env := &fakeEnv{}
	for _, tc := range []struct {
		nemesis string
		want    string
	}{
		{"pause-holder,kill,clock-skew:server", ""},
		{"partition:leader", "n1,n2,n3"},
		{"partition:resource", "pg"},
		{"partition-client,netem:loss", "w1,w2,n1,n2,n3"},
		{"netem:delay,partition:halves,partition-client", "n1,n2,n3,w1,w2"},
	} {
		faults, err := Parse(tc.nemesis)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(NetNodes(faults, env), ","); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.nemesis, got, tc.want)
		}
	}
}

// A holder that had given up waiting at its failpoint before its fault
// was in place is recorded as missed (hit false), so that no verdict is
// read into a fault that did not land inside a critical section.
func TestMissedHolderIsRecordedAsMissed(t *testing.T) {
	for _, f := range []Fault{PauseHolder{}, PartitionClient{}} {
		t.Run(f.Name(), func(t *testing.T) {
			env := &fakeEnv{holders: make(chan Holder, 1)}
			h := env.holder("w1", 0, 5)
			h.Proceed = func() bool { return false } // it went on without us
			env.holders <- h
			inj, err := f.Inject(context.Background(), env, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if hit, aimed := inj.Value(f.Name()).Aimed(); hit || !aimed {
				t.Errorf("holder %+v: want hit false", inj.Holder)
			}
			if err := inj.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseClocks(t *testing.T) {
	for spec, want := range map[string]string{
		"clock-skew":               "clock-skew:client",
		"clock-skew:wall":          "clock-skew:wall",
		"clock-skew:wall:+1h":      "clock-skew:wall:+1h0m0s",
		"clock-skew:wall:-90s":     "clock-skew:wall:-1m30s",
		"clock-rate":               "clock-rate:client",
		"clock-rate:server":        "clock-rate:server",
		"clock-rate:client:x0.125": "clock-rate:client:x0.125",
		"clock-rate:server:x3":     "clock-rate:server:x3",
	} {
		fs, err := Parse(spec)
		if err != nil || len(fs) != 1 || fs[0].Name() != want {
			t.Errorf("Parse(%q) = %v, %v; want %s", spec, fs, err, want)
			continue
		}
		// A name parses back to the same fault (rerun, matrix identities).
		if again, err := Parse(fs[0].Name()); err != nil || again[0] != fs[0] {
			t.Errorf("%s does not parse back: %v, %v", fs[0].Name(), again, err)
		}
	}
	for _, spec := range []string{
		"clock-skew:server:+1h", "clock-skew:client:+1h", "clock-skew:wall:0s", "clock-skew:wall:48h",
		"clock-skew:wall:soon", "clock-skew:sundial", "clock-rate:x0.5", "clock-rate:client:0.5",
		"clock-rate:client:x1", "clock-rate:client:x0", "clock-rate:client:x200", "clock-rate:client:xNaN",
		"clock-rate:wall",
	} {
		if _, err := Parse(spec); err == nil || !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q) = %v, want an ErrUnknown", spec, err)
		}
	}
}

func TestParseCPUThrottle(t *testing.T) {
	for spec, want := range map[string]CPUThrottle{
		"cpu-throttle":                    {Scope: ScopeHolder},
		"cpu-throttle:holder:2%":          {Scope: ScopeHolder, Percent: 2},
		"cpu-throttle:leader":             {Scope: ScopeLeader},
		"cpu-throttle:one@etcd:2.5%":      {Scope: "one@etcd", Percent: 2.5},
		"cpu-throttle:resource:50%":       {Scope: ScopeResource, Percent: 50},
		"cpu-throttle:minority@apiserver": {Scope: "minority@apiserver"},
	} {
		parsesTo(t, spec, want)
	}
	for _, spec := range []string{
		"cpu-throttle:holder:2", "cpu-throttle:holder:0.5%", "cpu-throttle:holder:95%", "cpu-throttle:client",
		"cpu-throttle:resource@etcd", "cpu-throttle:holder:NaN%",
	} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) was taken", spec)
		}
	}
}

func TestParseDiskAndNetemFaults(t *testing.T) {
	for spec, want := range map[string]Fault{
		"kill":                           Kill{Scope: ScopeOne},
		"kill:lose-unsynced":             Kill{Scope: ScopeAll, LoseUnsynced: true},
		"kill:one:lose-unsynced":         Kill{Scope: ScopeOne, LoseUnsynced: true},
		"kill:leader@etcd:lose-unsynced": Kill{Scope: "leader@etcd", LoseUnsynced: true},
		"kill:resource:lose-unsynced":    Kill{Scope: ScopeResource, LoseUnsynced: true},
		"disk-slow":                      DiskSlow{Scope: ScopeOne},
		"disk-slow:leader:500ms":         DiskSlow{Scope: ScopeLeader, Delay: 500 * time.Millisecond},
		"disk-slow:resource":             DiskSlow{Scope: ScopeResource},
	} {
		if !parsesTo(t, spec, want) {
			continue
		}
		fs, _ := Parse(spec)
		if df, ok := fs[0].(DiskFault); !ok || df.NeedsDisk() != (spec != "kill") {
			t.Errorf("%s: NeedsDisk wrong", spec)
		}
	}
	for _, spec := range []string{
		"kill:lose-unsynced:one", "kill:bogus:lose-unsynced", "kill:lose", "disk-slow:holder", "disk-slow:one:0s",
		"disk-slow:one:2m", "disk-slow:one:fast", "disk-slow:resource@etcd",
	} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) was taken", spec)
		}
	}
	for spec, want := range map[string]Fault{
		"netem":                             Netem{Mode: NetemDelay, Scope: NetemServers},
		"netem:loss":                        Netem{Mode: NetemLoss, Scope: NetemServers},
		"netem:duplicate:client":            Netem{Mode: NetemDuplicate, Scope: NetemClient},
		"netem:rate:resource":               Netem{Mode: NetemRate, Scope: ScopeResource},
		"netem:corrupt:servers":             Netem{Mode: NetemCorrupt, Scope: NetemServers},
		"netem:reorder":                     Netem{Mode: NetemReorder, Scope: NetemServers},
		"partition-client:replies:resource": PartitionClient{Mode: CutReplies, Resource: true},
		"partition-client:both:resource":    PartitionClient{Resource: true},
		"partition-client:reset":            PartitionClient{Mode: CutReset},
	} {
		parsesTo(t, spec, want)
	}
	for _, spec := range []string{"netem:jitter", "netem:delay:leader", "netem:rate:client:1mbit", "partition-client:both:servers", "partition-client:resource"} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) was taken", spec)
		}
	}
	if NeedsDisk([]Fault{Kill{Scope: ScopeOne}, PauseClient{}}) {
		t.Error("a plain kill needs no lazy disk")
	}
}

// parsesTo reports whether spec parses to want alone, and want's name
// parses back to it (an error says which did not).
func parsesTo(t *testing.T, spec string, want Fault) bool {
	t.Helper()
	fs, err := Parse(spec)
	if err != nil || len(fs) != 1 || fs[0] != want {
		t.Errorf("Parse(%q) = %v, %v; want %v", spec, fs, err, want)
		return false
	}
	if again, err := Parse(fs[0].Name()); err != nil || again[0] != fs[0] {
		t.Errorf("%s does not parse back: %v, %v", fs[0].Name(), again, err)
		return false
	}
	return true
}

// A fault records how long its injection took (took): its start is recorded
// once it is in place, so a kill whose Engine call lagged took effect up to
// that long before its recorded start.
func TestFaultRecordsItsInjectionTime(t *testing.T) {
	env := &fakeEnv{killTakes: 150 * time.Millisecond}
	rec := history.NewMemoryRecorder()
	s := &Schedule{Faults: []Fault{Kill{Scope: ScopeLeader}}, Interval: 10 * time.Millisecond, Seed: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s.Run(ctx, env, rec)
	faults, err := history.Faults(rec.Events())
	if err != nil {
		t.Fatal(err)
	}
	if len(faults) == 0 {
		t.Fatal("no fault injected")
	}
	if took := faults[0].Took.D(); took < 150*time.Millisecond {
		t.Errorf("took %s, want at least the kill call's 150ms", took)
	}
	if got := faults[0].Shown()["took"]; got == "" {
		t.Errorf("the faults table shows no took: %v", faults[0].Shown())
	}
}
