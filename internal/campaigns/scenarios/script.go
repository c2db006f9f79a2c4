// Package scenarios holds fencecheck's scripted runs: the demos (the seed's
// stories, told on a real cluster) and the regression scenarios (one per
// known bug), each a file with its line in Demos or Regressions. A script
// starts a cluster with the engine (package harness), drives its clients
// one operation at a time, checks that its scenario took place as
// scripted (else harness.ErrNotSetUp, and it is played again), and records
// and checks each story like a run. The engine does not import this
// package.
//
// A script's timings come from the target's profile (targets.ProfileOf,
// through harness.Config.Defaults): its TTL, lock-delay and ready timeout,
// and from them the longest lease (targets.MaxLease) its waits are derived
// from, so that every target that has the script's recipe can tell it.
package scenarios

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Attempts is how many times a scripted story (a demo's story, a
// regression scenario) is played before it gives up with
// harness.ErrNotSetUp.
const Attempts = 3

// Config configures a scripted run.
type Config struct {
	// Engine is the container platform the script's cluster runs on
	// (harness.ClusterConfig.Engine): the caller's, which it closes after
	// the script returns. Required.
	Engine runtime.Engine
	Target targets.Target
	// Resource is what the lock protects (the target's lock-store).
	Resource resources.Resource
	Nodes    int
	// TTL is the lease TTL; 0 is the target's profile's.
	TTL time.Duration
	// LockDelay is the lock-delay (targets that have one); nil is the
	// target's profile's.
	LockDelay *time.Duration
	// ReadyTimeout bounds the cluster's start; 0 is the target's
	// profile's.
	ReadyTimeout time.Duration
	Fencings     []targets.Fencing // a demo's stories, in order (default: the demo's)
	Results      string
	WorkerBinary string
	Log          *slog.Logger
	Stage        func(format string, args ...any)
	// Out receives the stories' timelines as they happen.
	Out io.Writer
	// Script names the script in test.json and the stories' run names
	// (SCRIPT-FENCING); each script sets its own.
	Script string
	// Recipe is the target's lock recipe ("" its default).
	Recipe string
	// TargetImage is the user's server image ("": fencecheck's), as in
	// harness.ClusterConfig.
	TargetImage string
}

// Timings are a script's settings, from its Config and the target's
// profile.
type Timings struct {
	// Client is the workers' client configuration (TTL, lock-delay, RPC
	// timeout, recipe).
	Client targets.ClientConfig
	// Lease is the longest the lock stays unavailable after its holder's
	// last renewal (targets.MaxLease): Consul's 2 TTL + 1 s, ZooKeeper's
	// TTL + 2 ticks, etcd's TTL.
	Lease time.Duration
	// Margin is the lease check's margin (TTL/4, as a run's).
	Margin time.Duration
	// ReadyTimeout bounds the cluster's start.
	ReadyTimeout time.Duration
}

// timings fills cfg's zero TTL, lock-delay and ready timeout from the
// target's profile, as a run's (harness.Config.Defaults), and derives the
// script's timings from them; it validates the client configuration
// against the target (errors wrap targets.ErrBadConfig) and the resource.
func (cfg *Config) timings() (Timings, error) {
	if cfg.Resource == nil {
		return Timings{}, fmt.Errorf("%w: the script needs a resource", targets.ErrBadConfig)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	d := harness.Config{Target: cfg.Target, Spec: spec.Spec{TTL: cfg.TTL, LockDelay: cfg.LockDelay, ReadyTimeout: cfg.ReadyTimeout}}
	d.Defaults()
	cfg.TTL, cfg.LockDelay, cfg.ReadyTimeout = d.TTL, d.LockDelay, d.ReadyTimeout
	client := targets.ClientConfig{TTL: cfg.TTL, LockDelay: cfg.LockDelay, RPCTimeout: max(2*time.Second, cfg.TTL), Recipe: cfg.Recipe}
	if err := cfg.Target.Validate(client); err != nil {
		return Timings{}, err
	}
	return Timings{Client: client, Lease: targets.MaxLease(cfg.Target, client), Margin: d.Margin, ReadyTimeout: cfg.ReadyTimeout}, nil
}

// start starts the script's cluster: the target's servers, the resource
// (unfenced until a story fences it) and workers running workload w; with
// net, the network helpers of a story that changes a node's network
// (harness.ClusterConfig.NetHelpers).
func (cfg Config) start(ctx context.Context, tm Timings, workers int, w workloads.Workload, work workloads.Config, failpoint time.Duration, net bool) (*harness.Cluster, error) {
	return harness.StartCluster(ctx, harness.ClusterConfig{
		Engine: cfg.Engine, Target: cfg.Target, Nodes: cfg.Nodes, Workers: workers, Client: tm.Client,
		Workload: w, Config: work, NetHelpers: net,
		Resources:    []harness.ResourceUse{{Resource: cfg.Resource, Fencing: targets.FencingNone}},
		WorkerBinary: cfg.WorkerBinary, ReadyTimeout: tm.ReadyTimeout, Log: cfg.Log, Stage: cfg.Stage,
		TargetImage: cfg.TargetImage, FailpointTimeout: failpoint,
	})
}

// script drives one story: its events arrive on a channel as recorded.
type script struct {
	cl  *harness.Cluster
	rec *history.Recorder
	run *store.Run
	// nemesis is test.json's nemesis of the story.
	nemesis string
	events  chan history.Event
	out     io.Writer
	names   map[history.Process]string
	// clients are the story's workers, process i's at i.
	clients []harness.ScriptedClient
}

func (s *script) say(who, format string, args ...any) {
	fmt.Fprintf(s.out, "  %6.2fs  %-7s %s\n", s.rec.Since().Seconds(), who, fmt.Sprintf(format, args...))
}

// wait returns the next event of process p that is a phase named phase, or
// its completion (phase ""), skipping others; it fails after d.
func (s *script) wait(ctx context.Context, p history.Process, phase string, d time.Duration) (history.Event, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case e := <-s.events:
			if e.Process != p {
				continue
			}
			if (phase == "" && e.Type.Completes()) || (e.Type == history.Phase && e.F == phase) {
				return e, nil
			}
		case <-t.C:
			want := phase
			if want == "" {
				want = "completion"
			}
			return history.Event{}, fmt.Errorf("%w: %s of %s did not come within %s", harness.ErrHarness, want, s.names[p], d)
		case <-ctx.Done():
			return history.Event{}, ctx.Err()
		}
	}
}

// phase waits for p's next phase named name (script.wait) and decodes its
// value into a T.
func phase[T any](ctx context.Context, s *script, p history.Process, name string, d time.Duration) (T, history.Event, error) {
	var v T
	e, err := s.wait(ctx, p, name, d)
	if err != nil {
		return v, e, err
	}
	_ = e.Decode(&v)
	return v, e, nil
}

// beginStory starts one story: its run directory and recorder (whose
// events the script reads as they are recorded), the resource reset, and
// the workers connected afresh with the resource's fencing f
// (harness.Cluster.Reconnect); names name the story's processes.
func beginStory(ctx context.Context, cl *harness.Cluster, cfg Config, f targets.Fencing, work workloads.Config, names map[history.Process]string) (*script, error) {
	run, err := store.NewRun(cfg.Results, cfg.Script+"-"+string(f), time.Now())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	events := make(chan history.Event, 1024)
	rec, err := history.NewRecorder(run.Path(store.HistoryFile), func(e history.Event) {
		select {
		case events <- e:
		default: // the script reads every event it needs long before 1024 pile up
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	s := &script{cl: cl, rec: rec, run: run, events: events, out: cfg.Out, names: names}
	if err := cl.Reconnect(ctx, rec, work, f); err != nil {
		rec.Close()
		return nil, err
	}
	for i := range names {
		c, err := cl.Scripted(int(i))
		if err != nil {
			rec.Close()
			return nil, err
		}
		for len(s.clients) <= int(i) {
			s.clients = append(s.clients, harness.ScriptedClient{})
		}
		s.clients[i] = c
	}
	return s, nil
}

// finish ends a story: the final read of the resource, recorded; the
// history checked with workload w; test.json, results and report written.
// It returns the final list and the results.
func (s *script) finish(ctx context.Context, cfg Config, f targets.Fencing, w workloads.Workload, concurrency int, aWork, margin time.Duration) ([]int64, *store.Results, error) {
	cl, rec, run := s.cl, s.rec, s.run
	rec.Record(harness.FinalReadProcess, history.Invoke, lockappend.FFinalRead, nil)
	fs, err := cl.Host().Resources[0].Store.Read(ctx, resources.Access{Fencing: targets.FencingNone})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: final read: %w", harness.ErrHarness, err)
	}
	final := fs.List
	if final == nil {
		final = []int64{}
	}
	rec.Record(harness.FinalReadProcess, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: final})
	if err := rec.Close(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	res, err := harness.Check(run, w, rec.Events(), concurrency, 10*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", harness.ErrHarness, cfg.Script, err)
	}
	test := store.TestInfo{
		Spec: spec.Spec{Name: cfg.Script + "-" + string(f), Target: cfg.Target.Name(), Recipe: cfg.Recipe, Workload: w.Name(),
			Fencing: string(f), Nemesis: s.nemesis, Resource: []string{cfg.Resource.Name()},
			WorkerKnobs: spec.WorkerKnobs{Concurrency: concurrency, Work: aWork, Margin: margin}, Nodes: cfg.Nodes, TTL: cfg.TTL},
		Found: store.Found{RunID: cl.RunID, Started: rec.Start().UTC(), HistoryStarted: rec.Start().UTC(), Scripted: cfg.Script,
			Resources: []store.ResourceInfo{{Name: cfg.Resource.Name(), Fencing: string(f)}},
			Images:    cl.Images, ImageIDs: cl.ImageIDs, ClusterReady: cl.Ready.Round(time.Millisecond).String()}}
	test.SetFencecheck()
	test.TargetVersion = cl.TargetVersion()
	if err := run.WriteJSON(store.TestFile, test); err != nil {
		return nil, nil, err
	}
	if err := harness.WriteResults(run, test, res, rec.Events(), w); err != nil {
		return nil, nil, err
	}
	return final, res, nil
}

// replay plays a story up to Attempts times (harness.Attempts). A story
// that missed and is played again says why on out, and its run directory
// is removed (its history is not a run of the scenario); every client is
// resumed and every armed wait for a holder withdrawn before the next
// attempt, which reconnects the workers (beginStory).
func replay[T any](ctx context.Context, cl *harness.Cluster, out io.Writer, play func() (T, *store.Run, error)) (T, error) {
	var v T
	var run *store.Run
	err := harness.Attempts(Attempts, func() (err error) {
		v, run, err = play()
		return err
	}, func(i int, err error) {
		fmt.Fprintf(out, "  attempt %d of %d: %v; playing the story again\n", i, Attempts, err)
		if run != nil {
			_ = os.RemoveAll(run.Dir)
		}
		cl.Disarm()
		for _, c := range cl.Clients() {
			_ = cl.Signal(context.WithoutCancel(ctx), c, "SIGCONT")
		}
	})
	return v, err
}

// letGo lets a frozen holder proceed (it reads that once resumed) and
// returns harness.ErrNotSetUp when it had given up waiting at its
// failpoint.
func letGo(h nemesis.Holder, who string) error {
	if h.Proceed == nil || !h.Proceed() {
		return harness.NotSetUp("%s had given up waiting at its failpoint before its fault was in place", who)
	}
	return nil
}

// proceed lets a holder go on, if there is one.
func proceed(h nemesis.Holder) {
	if h.Proceed != nil {
		h.Proceed()
	}
}

// inOrder checks the story's history against the steps it scripted
// (history.CheckOrder); a story whose events came otherwise is not set up.
func inOrder(events []history.Event, steps ...history.Step) error {
	if err := history.CheckOrder(events, steps...); err != nil {
		return fmt.Errorf("%w: %w", harness.ErrNotSetUp, err)
	}
	return nil
}

// answered returns the first of process p's events in events that is a
// completion or one of phases (a grant), and whether there is one: whether
// a client that should still be waiting was answered.
func answered(events []history.Event, p history.Process, phases ...string) (history.Event, bool) {
	for _, e := range events {
		if e.Process != p {
			continue
		}
		if e.Type.Completes() {
			return e, true
		}
		for _, f := range phases {
			if e.Type == history.Phase && e.F == f {
				return e, true
			}
		}
	}
	return history.Event{}, false
}
