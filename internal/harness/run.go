// Package harness runs a test: it starts the cluster and the workers, drives
// the workers' operations while the nemesis injects faults, records the
// history, heals, takes the final read, hands the history to the checkers,
// keeps the nodes' data if asked (--keep-data), and tears everything down.
//
// The harness runs on the container platform its caller hands it
// (Config.Engine, ClusterConfig.Engine: a runtime.Engine, package docker's
// in fencecheck's commands, a fake one in tests), and connects to none
// itself: it imports no platform's implementation.
package harness

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Config is a test: its Spec (the knobs, as plain values; test.json
// records it resolved) and the parts the Spec's names resolve to. Durations
// of zero take the defaults of Defaults. The Spec's names (target,
// workload, resources) are set from the parts by Defaults.
type Config struct {
	spec.Spec
	Target   targets.Target
	Workload workloads.Workload
	// Resources are what the lock protects, in the order a critical
	// section writes them (none: Defaults takes the lock-store); Fencings
	// is each one's fencing mode by name (resources.ParseFencings, from
	// the Spec's Fencing).
	Resources []resources.Resource
	Fencings  map[string]targets.Fencing
	// LockStore is the default resource (the lock service's own store).
	LockStore resources.Resource
	// Audit keeps the audit log (--audit-log); nil: none.
	Audit resources.AuditLogger
	// SideWriterInterval is how often the side writer (--side-writer)
	// writes the first resource without the lock and without a token.
	SideWriterInterval time.Duration
	// Faults are the Spec's Nemesis, parsed.
	Faults []nemesis.Fault
	// WorkerBinary is the binary that runs in worker containers: the worker
	// binary (FindWorkerBinary), or fencecheck itself.
	WorkerBinary string
	// ClientProgram, if not nil, is the user's lock client program that the
	// workers run instead of the target's recipe (--client-dir).
	ClientProgram *clientproto.ProgramDir
	// ClientDigest is what the client program's directory holds (Run
	// reads it when nil), recorded in test.json.
	ClientDigest *clientproto.Digest
	// Replay, if not nil, makes the run a rerun of a stored run: the
	// nemesis replays its recorded schedule instead of drawing faults
	// (nemesis.Schedule's Steps), and test.json says so.
	Replay *Replay
	// NotJudged: the run is a matrix's cell whose verdict decides nothing
	// (an unfenced cell, a register cell in a read mode the target does
	// not promise linearizable): invalid is what it is expected to be, so
	// --keep-data auto keeps none of its data (keepData); always still
	// does. test.json does not record it.
	NotJudged bool
	// Engine is the container platform the run's nodes run on: the
	// caller's, connected before Run and closed by the caller after Run
	// returns (several runs may share one). Run neither connects to a
	// platform nor closes Engine, and refuses a nil one (ErrHarness)
	// before it creates anything. test.json does not record it.
	Engine runtime.Engine
	// creds are what clients present to attached servers, read from the
	// Spec's --tls-* and --auth by Validate (validateAttached).
	creds *targets.Credentials
	// attached is what Validate attached to at the Spec's --endpoints.
	attached *Attachment
	// Log receives the harness's log (also written to logs/harness.log).
	Log *slog.Logger
	// Stage and Progress, if not nil, tell the user what happens.
	Stage    func(format string, args ...any)
	Progress func(Status)
}

// Replay is the stored run a rerun repeats and its recorded fault schedule.
type Replay struct {
	Of    string        // the run directory
	RunID runtime.RunID // its run id
	Steps []nemesis.Step
}

// Defaults fills in what was left zero: the Spec's knobs by the Spec's
// own defaults (spec.Spec.Resolve) with the target's profile (profile),
// the nodes (the endpoints', else the target's usual cluster), the
// resources (the lock-store), their fencing modes, the name, and the
// Spec's names of what runs.
func (c *Config) Defaults() {
	if c.Nodes == 0 && c.Attached() {
		c.Nodes = len(c.Endpoints)
	}
	for _, p := range []*string{&c.TLSCA, &c.TLSCert, &c.TLSKey, &c.AuthFile} {
		// Recorded as absolute paths: a rerun from elsewhere finds them.
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	if c.Nodes == 0 && c.Target != nil {
		c.Nodes = targets.DefaultNodes(c.Target)
	}
	c.Spec.Resolve(profile(c.Target))
	if c.SideWriterInterval == 0 {
		c.SideWriterInterval = 3 * time.Second
	}
	if len(c.Resources) == 0 && c.LockStore != nil {
		c.Resources = []resources.Resource{c.LockStore}
	}
	if c.Fencings == nil {
		// Errors are Validate's to report.
		c.Fencings, _ = resources.ParseFencings(c.Fencing, c.Resources)
	}
	if c.Name == "" && c.Target != nil && c.Workload != nil {
		c.Name = c.defaultName()
	}
	// The Spec names what runs.
	if c.Target != nil {
		c.Spec.Target = c.Target.Name()
	}
	if c.Workload != nil {
		c.Spec.Workload = c.Workload.Name()
	}
	c.Resource = nil
	for _, r := range c.Resources {
		c.Resource = append(c.Resource, r.Name())
	}
	if vt, ok := c.Target.(targets.Versioned); ok && !c.Attached() {
		// Attached servers run their own version (test.json's
		// target_version says which), not one of fencecheck's images.
		c.Version = vt.VersionName()
	}
}

// profile is what the Spec's defaults take from target t
// (targets.ProfileOf: TTL 2s, nemesis interval 3s, time limit 30s, ready
// timeout 30s; Consul TTL 10s, lock-delay 0, 2s, 45s; ZooKeeper ready in
// 90s), its longest lease (targets.MaxLease) and its first read mode; with
// no target, the general profile without a TTL.
func profile(t targets.Target) spec.Profile {
	if t == nil {
		return spec.Profile{NemesisInterval: targets.DefaultProfileInterval, TimeLimit: targets.DefaultProfileTimeLimit,
			ReadyTimeout: targets.DefaultProfileReadyTimeout}
	}
	tp := targets.ProfileOf(t)
	p := spec.Profile{TTL: tp.TTL, LockDelay: tp.LockDelay, NemesisInterval: tp.NemesisInterval, TimeLimit: tp.TimeLimit,
		ReadyTimeout: tp.ReadyTimeout,
		MaxLease: func(ttl time.Duration, lockDelay *time.Duration) time.Duration {
			return targets.MaxLease(t, targets.ClientConfig{TTL: ttl, LockDelay: lockDelay})
		}}
	if rm, ok := t.(targets.ReadModer); ok {
		p.ReadMode = rm.ReadModes()[0]
	}
	return p
}

// defaultName is TARGET-WORKLOAD-FENCING, with the resources when they are
// not the lock-store (TARGET-WORKLOAD-RESOURCES-FENCING), and TARGET-NAME
// for a workload that names its runs (workloads.Described: register's
// TARGET-register-READMODE).
func (c *Config) defaultName() string {
	if d, ok := c.Workload.(workloads.Described); ok {
		return nameUnsafe.ReplaceAllString(c.Target.Name()+"-"+d.RunName(c.WorkloadConfig()), "-")
	}
	parts := []string{c.Target.Name(), c.Workload.Name()}
	if len(c.Resources) != 1 || c.LockStore == nil || c.Resources[0].Name() != c.LockStore.Name() {
		for _, r := range c.Resources {
			parts = append(parts, r.Name())
		}
	}
	parts = append(parts, resources.DescribeFencings(c.Resources, c.Fencings))
	return nameUnsafe.ReplaceAllString(strings.Join(parts, "-"), "-")
}

var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WorkloadConfig is the workloads' configuration of the run.
func (c *Config) WorkloadConfig() workloads.Config {
	return workloads.Config{WorkerKnobs: c.WorkerKnobs, Fencings: c.Fencings}
}

// resourceUses are the resources with their fencing modes.
func (c *Config) resourceUses() []ResourceUse {
	us := make([]ResourceUse, len(c.Resources))
	for i, r := range c.Resources {
		us[i] = ResourceUse{Resource: r, Fencing: c.Fencings[r.Name()]}
	}
	return us
}

// clientConfig is the client configuration the workers get (endpoints and
// prefix are filled in by the cluster).
func (c *Config) clientConfig() targets.ClientConfig {
	return targets.ClientConfig{TTL: c.TTL, RPCTimeout: c.RPCTimeout, LockDelay: c.LockDelay, Recipe: c.Recipe}
}

// Status is the progress of a run.
type Status struct {
	Stage          string // "running", "healing", "final read", ...
	Elapsed, Limit time.Duration
	Ok, Fail, Info int
	Fault          string // the fault in effect ("" for none)
}

// Outcome is what a run produced.
type Outcome struct {
	Run         *store.Run
	Test        store.TestInfo // test.json
	Results     *store.Results
	Interrupted bool
	// NotWritten, if not nil, is why results.json and the reports could
	// not be written (Run then also returns an error wrapping
	// ErrNotWritten, with this Outcome).
	NotWritten error
}

// ErrNotWritten: the run was checked, but its results and reports could not
// be written (a full disk): the Outcome still holds the verdict.
var ErrNotWritten = errors.New("results not written")

// Run runs the test end to end on cfg.Engine and checks it. The returned error wraps
// targets.ErrBadConfig for a configuration that cannot run, ErrHarness when
// the harness failed; the verdict is in Outcome.Results. When only writing
// the results failed, the error wraps ErrNotWritten and the Outcome, with
// its verdict, is returned too. On Ctrl-C (ctx
// cancelled) it heals, checks what was recorded, tears down, and marks the
// outcome interrupted.
//
// Its steps, in order: the cluster starts, the workers run while the
// nemesis injects faults, the faults heal and the final reads are made;
// then the history is checked, the nodes' data directories are kept
// (--keep-data: always, or when the verdict is invalid), and only then is
// the cluster torn down (its logs saved), and the results written.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Engine == nil {
		return nil, errNoEngine
	}
	if p := cfg.ClientProgram; p != nil && cfg.ClientDigest == nil {
		// What the directory holds now, after its build step: test.json
		// records it for rerun to compare.
		d, err := p.Digest()
		if err != nil {
			return nil, err
		}
		cfg.ClientDigest = &d
	}
	started := time.Now()
	run, err := store.NewRun(cfg.Results, cfg.Name, started)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	log, closeLog, err := cfg.runLog(run)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	defer closeLog()

	// test.json is written at once (a run that fails to start keeps its
	// configuration and run id), and again once the cluster runs.
	runID := newRunID()
	if err := run.WriteJSON(store.TestFile, newTestInfo(cfg, runID, nil, started)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	cl, err := StartCluster(ctx, cfg.clusterConfig(runID, run.Path(store.LogsDir), log))
	if err != nil {
		if ctx.Err() != nil {
			return nil, interruptedSetUp(ctx)
		}
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			cl.Close(run.Path(store.LogsDir))
		}
	}()

	var counts opCounts
	rec, err := history.NewRecorder(run.Path(store.HistoryFile), counts.count)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	test := newTestInfo(cfg, runID, cl, started)
	test.HistoryStarted = rec.Start().UTC()
	test.HistoryStartedMono = history.KernelMonotonic() - rec.Since().Nanoseconds()
	if err := run.WriteJSON(store.TestFile, test); err != nil {
		rec.Close()
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	if err := cfg.connect(ctx, cl, rec, run, &test); err != nil {
		rec.Close()
		return nil, err
	}
	stopProbes := startProbes(ctx, probeEnv{cl, rec})
	interrupted := cfg.exercise(ctx, cl, rec, &counts, log)
	recorded := stopProbes()
	if err := rec.Close(); err != nil {
		log.Error("history", "err", err)
	}

	// Checked before teardown: the verdict decides whether the nodes'
	// data is kept (--keep-data auto), and teardown removes it. The
	// check is bounded (--check-timeout), and so is the copy.
	events := rec.Events()
	cfg.stage("checking %d events", len(events))
	// A history the checkers cannot judge still gets its results, unknown
	// with the reason: the run's own record is all there is.
	res, _ := CheckWithin(run, cfg.Workload, events, test.Concurrency, cfg.CheckTimeout, cfg.checkMemory())
	Judge(test, events, res)
	if interrupted {
		MarkInterrupted(res)
	}
	for _, r := range recorded {
		res.Records = res.Records.Put(r)
	}
	res.Records = res.Records.Put(cfg.keepData(ctx, cl, run, res.Valid()))
	cfg.stage("tearing down")
	closed = true
	if err := cl.Close(run.Path(store.LogsDir)); err != nil {
		log.Error("teardown", "err", err)
	}
	res.Elapsed = time.Since(started).Round(time.Millisecond).String()
	return writeOutcome(&Outcome{Run: run, Test: test, Results: res, Interrupted: interrupted}, events, cfg.Workload)
}

// RunOn is Run of cfg on the engine that engine returns, for a caller
// that connects at the first run that needs an engine and shares it with
// the runs after (a command's runs: engine returns the same one each
// time, and the caller closes it after the last). An error of engine's is
// the run's set-up failure: an interruption (ErrInterrupted) when ctx
// ended, else a harness failure (ErrHarness). A nil engine is refused as
// a nil Config.Engine is.
func RunOn(ctx context.Context, engine func(context.Context) (runtime.Engine, error), cfg Config) (*Outcome, error) {
	if engine == nil {
		return nil, errNoEngine
	}
	eng, err := engine(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, interruptedSetUp(ctx)
	case err != nil && !errors.Is(err, ErrHarness):
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	case err != nil:
		return nil, err
	}
	cfg.Engine = eng
	return Run(ctx, cfg)
}

// stage tells the user what happens (Config.Stage), if anyone listens.
func (c *Config) stage(format string, args ...any) {
	if c.Stage != nil {
		c.Stage(format, args...)
	}
}

// runLog is the run's log: logs/harness.log in run, at debug level, and
// the Config's Log. closeLog closes the file.
func (c *Config) runLog(run *store.Run) (log *slog.Logger, closeLog func(), err error) {
	logFile, err := os.Create(run.Path(store.LogsDir + "/harness.log"))
	if err != nil {
		return nil, nil, err
	}
	handlers := []slog.Handler{slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug})}
	if c.Log != nil {
		handlers = append(handlers, c.Log.Handler())
	}
	return slog.New(slog.NewMultiHandler(handlers...)), func() { logFile.Close() }, nil
}

// clusterConfig is the cluster of the run runID, its containers' logs
// saved under logsDir when its set-up fails.
func (c *Config) clusterConfig(runID runtime.RunID, logsDir string, log *slog.Logger) ClusterConfig {
	return ClusterConfig{
		Engine:    c.Engine,
		Endpoints: c.Endpoints, Credentials: c.creds, Attached: c.attached,
		RunID:  runID,
		Target: c.Target, Nodes: c.Nodes, Workers: c.Concurrency,
		Client:   c.clientConfig(),
		Workload: c.Workload, Resources: c.resourceUses(), Audit: c.Audit, Config: c.WorkloadConfig(),
		FailpointTimeout: c.OpTimeout + time.Minute,
		WorkerBinary:     c.WorkerBinary, ClientProgram: c.ClientProgram, ReadyTimeout: c.ReadyTimeout,
		TargetImage: c.Image[store.ImageTarget],
		LazyDisks:   nemesis.NeedsDisk(c.Faults),
		NetHelpers:  nemesis.NeedsNet(c.Faults),
		LogsDir:     logsDir, Log: log, Stage: c.Stage,
	}
}

// connect connects the workers (their operations recorded in rec),
// writes test.json again with the client program's name for itself if one
// runs, and readies the network helpers the faults use.
func (c *Config) connect(ctx context.Context, cl *Cluster, rec *history.Recorder, run *store.Run, test *store.TestInfo) error {
	if err := cl.Connect(ctx, rec); err != nil {
		return err
	}
	if cl.Program != "" {
		// The client program named itself to the workers: test.json again.
		test.ClientName = cl.Program
		if err := run.WriteJSON(store.TestFile, *test); err != nil {
			return fmt.Errorf("%w: %w", ErrHarness, err)
		}
	}
	if nodes := nemesis.NetNodes(c.Faults, cl); len(nodes) > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := cl.WarmNet(wctx, nodes)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: network helpers: %w", ErrHarness, err)
		}
	}
	return nil
}

// opCounts count the workers' completions, for the progress line.
type opCounts struct{ ok, fail, info atomic.Int64 }

// count counts e if it is a worker's completion (not a fault's, a final
// read's or the side writer's).
func (n *opCounts) count(e history.Event) {
	if e.Process == history.Nemesis || e.Process >= FinalReadProcess {
		return // faults, final reads and the side writer
	}
	switch e.Type {
	case history.Ok:
		n.ok.Add(1)
	case history.Fail:
		n.fail.Add(1)
	case history.Info:
		n.info.Add(1)
	}
}

// schedule is the run's nemesis: its faults drawn, or a rerun's recorded
// schedule replayed.
func (c *Config) schedule(log *slog.Logger) *nemesis.Schedule {
	sched := &nemesis.Schedule{Faults: c.Faults, Interval: c.NemesisInterval, Seed: c.Seed, Log: log}
	if c.Replay != nil {
		sched.Steps = c.Replay.Steps
		if sched.Steps == nil {
			sched.Steps = []nemesis.Step{} // a recorded schedule without faults: none
		}
	}
	return sched
}

// exercise is the run proper, recorded in rec: the workers run operations
// until the time limit while the nemesis injects faults (and the side
// writer writes), then the faults heal, the operations in flight end and
// the final reads are made. It tells Progress how it goes, and returns
// whether ctx ended first (Ctrl-C).
func (c *Config) exercise(ctx context.Context, cl *Cluster, rec *history.Recorder, counts *opCounts, log *slog.Logger) (interrupted bool) {
	sched := c.schedule(log)
	stageName := atomic.Value{}
	stageName.Store("running")
	stopProgress := c.reportProgress(func() Status {
		s := Status{Stage: stageName.Load().(string), Elapsed: rec.Since(), Limit: c.TimeLimit,
			Ok: int(counts.ok.Load()), Fail: int(counts.fail.Load()), Info: int(counts.info.Load())}
		if f, nodes, on := sched.Active(); on {
			s.Fault = f + " " + strings.Join(nodes, ",")
		}
		return s
	})
	defer stopProgress()

	// The generator: each worker runs one operation after another until the
	// time limit; the nemesis runs beside it.
	limit, stopLimit := context.WithTimeout(ctx, c.TimeLimit)
	defer stopLimit()
	var nemWG sync.WaitGroup
	nemWG.Add(1)
	go func() {
		defer nemWG.Done()
		sched.Run(limit, cl, rec)
	}()
	gen := &generator{w: c.Workload, cfg: c.WorkloadConfig(), seed: c.Seed}
	var slots sync.WaitGroup
	for i, cli := range cl.clients {
		slots.Add(1)
		go func() {
			defer slots.Done()
			gen.drive(ctx, limit, cli, history.Process(i), len(cl.clients), c.OpTimeout, log)
		}()
	}
	if c.SideWriter {
		slots.Add(1)
		go func() {
			defer slots.Done()
			sideWriter(limit, cl.Host(), gen, rec, *c, log)
		}()
	}
	<-limit.Done()
	stageName.Store("healing")
	nemWG.Wait() // every fault recovered
	log.Info("time limit reached; faults healed; waiting for operations in flight")
	stageName.Store("draining")
	slots.Wait()

	interrupted = ctx.Err() != nil
	var reads []workloads.FinalRead
	for _, h := range cl.Hosts() {
		reads = append(reads, c.Workload.FinalReads(h)...)
	}
	if len(reads) > 0 {
		stageName.Store("final read")
		c.readFinal(ctx, reads, rec, interrupted, log)
	}
	return interrupted
}

// reportProgress tells Progress the run's status every 250 ms, and once
// more when stop is called (stop returns after that).
func (c *Config) reportProgress(status func() Status) (stop func()) {
	if c.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				c.Progress(status())
				return
			case <-t.C:
				c.Progress(status())
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// readFinal makes the final reads after a quiet period, each tried up to
// 5 times; after Ctrl-C (interrupted) at once and once each, still: a
// lost update found before Ctrl-C is worth reporting.
func (c *Config) readFinal(ctx context.Context, reads []workloads.FinalRead, rec *history.Recorder, interrupted bool, log *slog.Logger) {
	if interrupted {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(len(reads)+1)*c.RPCTimeout)
		finalReads(fctx, reads, rec, c.RPCTimeout, 1, log)
		cancel()
		return
	}
	time.Sleep(500 * time.Millisecond) // quiet period
	finalReads(ctx, reads, rec, c.RPCTimeout, 5, log)
}

// writeOutcome writes out's results and reports. When that fails (a full
// disk) the verdict is known all the same and is not thrown away: out is
// returned with NotWritten set, and an error wrapping ErrNotWritten.
func writeOutcome(out *Outcome, events []history.Event, w workloads.Workload) (*Outcome, error) {
	if err := WriteResults(out.Run, out.Test, out.Results, events, w); err != nil {
		out.NotWritten = err
		return out, fmt.Errorf("%w: %w: %w", ErrHarness, ErrNotWritten, err)
	}
	return out, nil
}

// MarkInterrupted marks a run cut short: a partial run that found nothing
// proves nothing, so valid becomes unknown.
func MarkInterrupted(res *store.Results) {
	res.Interrupted = true
	if res.Valid() == checkers.Valid {
		res.SetValid(checkers.Unknown)
		res.Note = "interrupted before the time limit: a partial run proves nothing"
	}
}

// generator makes the operations of a run.
type generator struct {
	w    workloads.Workload
	cfg  workloads.Config
	seed uint64
	n    atomic.Int64 // operations so far, run-wide: op ids and unique values
}

// drive runs one worker's operations until the time limit. After an info the
// process is retired and the worker continues under process p+n, once it is
// done with the operation that timed out; a worker whose connection ended
// (its container was killed) continues once it is connected again (its
// container restarted), and stops at the time limit if it never is. Each
// worker draws from its own random source, seeded from the run's seed and
// the worker's first process.
func (g *generator) drive(ctx, limit context.Context, c *client, p history.Process, n int, opTimeout time.Duration, log *slog.Logger) {
	r := rand.New(rand.NewPCG(g.seed, uint64(p)+1))
	cfg := g.cfg
	cfg.Lock = c.lock
	for limit.Err() == nil {
		id := g.n.Add(1)
		f, value := g.w.Next(r, cfg, id)
		pend, err := c.invoke(p, id, f, value, nil)
		if errors.Is(err, errDead) && c.awaitUp(limit) {
			continue // its worker was killed between operations, and restarted
		}
		if err != nil {
			log.Warn("worker unusable", "worker", c.name, "err", err)
			return
		}
		if c.await(ctx, pend, opTimeout) != history.Info {
			continue
		}
		p += history.Process(n)
		if ctx.Err() != nil {
			return
		}
		// The worker still runs the old operation (paused, or stuck on the
		// network): wait for it, within reason.
		wctx, cancel := context.WithTimeout(ctx, opTimeout)
		err = c.finished(wctx, pend)
		cancel()
		if err != nil {
			log.Warn("worker never finished its operation; leaving it idle", "worker", c.name, "op", id)
			return
		}
		// A worker killed in its operation (kill-holder) continues once
		// it is restarted.
		if c.isDead() && !c.awaitUp(limit) {
			return
		}
	}
}

// FinalReadProcess is the process of the final read.
const FinalReadProcess = history.FinalRead

// finalReads reads the final state after healing, each read recorded as
// an operation of its own process (FinalReadProcess, +1, ...). A failed
// attempt is recorded as fail and tried again, up to attempts times.
func finalReads(ctx context.Context, reads []workloads.FinalRead, rec *history.Recorder, rpc time.Duration, attempts int, log *slog.Logger) {
	for i, r := range reads {
		p := FinalReadProcess + history.Process(i)
		for attempt := 0; attempt < attempts; attempt++ {
			rec.Record(p, history.Invoke, r.F, nil)
			rctx, cancel := context.WithTimeout(ctx, rpc)
			value, err := r.Read(rctx)
			cancel()
			if err == nil {
				rec.Record(p, history.Ok, r.F, value)
				break
			}
			rec.Record(p, history.Fail, r.F, map[string]string{"error": err.Error()})
			log.Warn("final read failed", "f", r.F, "attempt", attempt+1, "err", err)
			if ctx.Err() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}
