package scenarios

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	wlockappend "github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

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
//
// Its timings come from the target's profile (Config.timings): A's pause
// outlasts the longest lease (targets.MaxLease: Consul's 2 TTL + 1 s and
// lock-delay, ZooKeeper's TTL + 2 ticks), as B's wait does; C tries for a
// third of the TTL, while A's lease surely lives.
func Demo(ctx context.Context, cfg Config) ([]Story, error) {
	if len(cfg.Fencings) == 0 {
		cfg.Fencings = []targets.Fencing{targets.FencingNone, targets.FencingToken}
	}
	if cfg.Script == "" {
		cfg.Script = DemoName
	}
	tm, err := cfg.timings()
	if err != nil {
		return nil, err
	}
	// B acquires once A's lease ran out: well within 5 leases, as a run's
	// acquire timeout. A waits at its failpoint, frozen, through it.
	work := workloads.Config{WorkerKnobs: spec.WorkerKnobs{AcquireTimeout: 5 * tm.Lease, Margin: tm.Margin, Work: 0}}
	cl, err := cfg.start(ctx, tm, 3, wlockappend.Workload{}, work, work.AcquireTimeout+time.Minute, false)
	if err != nil {
		return nil, err
	}
	defer cl.Close("")
	var stories []Story
	for _, f := range cfg.Fencings {
		s, err := replay(ctx, cl, cfg.Out, func() (Story, *store.Run, error) {
			st, err := playStory(ctx, cl, cfg, tm, f, work)
			return st, st.Run, err
		})
		if err != nil {
			return stories, err
		}
		stories = append(stories, s)
	}
	return stories, nil
}

func playStory(ctx context.Context, cl *harness.Cluster, cfg Config, tm Timings, f targets.Fencing, work workloads.Config) (st Story, err error) {
	st = Story{Fencing: f}
	s, err := beginStory(ctx, cl, cfg, f, work, map[history.Process]string{0: "A", 1: "B", 2: "C"})
	if err != nil {
		return st, err
	}
	defer s.rec.Close()
	st.Run = s.run
	s.nemesis = "pause-holder (scripted)"
	rec := s.rec
	A, B, C := s.clients[0], s.clients[1], s.clients[2]
	ttl := cfg.TTL
	lease := fmt.Sprintf("lease TTL %s", ttl)
	if tm.Lease != ttl {
		lease += fmt.Sprintf(", free at most %s after the last renewal", tm.Lease)
	}
	fmt.Fprintf(cfg.Out, "\nStory %s: fencing %s (%s, %d nodes, %s; A=%s B=%s C=%s)\n",
		map[targets.Fencing]string{targets.FencingNone: "1", targets.FencingToken: "2", targets.FencingCAS: "3"}[f],
		f, cfg.Target.Name(), cfg.Nodes, lease, A.Name(), B.Name(), C.Name())

	pa, paused, err := s.freezeA(ctx, cl, work, &st)
	if err != nil {
		return st, err
	}

	if err := s.refuseC(ctx, work, ttl, &st); err != nil {
		return st, err
	}

	// B waits for the lock; it gets it once A's lease expires.
	bCfg := work
	pb, err := B.Invoke(1, 3, lockappend.FAppend, lockappend.Invoke{Element: 2}, &bCfg)
	if err != nil {
		return st, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	acq, e, err := phase[lockappend.Acquired](ctx, s, 1, lockappend.PhaseAcquired, work.AcquireTimeout+5*time.Second)
	if err != nil {
		return st, err
	}
	st.TokenB = acq.Token
	frozen := time.Duration(e.Time) - paused
	s.say(cfg.Target.Name(), "grants the lock to B while A is still frozen (frozen for %.1fs; %s): A's lease ran out without A knowing",
		frozen.Seconds(), lease)
	s.say("B", "acquires the lock: fencing token %d (> %d)", acq.Token, st.TokenA)
	if rv, _, err := phase[lockappend.ReadValue](ctx, s, 1, lockappend.PhaseRead, 5*time.Second); err == nil {
		s.say("B", "reads the value: %v", rv.Value)
	}
	bType := B.Await(ctx, pb, 10*time.Second)
	var bDone lockappend.Completion
	_ = pb.Completion(&bDone)
	if bType != history.Ok {
		return st, fmt.Errorf("%w: demo: B's write did not succeed: %s %s", harness.ErrHarness, bDone.Reason, bDone.Error)
	}
	s.say("B", "writes %v with token %d: ok, acknowledged", append(slices.Clone(bDone.Read), 2), st.TokenB)

	// A wakes up and writes. The fault's end is recorded before the
	// SIGCONT is sent: A's write, which follows it at once, can reach the
	// recorder before the signal's call returns (a loaded machine).
	rec.Record(history.Nemesis, history.Info, history.FStop, pausedA(A.Name(), st.TokenA))
	if err := cl.Signal(ctx, A.Name(), "SIGCONT"); err != nil {
		return st, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	s.say("harness", "SIGCONT %s after %.1fs: A resumes, still believing it holds the lock", A.Name(), (rec.Since() - paused).Seconds())
	st.AResult = A.Await(ctx, pa, 20*time.Second)
	var aDone lockappend.Completion
	_ = pa.Completion(&aDone)
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

	err = s.judgeStory(ctx, cfg, f, work, &st)
	return st, err
}

// pausedA is the record of the story's pause of A (process 0, on node),
// taken at its failpoint holding token.
func pausedA(node string, token int64) history.FaultValue {
	hit := true
	return history.FaultValue{Fault: "pause-holder", Nodes: []string{node},
		Holder: &history.Aim{Process: 0, Token: &token, Hit: &hit, Phase: nemesis.PhaseFailpoint}}
}

// demoWork is A's time inside its critical section.
const demoWork = 100 * time.Millisecond

// freezeA has A take the lock, read and check its lease, and freezes it at
// its failpoint, before its write. It returns A's pending operation and when
// A froze.
func (s *script) freezeA(ctx context.Context, cl *harness.Cluster, work workloads.Config, st *Story) (*harness.Pending, time.Duration, error) {
	A := s.clients[0]
	// A: a critical section, frozen at its failpoint (after its lease
	// check, before its write).
	aCfg := work
	aCfg.Work = demoWork
	holder := cl.ArmHolder()
	pa, err := A.Invoke(0, 1, lockappend.FAppend, lockappend.Invoke{Element: 1}, &aCfg)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	acq, _, err := phase[lockappend.Acquired](ctx, s, 0, lockappend.PhaseAcquired, 10*time.Second)
	if err != nil {
		return nil, 0, err
	}
	st.TokenA = acq.Token
	s.say("A", "acquires the lock: fencing token %d", acq.Token)
	rv, _, err := phase[lockappend.ReadValue](ctx, s, 0, lockappend.PhaseRead, 5*time.Second)
	if err != nil {
		return nil, 0, err
	}
	s.say("A", "reads the value: %v", rv.Value)
	ck, _, err := phase[lockappend.Checked](ctx, s, 0, lockappend.PhaseChecked, 5*time.Second)
	if err != nil {
		return nil, 0, err
	}
	s.say("A", "checks its lease: %.1fs left > %s margin: safe to write, it thinks", float64(ck.RemainingMS)/1000, work.Margin)
	var h nemesis.Holder
	select {
	case h = <-holder:
	case <-time.After(5 * time.Second):
		return nil, 0, fmt.Errorf("%w: demo: A never reached its failpoint", harness.ErrHarness)
	}
	if err := cl.Signal(ctx, A.Name(), "SIGSTOP"); err != nil {
		h.Proceed()
		return nil, 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	// A is frozen now (Signal returns once every thread is stopped); the
	// story goes on only if A still waited at its failpoint, else it is
	// played again (replay).
	if err := letGo(h, "A"); err != nil { // read by A once it resumes
		return nil, 0, err
	}
	paused := s.rec.Since()
	s.rec.Record(history.Nemesis, history.Info, history.FStart, pausedA(A.Name(), acq.Token))
	s.say("harness", "SIGSTOP %s: A freezes inside its critical section (process state T), lease keepalives included", A.Name())
	return pa, paused, nil
}

// refuseC has C try for the lock while A's lease still lives: it must be
// refused.
func (s *script) refuseC(ctx context.Context, work workloads.Config, ttl time.Duration, st *Story) error {
	C := s.clients[2]
	cCfg := work
	cCfg.AcquireTimeout = (ttl / 3).Round(time.Millisecond)
	pc, err := C.Invoke(2, 2, lockappend.FAppend, lockappend.Invoke{Element: 3}, &cCfg)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	cType := C.Await(ctx, pc, 10*time.Second)
	var cDone lockappend.Completion
	_ = pc.Completion(&cDone)
	if cType != history.Fail || cDone.Reason != lockappend.ReasonNotAcquired {
		return harness.NotSetUp("C was not refused while A's lease should still live: %s %s %s", cType, cDone.Reason, cDone.Error)
	}
	st.CRefused = true
	s.say("C", "tries to acquire for %s: refused, A's lease is still live", cCfg.AcquireTimeout)
	return nil
}

// judgeStory checks that the story took place as scripted, then checks the
// history and tells the verdict.
func (s *script) judgeStory(ctx context.Context, cfg Config, f targets.Fencing, work workloads.Config, st *Story) error {
	// The story took place only if the history says so: A frozen after
	// its lease check, C refused and B's whole critical section while A
	// was frozen, A's write after it resumed.
	if err := inOrder(s.rec.Events(),
		history.Step{Name: "A checks its lease", Process: 0, Type: history.Phase, F: lockappend.PhaseChecked},
		history.Step{Name: "A frozen", Process: history.Nemesis, Type: history.Info, F: history.FStart},
		history.Step{Name: "C refused", Process: 2, Type: history.Fail, F: lockappend.FAppend},
		history.Step{Name: "B acquires", Process: 1, Type: history.Phase, F: lockappend.PhaseAcquired},
		history.Step{Name: "B's write acknowledged", Process: 1, Type: history.Ok, F: lockappend.FAppend},
		history.Step{Name: "A resumed", Process: history.Nemesis, Type: history.Info, F: history.FStop},
		history.Step{Name: "A writes", Process: 0, Type: history.Phase, F: lockappend.PhaseWriteSent},
	); err != nil {
		return err
	}
	final, res, err := s.finish(ctx, cfg, f, wlockappend.Workload{}, 3, demoWork, work.Margin)
	if err != nil {
		return err
	}
	st.Final = final
	st.BLost = !slices.Contains(final, 2)
	if st.BLost {
		s.say("result", "final value %v: B's acknowledged update (element 2) is LOST", final)
	} else {
		s.say("result", "final value %v: B's update survived", final)
	}
	st.Valid = res.Valid()
	if res.Result == nil {
		return fmt.Errorf("%w: demo: no lock-append result", harness.ErrHarness)
	}
	sum := res.Result.Summary()
	s.say("check", "%s (lost %d of %d acknowledged, %d fence rejections): %s", res.Valid(), sum.Lost,
		sum.Acknowledged, sum.FenceRejections, s.run.Path(store.ReportFile))
	return nil
}
