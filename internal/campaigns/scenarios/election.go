package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/election"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// ElectionDemo plays the seed's Raft example on a real cluster, once per
// fencing mode (default none, term): A is elected leader with term Ta,
// reads the log and, inside its leader work, is partitioned from the
// cluster (iptables in its network namespace, as partition-client does); its
// leadership lapses and B, campaigning, is elected with term Tb > Ta and
// appends entry Tb.1; the partition heals and A, still believing it
// leads, appends its entry Ta.1. Unfenced the log accepts it after Tb.1
// (a forked log, B's entry erased); with term fencing the log refuses it.
// Story's TokenA and TokenB are the terms; BLost says whether B's entry
// is missing from the final log.
func ElectionDemo(ctx context.Context, cfg Config) ([]Story, error) {
	if len(cfg.Fencings) == 0 {
		cfg.Fencings = []targets.Fencing{targets.FencingNone, targets.FencingTerm}
	}
	if cfg.Script == "" {
		cfg.Script = DemoName
	}
	if _, ok := cfg.Target.(targets.Electing); !ok {
		return nil, fmt.Errorf("%w: target %s has no leader-election recipe", targets.ErrBadConfig, cfg.Target.Name())
	}
	tm, err := cfg.timings()
	if err != nil {
		return nil, err
	}
	lease := tm.Lease
	work := workloads.Config{WorkerKnobs: spec.WorkerKnobs{AcquireTimeout: 3*lease + 10*time.Second, Margin: tm.Margin}}
	// cutOff's partition-client changes the old leader's network.
	cl, err := cfg.start(ctx, tm, 2, election.Workload{}, work, 0, nemesis.NeedsNet([]nemesis.Fault{nemesis.PartitionClient{}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close("")
	var stories []Story
	for _, f := range cfg.Fencings {
		s, err := replay(ctx, cl, cfg.Out, func() (Story, *store.Run, error) {
			st, err := playElection(ctx, cl, cfg, f, work, lease)
			return st, st.Run, err
		})
		if err != nil {
			return stories, err
		}
		stories = append(stories, s)
	}
	return stories, nil
}

func playElection(ctx context.Context, cl *harness.Cluster, cfg Config, f targets.Fencing, work workloads.Config, lease time.Duration) (st Story, err error) {
	st = Story{Fencing: f}
	s, err := beginStory(ctx, cl, cfg, f, work, map[history.Process]string{0: "A", 1: "B"})
	if err != nil {
		return st, err
	}
	defer s.rec.Close()
	st.Run = s.run
	s.nemesis = "partition-client (scripted)"
	A, B := s.clients[0], s.clients[1]
	fmt.Fprintf(cfg.Out, "\nElection story: fencing %s (%s, %d nodes, leadership TTL %s; A=%s B=%s)\n  recipe: %s\n",
		f, cfg.Target.Name(), cfg.Nodes, cfg.TTL, A.Name(), B.Name(), cfg.Target.(targets.Electing).Election())

	// A leads; its leader work outlasts its leadership, the new leader's
	// election and entry, and the heal.
	aCfg := work
	aCfg.Work = 2*lease + 2*cfg.TTL + 6*time.Second
	holder := cl.ArmHolder()
	pa, err := A.Invoke(0, 1, election.FLead, election.Invoke{Elements: []int64{1}}, &aCfg)
	if err != nil {
		return st, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	el, _, err := phase[election.Elected](ctx, s, 0, election.PhaseElected, 10*time.Second)
	if err != nil {
		return st, err
	}
	st.TokenA = el.Term
	s.say("A", "wins the election: leader with term %d", el.Term)
	rv, _, err := phase[la.ReadValue](ctx, s, 0, election.PhaseRead, 5*time.Second)
	if err != nil {
		return st, err
	}
	s.say("A", "reads the log: %v", rv.Value)
	ck, _, err := phase[la.Checked](ctx, s, 0, election.PhaseChecked, 5*time.Second)
	if err != nil {
		return st, err
	}
	s.say("A", "checks its leadership: %.1fs left > %s margin: it leads, it thinks, and starts entry %d.1", float64(ck.RemainingMS)/1000, work.Margin, el.Term)

	// The partition, aimed at A's leader work as partition-client aims it.
	inj, err := cutOff(ctx, cl, holder)
	if err != nil {
		return st, err
	}
	healed := false
	heal := func() error {
		if healed {
			return nil
		}
		healed = true
		// Recorded before the heal: A's write, which the heal lets
		// through, can reach the recorder before Recover returns.
		s.rec.Record(history.Nemesis, history.Info, history.FStop, inj.Value("partition-client"))
		return inj.Recover(context.WithoutCancel(ctx))
	}
	defer func() {
		if herr := heal(); herr != nil && err == nil {
			err = fmt.Errorf("%w: heal: %w", harness.ErrHarness, herr)
		}
	}()
	cut := s.rec.Since()
	s.rec.Record(history.Nemesis, history.Info, history.FStart, inj.Value("partition-client"))
	if !inj.Hit() {
		return st, harness.NotSetUp("the partition missed A: it had given up waiting at its failpoint")
	}
	s.say("harness", "cuts %s off from every server (iptables): A's leadership can no longer be renewed", A.Name())

	// B campaigns and wins once A's leadership lapses.
	pb, err := B.Invoke(1, 2, election.FLead, election.Invoke{Elements: []int64{2}}, nil)
	if err != nil {
		return st, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	el, e, err := phase[election.Elected](ctx, s, 1, election.PhaseElected, work.AcquireTimeout+5*time.Second)
	if err != nil {
		return st, err
	}
	st.TokenB = el.Term
	s.say(cfg.Target.Name(), "elects B while A is cut off (%.1fs after the cut): A's leadership lapsed without A knowing", (time.Duration(e.Time) - cut).Seconds())
	s.say("B", "leader with term %d (> %d)", el.Term, st.TokenA)
	bType := B.Await(ctx, pb, 20*time.Second)
	var bDone election.Completion
	_ = pb.Completion(&bDone)
	if bType != history.Ok || bDone.Written != 1 {
		return st, fmt.Errorf("%w: demo: B's entry was not acknowledged: %s %s %s", harness.ErrHarness, bType, bDone.Reason, bDone.Error)
	}
	s.say("B", "appends entry %d.1: acknowledged; B resigns", st.TokenB)

	if err := heal(); err != nil {
		return st, fmt.Errorf("%w: heal: %w", harness.ErrHarness, err)
	}
	s.say("harness", "heals the partition after %.1fs: A is back, still in its leader work, still believing it leads", (s.rec.Since() - cut).Seconds())
	st.AResult = A.Await(ctx, pa, aCfg.Work+30*time.Second)
	var aDone election.Completion
	_ = pa.Completion(&aDone)
	st.AReason = aDone.Reason
	switch {
	case st.AResult == history.Ok:
		s.say("A", "appends entry %d.1 after entry %d.1: ACCEPTED, the log forked", st.TokenA, st.TokenB)
	case st.AReason == la.ReasonFenced:
		s.say("A", "appends entry %d.1: REJECTED, the log has seen term %d (%s)", st.TokenA, st.TokenB, aDone.Error)
	default:
		s.say("A", "appends entry %d.1: %s %s %s", st.TokenA, st.AResult, st.AReason, aDone.Error)
	}

	err = s.judgeElection(ctx, cfg, f, work, aCfg.Work, &st)
	return st, err
}

// judgeElection checks that the election story took place as scripted (A
// working for aWork), then checks the history and tells the verdict.
func (s *script) judgeElection(ctx context.Context, cfg Config, f targets.Fencing, work workloads.Config, aWork time.Duration, st *Story) error {
	// The story took place only if A's write left after the heal, with
	// B's whole term inside the partition.
	if err := inOrder(s.rec.Events(),
		history.Step{Name: "A checks its leadership", Process: 0, Type: history.Phase, F: election.PhaseChecked},
		history.Step{Name: "A cut off", Process: history.Nemesis, Type: history.Info, F: history.FStart},
		history.Step{Name: "B elected", Process: 1, Type: history.Phase, F: election.PhaseElected},
		history.Step{Name: "B's entry acknowledged", Process: 1, Type: history.Ok, F: election.FLead},
		history.Step{Name: "the partition healed", Process: history.Nemesis, Type: history.Info, F: history.FStop},
		history.Step{Name: "A writes", Process: 0, Type: history.Phase, F: election.PhaseWriteSent},
	); err != nil {
		return err
	}
	final, res, err := s.finish(ctx, cfg, f, election.Workload{}, 2, aWork, work.Margin)
	if err != nil {
		return err
	}
	st.Final = final
	st.BLost = !slices.Contains(final, 2)
	st.Valid = res.Valid()
	if st.BLost {
		s.say("result", "final log %v: B's acknowledged entry %d.1 is LOST", final, st.TokenB)
	} else {
		s.say("result", "final log %v: B's entry survived", final)
	}
	o, ok := election.OutcomeOf(res)
	if !ok {
		return fmt.Errorf("%w: demo: no election result", harness.ErrHarness)
	}
	s.say("check", "%s (forks %d, lost entries %d, refused entries %d): %s", res.Valid(), o.Forks, o.Lost,
		o.Refused, s.run.Path(store.ReportFile))
	return nil
}

// cutOff partitions the next holder at its failpoint (the one armed) from
// every server, as partition-client does, and lets it proceed.
func cutOff(ctx context.Context, cl *harness.Cluster, armed chan nemesis.Holder) (*nemesis.Injection, error) {
	var h nemesis.Holder
	select {
	case h = <-armed:
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("%w: demo: the leader never reached its failpoint", harness.ErrHarness)
	}
	// PartitionClient takes its holder from NextHolder: hand it this one.
	inj, err := nemesis.PartitionClient{}.Inject(ctx, oneHolder{Env: cl, h: h}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	return inj, nil
}

// oneHolder is the cluster as a nemesis.Env whose next holder is h.
type oneHolder struct {
	nemesis.Env
	h nemesis.Holder
}

func (o oneHolder) NextHolder(context.Context) (nemesis.Holder, error) { return o.h, nil }
