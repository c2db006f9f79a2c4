// Package harness runs a test: it starts the cluster and the workers, drives
// the workers' operations while the nemesis injects faults, records the
// history, heals, takes the final read, tears everything down, and hands the
// history to the checkers.
package harness

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/clientproto"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/internal/workloads"
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
	ClientProgram *clientproto.Spec
	// Replay, if not nil, makes the run a rerun of a stored run: the
	// nemesis replays its recorded schedule instead of drawing faults
	// (nemesis.Schedule's Steps), and test.json says so.
	Replay *Replay
	// creds are what clients present to attached servers, read from the
	// Spec's --tls-* and --auth by Validate (validateAttached).
	creds *targets.Credentials
	// Log receives the harness's log (also written to logs/harness.log).
	Log *slog.Logger
	// Stage and Progress, if not nil, tell the user what happens.
	Stage    func(format string, args ...any)
	Progress func(Status)
}

// Replay is the stored run a rerun repeats and its recorded fault schedule.
type Replay struct {
	Of    string // the run directory
	RunID string // its run id
	Steps []nemesis.Step
}

// Defaults fills in the durations left zero: the TTL, lock-delay (when
// nil), nemesis interval, time limit and ready timeout are the target's
// profile's (targets.ProfileOf: 2s, 3s, 30s, 30s; Consul TTL 10s, lock-delay
// 0, 2s, 45s; ZooKeeper ready in 90s); with L the target's longest lease
// (targets.MaxLease: the TTL for etcd): work 250ms, margin TTL/4,
// acquire timeout 5 L (longer than a holder pause, so that waiters are still
// waiting when a paused holder's lease expires), RPC timeout 4 L (longer than
// any fault, as for a client that waits out a partition: its request, held
// in its TCP connection, lands when the partition heals), operation timeout
// long enough for an acquire, the work, the longest pause (3 L) and two
// RPCs, check timeout 60s.
func (c *Config) Defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
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
	if c.Target != nil {
		// The target's profile fills what no flag set.
		p := targets.ProfileOf(c.Target)
		def(&c.TTL, p.TTL)
		if c.LockDelay == nil {
			c.LockDelay = p.LockDelay
		}
		def(&c.NemesisInterval, p.NemesisInterval)
		def(&c.TimeLimit, p.TimeLimit)
		def(&c.ReadyTimeout, p.ReadyTimeout)
	}
	lease := c.TTL
	if c.Target != nil {
		lease = targets.MaxLease(c.Target, targets.ClientConfig{TTL: c.TTL, LockDelay: c.LockDelay})
	}
	def(&c.Work, 250*time.Millisecond)
	def(&c.Margin, c.TTL/4)
	def(&c.AcquireTimeout, 5*lease)
	def(&c.RPCTimeout, max(2*time.Second, 4*lease))
	def(&c.OpTimeout, c.AcquireTimeout+c.Work+3*lease+2*c.RPCTimeout+2*time.Second)
	def(&c.NemesisInterval, targets.DefaultProfileInterval)
	def(&c.TimeLimit, targets.DefaultProfileTimeLimit)
	def(&c.CheckTimeout, 60*time.Second)
	def(&c.ReadyTimeout, targets.DefaultProfileReadyTimeout)
	def(&c.SideWriterInterval, 3*time.Second)
	if len(c.Resources) == 0 && c.LockStore != nil {
		c.Resources = []resources.Resource{c.LockStore}
	}
	if c.Fencings == nil {
		// Errors are Validate's to report.
		c.Fencings, _ = resources.ParseFencings(c.Fencing, c.Resources)
	}
	if c.Fencing == "" {
		c.Fencing = string(targets.FencingNone)
	}
	if c.Keys == 0 {
		c.Keys = 8
	}
	if c.Locks == 0 {
		c.Locks = 1
	}
	if rm, ok := c.Target.(targets.ReadModer); ok && c.ReadMode == "" {
		c.ReadMode = rm.ReadModes()[0]
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

// validResults checks that the results directory is one, or can be made:
// what exists of its path is made of directories.
func validResults(dir string) error {
	if dir == "" {
		return errors.New("empty")
	}
	for p := dir; ; {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir() && p == dir:
			return errors.New("is not a directory")
		case err == nil && !st.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

// Validate checks the configuration before anything starts. Errors wrap
// targets.ErrBadConfig.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{targets.ErrBadConfig}, args...)...)
	}
	if c.Target == nil {
		return bad("no target")
	}
	if c.Workload == nil {
		return bad("no workload")
	}
	if _, ok := c.Target.(targets.Secured); ok && c.ClientProgram != nil {
		// The client protocol's init carries no credentials.
		return bad("--client-dir: target %s asks its clients for credentials made per run, which the client protocol does not carry yet", c.Target.Name())
	}
	if len(c.Resources) == 0 {
		return bad("no resource")
	}
	seen := map[string]bool{}
	for _, r := range c.Resources {
		if seen[r.Name()] {
			return bad("--resource names %s twice", r.Name())
		}
		seen[r.Name()] = true
	}
	fs, err := resources.ParseFencings(c.Fencing, c.Resources)
	if err != nil {
		return err
	}
	c.Fencings = fs
	// The TTL comes before the durations derived from it (5 leases,
	// ...): when it is absurd they overflow, and must not take the blame.
	if err := c.Spec.CheckBounds(); err != nil {
		return fmt.Errorf("%w: %w", targets.ErrBadConfig, err)
	}
	if c.Margin < 0 || c.Margin >= c.TTL {
		return bad("--margin %s must be in [0, --ttl %s)", c.Margin, c.TTL)
	}
	if err := c.Workload.Validate(c.Target, c.Resources, c.WorkloadConfig()); err != nil {
		return err
	}
	if _, ok := c.Workload.(workloads.SideWriting); c.SideWriter && !ok {
		return bad("--side-writer: the %s workload has no side writer", c.Workload.Name())
	}
	if err := store.ValidName(c.Name); err != nil {
		return bad("--name: %w", err)
	}
	if err := validResults(c.Results); err != nil {
		return bad("--results %s: %w", c.Results, err)
	}
	if err := c.validateAttached(); err != nil {
		return err
	}
	var specs []targets.NodeSpec
	if !c.Attached() {
		if specs, err = c.Target.Nodes(c.Nodes); err != nil {
			return err
		}
	}
	// Every fault can apply to this run: one that cannot would fail at
	// each injection, after the cluster is up.
	if err := nemesis.CheckApplies(c.Faults, c.faultShape(specs)); err != nil {
		return fmt.Errorf("%w: %w", targets.ErrBadConfig, err)
	}
	if c.LockDelay != nil && *c.LockDelay < 0 {
		return bad("--lock-delay must not be negative")
	}
	if err := targets.CheckRecipe(c.Target, c.Recipe); err != nil {
		return err
	}
	return c.Target.Validate(c.clientConfig())
}

// WorkloadConfig is the workloads' configuration of the run.
func (c *Config) WorkloadConfig() workloads.Config {
	return workloads.Config{Fencings: c.Fencings, AcquireTimeout: c.AcquireTimeout, Margin: c.Margin, Work: c.Work, WorkCPU: c.WorkCPU,
		AuditLog: c.Audit != nil, Keys: c.Keys, ReadMode: c.ReadMode, Locks: c.Locks, Clients: c.Concurrency}
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

// Run runs the test end to end and checks it. The returned error wraps
// targets.ErrBadConfig for a configuration that cannot run, ErrHarness when
// the harness failed; the verdict is in Outcome.Results. When only writing
// the results failed, the error wraps ErrNotWritten and the Outcome, with
// its verdict, is returned too. On Ctrl-C (ctx
// cancelled) it heals, tears down, checks what was recorded, and marks the
// outcome interrupted.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	run, err := store.NewRun(cfg.Results, cfg.Name, started)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	logFile, err := os.Create(run.Path(store.LogsDir + "/harness.log"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	defer logFile.Close()
	handlers := []slog.Handler{slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug})}
	if cfg.Log != nil {
		handlers = append(handlers, cfg.Log.Handler())
	}
	log := slog.New(slog.NewMultiHandler(handlers...))
	stage := func(format string, args ...any) {
		if cfg.Stage != nil {
			cfg.Stage(format, args...)
		}
	}

	// test.json is written at once (a run that fails to start keeps its
	// configuration and run id), and again once the cluster runs.
	runID := newRunID()
	if err := run.WriteJSON(store.TestFile, newTestInfo(cfg, runID, nil, started)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	cl, err := StartCluster(ctx, ClusterConfig{
		Endpoints: cfg.Endpoints, Credentials: cfg.creds,
		RunID:  runID,
		Target: cfg.Target, Nodes: cfg.Nodes, Workers: cfg.Concurrency,
		Client:   cfg.clientConfig(),
		Workload: cfg.Workload, Resources: cfg.resourceUses(), Audit: cfg.Audit, Config: cfg.WorkloadConfig(),
		FailpointTimeout: cfg.OpTimeout + time.Minute,
		WorkerBinary:     cfg.WorkerBinary, ClientProgram: cfg.ClientProgram, ReadyTimeout: cfg.ReadyTimeout,
		TargetImage: cfg.Image[store.ImageTarget],
		LazyDisks:   nemesis.NeedsDisk(cfg.Faults),
		LogsDir:     run.Path(store.LogsDir), Log: log, Stage: cfg.Stage,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v) during set-up: no operation ran, so there is no verdict", ErrInterrupted, context.Cause(ctx))
		}
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			cl.Close(run.Path(store.LogsDir))
		}
	}()

	test := newTestInfo(cfg, runID, cl, started)
	if err := run.WriteJSON(store.TestFile, test); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}

	var ok, fail, info atomic.Int64
	rec, err := history.NewRecorder(run.Path(store.HistoryFile), func(e history.Event) {
		if e.Process == history.Nemesis || e.Process >= FinalReadProcess {
			return // faults, final reads and the side writer
		}
		switch e.Type {
		case history.Ok:
			ok.Add(1)
		case history.Fail:
			fail.Add(1)
		case history.Info:
			info.Add(1)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	if err := cl.Connect(ctx, rec); err != nil {
		rec.Close()
		return nil, err
	}
	if cl.Program != "" {
		// The client program named itself to the workers: test.json again.
		test.ClientName = cl.Program
		if err := run.WriteJSON(store.TestFile, test); err != nil {
			rec.Close()
			return nil, fmt.Errorf("%w: %w", ErrHarness, err)
		}
	}
	if nodes := nemesis.NetNodes(cfg.Faults, cl); len(nodes) > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := cl.WarmNet(wctx, nodes)
		cancel()
		if err != nil {
			rec.Close()
			return nil, fmt.Errorf("%w: network helpers: %w", ErrHarness, err)
		}
	}

	sched := &nemesis.Schedule{Faults: cfg.Faults, Interval: cfg.NemesisInterval, Seed: cfg.Seed, Log: log}
	if cfg.Replay != nil {
		sched.Steps = cfg.Replay.Steps
		if sched.Steps == nil {
			sched.Steps = []nemesis.Step{} // a recorded schedule without faults: none
		}
	}
	stageName := atomic.Value{}
	stageName.Store("running")
	status := func() Status {
		s := Status{Stage: stageName.Load().(string), Elapsed: rec.Since(), Limit: cfg.TimeLimit,
			Ok: int(ok.Load()), Fail: int(fail.Load()), Info: int(info.Load())}
		if f, nodes, on := sched.Active(); on {
			s.Fault = f + " " + strings.Join(nodes, ",")
		}
		return s
	}
	progressDone := make(chan struct{})
	progressStopped := make(chan struct{})
	go func() {
		defer close(progressStopped)
		if cfg.Progress == nil {
			return
		}
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				cfg.Progress(status())
				return
			case <-t.C:
				cfg.Progress(status())
			}
		}
	}()

	// The generator: each worker runs one operation after another until the
	// time limit; the nemesis runs beside it.
	limit, stopLimit := context.WithTimeout(ctx, cfg.TimeLimit)
	defer stopLimit()
	var nemWG sync.WaitGroup
	nemWG.Add(1)
	go func() {
		defer nemWG.Done()
		sched.Run(limit, cl, rec)
	}()
	w := cfg.Workload
	gen := &generator{w: w, cfg: cfg.WorkloadConfig(), seed: cfg.Seed}
	var slots sync.WaitGroup
	for i, c := range cl.clients {
		slots.Add(1)
		go func() {
			defer slots.Done()
			gen.drive(ctx, limit, c, history.Process(i), len(cl.clients), cfg.OpTimeout, log)
		}()
	}
	if cfg.SideWriter {
		slots.Add(1)
		go func() {
			defer slots.Done()
			sideWriter(limit, cl.Host(), gen, rec, cfg, log)
		}()
	}
	<-limit.Done()
	stageName.Store("healing")
	nemWG.Wait() // every fault recovered
	log.Info("time limit reached; faults healed; waiting for operations in flight")
	stageName.Store("draining")
	slots.Wait()

	interrupted := ctx.Err() != nil
	var reads []workloads.FinalRead
	for _, h := range cl.Hosts() {
		reads = append(reads, w.FinalReads(h)...)
	}
	if len(reads) > 0 {
		stageName.Store("final read")
		if interrupted {
			// Still read: a lost update found before Ctrl-C is worth reporting.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(len(reads)+1)*cfg.RPCTimeout)
			finalReads(fctx, reads, rec, cfg.RPCTimeout, 1, log)
			cancel()
		} else {
			time.Sleep(500 * time.Millisecond) // quiet period
			finalReads(ctx, reads, rec, cfg.RPCTimeout, 5, log)
		}
	}
	close(progressDone)
	<-progressStopped
	if err := rec.Close(); err != nil {
		log.Error("history", "err", err)
	}
	stage("tearing down")
	closed = true
	if err := cl.Close(run.Path(store.LogsDir)); err != nil {
		log.Error("teardown", "err", err)
	}

	events := rec.Events()
	stage("checking %d events", len(events))
	// A history the checkers cannot judge still gets its results, unknown
	// with the reason: the run's own record is all there is.
	res, _ := CheckWithin(run, w, events, cfg.CheckTimeout, cfg.checkMemory())
	Judge(test, events, res)
	res.Elapsed = time.Since(started).Round(time.Millisecond).String()
	if interrupted {
		MarkInterrupted(res)
	}
	return writeOutcome(&Outcome{Run: run, Test: test, Results: res, Interrupted: interrupted}, events, w)
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
const FinalReadProcess history.Process = 1_000_000

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
