package harness

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/internal/workloads"
	wlockappend "github.com/fencecheck/fencecheck/internal/workloads/lockappend"
	"github.com/fencecheck/fencecheck/targets"
)

// DemoConfig configures the scripted demo.
type DemoConfig struct {
	Target targets.Target
	// Resource is what the lock protects (the target's lock-store).
	Resource     resources.Resource
	Nodes        int
	TTL          time.Duration
	Fencings     []targets.Fencing // the stories, in order (default none, token)
	Results      string
	WorkerBinary string
	Log          *slog.Logger
	Stage        func(format string, args ...any)
	// Out receives the stories' timelines as they happen.
	Out io.Writer
	// Script names the script in test.json and the stories' run names
	// (SCRIPT-FENCING); "" is "demo".
	Script string
	// Recipe is the target's lock recipe ("" its default).
	Recipe string
	// TargetImage is the user's server image ("": fencecheck's), as in
	// ClusterConfig.
	TargetImage string
}

// script is the script's name: "demo" unless set.
func (cfg DemoConfig) script() string {
	if cfg.Script == "" {
		return "demo"
	}
	return cfg.Script
}

// Story is what one scripted story showed.
type Story struct {
	Fencing targets.Fencing
	// TokenA and TokenB are the fencing tokens of the paused holder A and of
	// B, who got the lock while A was frozen.
	TokenA, TokenB int64
	// AResult is the outcome of A's late write: ok (accepted) or fail.
	AResult history.Type
	AReason string
	// CRefused: C could not get the lock while A's lease lived.
	CRefused bool
	// BLost: B's acknowledged element is missing from the final read.
	BLost bool
	Final []int64
	Run   *store.Run
	Valid checkers.Validity
}

// Shows reports whether the story showed what it must, in what the clients
// saw and in the checkers' verdict on its history: unfenced, A's stale write
// is accepted, B's update is lost and the history is invalid; fenced, A's
// write is rejected by the fence, B's update survives and the history is
// valid.
func (s Story) Shows() bool {
	if s.Fencing == targets.FencingNone {
		return s.AResult == history.Ok && s.BLost && s.Valid == checkers.Invalid
	}
	return s.AResult == history.Fail && s.AReason == lockappend.ReasonFenced && !s.BLost && s.Valid == checkers.Valid
}

// Demo plays the seed's story on a real cluster, once per fencing mode: A
// acquires the lock, reads, checks its lease and is frozen by SIGSTOP inside
// its critical section; C is refused the lock while A's lease lives; the
// lease expires; B acquires with a higher token, reads and writes; A resumes
// and writes. Each story is recorded and checked like a run, in
// RESULTS/demo-<fencing>/.
func Demo(ctx context.Context, cfg DemoConfig) ([]Story, error) {
	if len(cfg.Fencings) == 0 {
		cfg.Fencings = []targets.Fencing{targets.FencingNone, targets.FencingToken}
	}
	if cfg.TTL == 0 {
		cfg.TTL = 2 * time.Second
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := targets.ClientConfig{TTL: cfg.TTL, RPCTimeout: max(2*time.Second, cfg.TTL)}
	if err := cfg.Target.Validate(client); err != nil {
		return nil, err
	}
	if cfg.Resource == nil {
		return nil, fmt.Errorf("%w: the demo needs a resource", targets.ErrBadConfig)
	}
	work := workloads.Config{AcquireTimeout: 5 * cfg.TTL, Margin: cfg.TTL / 4, Work: 0}
	cl, err := StartCluster(ctx, ClusterConfig{
		Target: cfg.Target, Nodes: cfg.Nodes, Workers: 3, Client: client,
		Workload: wlockappend.Workload{}, Config: work,
		Resources:    []ResourceUse{{Resource: cfg.Resource, Fencing: targets.FencingNone}},
		WorkerBinary: cfg.WorkerBinary, ReadyTimeout: 30 * time.Second, Log: log, Stage: cfg.Stage,
		TargetImage: cfg.TargetImage,
	})
	if err != nil {
		return nil, err
	}
	defer cl.Close("")
	var stories []Story
	for _, f := range cfg.Fencings {
		s, err := replay(ctx, cl, cfg.Out, func() (Story, *store.Run, error) {
			st, err := playStory(ctx, cl, cfg, f, work, log)
			return st, st.Run, err
		})
		if err != nil {
			return stories, err
		}
		stories = append(stories, s)
	}
	return stories, nil
}

// script drives one story: its events arrive on a channel as recorded.
type script struct {
	cl  *Cluster
	rec *history.Recorder
	run *store.Run
	// nemesis is test.json's nemesis of the story.
	nemesis string
	events  chan history.Event
	out     io.Writer
	names   map[history.Process]string
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
			return history.Event{}, fmt.Errorf("%w: demo: %s of %s did not come within %s", ErrHarness, want, s.names[p], d)
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

func playStory(ctx context.Context, cl *Cluster, cfg DemoConfig, f targets.Fencing, work workloads.Config, log *slog.Logger) (st Story, err error) {
	st = Story{Fencing: f}
	s, err := beginStory(ctx, cl, cfg, f, work, map[history.Process]string{0: "A", 1: "B", 2: "C"})
	if err != nil {
		return st, err
	}
	defer s.rec.Close()
	st.Run = s.run
	s.nemesis = "pause-holder (scripted)"
	rec := s.rec
	A, B, C := cl.clients[0], cl.clients[1], cl.clients[2]
	ttl := cfg.TTL
	fmt.Fprintf(cfg.Out, "\nStory %s: fencing %s (%s, %d nodes, lease TTL %s; A=%s B=%s C=%s)\n",
		map[targets.Fencing]string{targets.FencingNone: "1", targets.FencingToken: "2", targets.FencingCAS: "3"}[f],
		f, cfg.Target.Name(), cfg.Nodes, ttl, A.name, B.name, C.name)

	// A: a critical section, frozen at its failpoint (after its lease
	// check, before its write).
	aCfg := work
	aCfg.Work = 100 * time.Millisecond
	holder := cl.ArmHolder()
	pa, err := A.invoke(0, 1, lockappend.FAppend, lockappend.Invoke{Element: 1}, &aCfg)
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	acq, _, err := phase[lockappend.Acquired](ctx, s, 0, lockappend.PhaseAcquired, 10*time.Second)
	if err != nil {
		return st, err
	}
	st.TokenA = acq.Token
	s.say("A", "acquires the lock: fencing token %d", acq.Token)
	rv, _, err := phase[lockappend.ReadValue](ctx, s, 0, lockappend.PhaseRead, 5*time.Second)
	if err != nil {
		return st, err
	}
	s.say("A", "reads the value: %v", rv.Value)
	ck, _, err := phase[lockappend.Checked](ctx, s, 0, lockappend.PhaseChecked, 5*time.Second)
	if err != nil {
		return st, err
	}
	s.say("A", "checks its lease: %.1fs left > %s margin: safe to write, it thinks", float64(ck.RemainingMS)/1000, work.Margin)
	var h nemesis.Holder
	select {
	case h = <-holder:
	case <-time.After(5 * time.Second):
		return st, fmt.Errorf("%w: demo: A never reached its failpoint", ErrHarness)
	}
	if err := cl.Signal(ctx, A.name, "SIGSTOP"); err != nil {
		h.Proceed()
		return st, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	// A is frozen now (Signal returns once every thread is stopped); the
	// story goes on only if A still waited at its failpoint, else it is
	// played again (replay).
	if err := letGo(h, "A"); err != nil { // read by A once it resumes
		return st, err
	}
	paused := rec.Since()
	rec.Record(history.Nemesis, history.Info, history.FStart, history.FaultValue{Fault: "pause-holder", Nodes: []string{A.name},
		Params: map[string]string{"process": "0", "token": fmt.Sprint(acq.Token), "hit": "true", "phase": nemesis.PhaseFailpoint}})
	s.say("harness", "SIGSTOP %s: A freezes inside its critical section (process state T), lease keepalives included", A.name)

	// C is refused while A's lease still lives.
	cCfg := work
	cCfg.AcquireTimeout = (ttl / 3).Round(time.Millisecond)
	pc, err := C.invoke(2, 2, lockappend.FAppend, lockappend.Invoke{Element: 3}, &cCfg)
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	cType := C.await(ctx, pc, 10*time.Second)
	var cDone lockappend.Completion
	_ = pc.completion(&cDone)
	if cType != history.Fail || cDone.Reason != lockappend.ReasonNotAcquired {
		return st, notSetUp("C was not refused while A's lease should still live: %s %s %s", cType, cDone.Reason, cDone.Error)
	}
	st.CRefused = true
	s.say("C", "tries to acquire for %s: refused, A's lease is still live", cCfg.AcquireTimeout)

	// B waits for the lock; it gets it once A's lease expires.
	bCfg := work
	pb, err := B.invoke(1, 3, lockappend.FAppend, lockappend.Invoke{Element: 2}, &bCfg)
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	acq, e, err := phase[lockappend.Acquired](ctx, s, 1, lockappend.PhaseAcquired, 5*ttl+5*time.Second)
	if err != nil {
		return st, err
	}
	st.TokenB = acq.Token
	frozen := time.Duration(e.Time) - paused
	s.say(cfg.Target.Name(), "grants the lock to B while A is still frozen (frozen for %.1fs; lease TTL %s): A's lease ran out without A knowing",
		frozen.Seconds(), ttl)
	s.say("B", "acquires the lock: fencing token %d (> %d)", acq.Token, st.TokenA)
	if rv, _, err := phase[lockappend.ReadValue](ctx, s, 1, lockappend.PhaseRead, 5*time.Second); err == nil {
		s.say("B", "reads the value: %v", rv.Value)
	}
	bType := B.await(ctx, pb, 10*time.Second)
	var bDone lockappend.Completion
	_ = pb.completion(&bDone)
	if bType != history.Ok {
		return st, fmt.Errorf("%w: demo: B's write did not succeed: %s %s", ErrHarness, bDone.Reason, bDone.Error)
	}
	s.say("B", "writes %v with token %d: ok, acknowledged", append(slices.Clone(bDone.Read), 2), st.TokenB)

	// A wakes up and writes.
	if err := cl.Signal(ctx, A.name, "SIGCONT"); err != nil {
		return st, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	rec.Record(history.Nemesis, history.Info, history.FStop, history.FaultValue{Fault: "pause-holder", Nodes: []string{A.name},
		Params: map[string]string{"process": "0", "token": fmt.Sprint(st.TokenA), "hit": "true", "phase": nemesis.PhaseFailpoint}})
	s.say("harness", "SIGCONT %s after %.1fs: A resumes, still believing it holds the lock", A.name, (rec.Since() - paused).Seconds())
	st.AResult = A.await(ctx, pa, 20*time.Second)
	var aDone lockappend.Completion
	_ = pa.completion(&aDone)
	st.AReason = aDone.Reason
	written := append(slices.Clone(aDone.Read), 1)
	switch {
	case st.AResult == history.Ok:
		s.say("A", "writes %v with token %d: ACCEPTED", written, st.TokenA)
	case st.AReason == lockappend.ReasonFenced:
		s.say("A", "writes %v with token %d: REJECTED by the fence (%s)", written, st.TokenA, aDone.Error)
	default:
		s.say("A", "writes %v: %s %s %s", written, st.AResult, st.AReason, aDone.Error)
	}

	// The story took place only if the history says so: A frozen after
	// its lease check, C refused and B's whole critical section while A
	// was frozen, A's write after it resumed.
	if err := inOrder(rec.Events(),
		history.Step{Name: "A checks its lease", Process: 0, Type: history.Phase, F: lockappend.PhaseChecked},
		history.Step{Name: "A frozen", Process: history.Nemesis, Type: history.Info, F: history.FStart},
		history.Step{Name: "C refused", Process: 2, Type: history.Fail, F: lockappend.FAppend},
		history.Step{Name: "B acquires", Process: 1, Type: history.Phase, F: lockappend.PhaseAcquired},
		history.Step{Name: "B's write acknowledged", Process: 1, Type: history.Ok, F: lockappend.FAppend},
		history.Step{Name: "A resumed", Process: history.Nemesis, Type: history.Info, F: history.FStop},
		history.Step{Name: "A writes", Process: 0, Type: history.Phase, F: lockappend.PhaseWriteSent},
	); err != nil {
		return st, err
	}
	final, res, err := s.finish(ctx, cfg, f, wlockappend.Workload{}, 3, aCfg.Work, work.Margin)
	if err != nil {
		return st, err
	}
	st.Final = final
	st.BLost = !slices.Contains(final, 2)
	if st.BLost {
		s.say("result", "final value %v: B's acknowledged update (element 2) is LOST", final)
	} else {
		s.say("result", "final value %v: B's update survived", final)
	}
	st.Valid = res.Valid()
	la, _ := res.Result.(*checkers.LockAppendResult)
	if la == nil {
		return st, fmt.Errorf("%w: demo: no lock-append result", ErrHarness)
	}
	s.say("check", "%s (lost %d of %d acknowledged, %d fence rejections): %s", res.Valid(), la.LostUpdates.Lost,
		la.LostUpdates.Acknowledged, la.FenceRejections, s.run.Path(store.ReportFile))
	return st, nil
}

// beginStory starts one story of a demo: its run directory and recorder
// (whose events the script reads as they are recorded), the resource reset,
// and the workers connected afresh with the resource's fencing f.
func beginStory(ctx context.Context, cl *Cluster, cfg DemoConfig, f targets.Fencing, work workloads.Config, names map[history.Process]string) (*script, error) {
	run, err := store.NewRun(cfg.Results, cfg.script()+"-"+string(f), time.Now())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	events := make(chan history.Event, 1024)
	rec, err := history.NewRecorder(run.Path(store.HistoryFile), func(e history.Event) {
		select {
		case events <- e:
		default: // the script reads every event it needs long before 1024 pile up
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	s := &script{cl: cl, rec: rec, run: run, events: events, out: cfg.Out, names: names}
	if err := cl.reset(ctx); err != nil {
		rec.Close()
		return nil, fmt.Errorf("%w: reset: %w", ErrHarness, err)
	}
	for _, c := range cl.clients {
		c.close()
	}
	cl.clients = nil
	work.Fencings = map[string]targets.Fencing{cfg.Resource.Name(): f}
	cl.cfg.Config = work
	cl.cfg.Resources[0].Fencing = f
	cl.setup = cl.newSetup()
	if err := cl.Connect(ctx, rec); err != nil {
		rec.Close()
		return nil, err
	}
	return s, nil
}

// finish ends a story: the final read of the resource, recorded; the
// history checked with workload w; test.json, results and report written.
// It returns the final list and the results.
func (s *script) finish(ctx context.Context, cfg DemoConfig, f targets.Fencing, w workloads.Workload, concurrency int, aWork, margin time.Duration) ([]int64, *store.Results, error) {
	cl, rec, run := s.cl, s.rec, s.run
	rec.Record(FinalReadProcess, history.Invoke, lockappend.FFinalRead, nil)
	fs, err := cl.host.Resources[0].Store.Read(ctx, resources.Access{Fencing: targets.FencingNone})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: final read: %w", ErrHarness, err)
	}
	final := fs.List
	if final == nil {
		final = []int64{}
	}
	rec.Record(FinalReadProcess, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: final})
	if err := rec.Close(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	res, err := Check(run, w, rec.Events(), 10*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: demo: %w", ErrHarness, err)
	}
	test := store.TestInfo{RunID: cl.RunID, Name: cfg.script() + "-" + string(f), Started: rec.Start().UTC(), Fencecheck: Version(),
		Target: cfg.Target.Name(), Recipe: cfg.Recipe, Workload: w.Name(), Scripted: cfg.script(), Fencing: string(f), Nemesis: s.nemesis,
		Resources:   []store.ResourceInfo{{Name: cfg.Resource.Name(), Fencing: string(f)}},
		Concurrency: concurrency, Nodes: cfg.Nodes, TTL: cfg.TTL.String(), Work: aWork.String(), Margin: margin.String(),
		Images: cl.Images, ImageIDs: cl.ImageIDs, ClusterReady: cl.Ready.Round(time.Millisecond).String()}
	test.TargetVersion = targetVersion(cfg.Target, cfg.TargetImage, cl)
	if err := run.WriteJSON(store.TestFile, test); err != nil {
		return nil, nil, err
	}
	if err := WriteResults(run, test, res, rec.Events(), w); err != nil {
		return nil, nil, err
	}
	return final, res, nil
}
