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
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Etcd11456 plays etcd issue 11456 on a real cluster, with the lock RPC
// (the target must be etcd with --recipe lock-rpc: the server's v3lock
// service runs the mutex for the client, with the server's own code). H
// takes the lock and holds it (stopped at its failpoint, its lease kept
// alive); W calls Lock and blocks behind H; W is frozen (SIGSTOP) for 3 TTL,
// so that its lease expires and the server deletes W's key while W's call
// waits; W resumes; H writes and releases. A server with the bug (3.4.3:
// its mutex does not check, once the keys before its own are gone, that its
// own key still exists) now answers W's call with the lock; a fixed one
// (3.4.4+, 3.5, 3.6) answers that the session expired. W trusts the grant,
// as `etcdctl lock` and Jepsen's client do (it does not check its lease), and
// reads; X then takes the lock, which is free (W's key is gone), reads,
// writes and releases; W writes last. With the bug and no fencing, W's
// write overwrites X's acknowledged one: invalid. Fixed, or fenced: valid.
// One story, fencing f, recorded in RESULTS/etcd-11456-<fencing>/.
func Etcd11456(ctx context.Context, cfg Config, f targets.Fencing) (Regression, error) {
	cfg.Script = Etcd11456Name
	tm, err := cfg.timings()
	if err != nil {
		return Regression{}, err
	}
	work := workloads.Config{WorkerKnobs: spec.WorkerKnobs{AcquireTimeout: 5 * tm.Lease, Margin: tm.Margin}}
	// H waits at its failpoint through W's pause.
	cl, err := cfg.start(ctx, tm, 3, wlockappend.Workload{}, work, 3*cfg.TTL+time.Minute, false)
	if err != nil {
		return Regression{}, err
	}
	defer cl.Close("")
	return replay(ctx, cl, cfg.Out, func() (Regression, *store.Run, error) {
		reg, err := playEtcd11456(ctx, cl, cfg, f, work)
		return reg, reg.Run, err
	})
}

// playEtcd11456 plays the scenario once on cl. It returns ErrNotSetUp when
// the scenario did not take place as scripted: W's Lock call answered
// before H released (it had not reached the server before W froze), W not
// frozen, H or W no longer waiting at its failpoint, or the phases in
// another order than the script's.
func playEtcd11456(ctx context.Context, cl *harness.Cluster, cfg Config, f targets.Fencing, work workloads.Config) (Regression, error) {
	var reg Regression
	s, err := beginStory(ctx, cl, cfg, f, work, map[history.Process]string{0: "H", 1: "W", 2: "X"})
	if err != nil {
		return reg, err
	}
	defer s.rec.Close()
	reg.Run = s.run
	s.nemesis = "pause-waiter (scripted)"
	H, W, X := s.clients[0], s.clients[1], s.clients[2]
	ttl := cfg.TTL
	fmt.Fprintf(cfg.Out, "\n%s: fencing %s (%s, %d nodes, lease TTL %s, recipe %s; H=%s W=%s X=%s)\n",
		Etcd11456Name, f, cfg.Target.Name(), cfg.Nodes, ttl, cfg.Recipe, H.Name(), W.Name(), X.Name())

	// H takes the lock and holds it at its failpoint.
	holdH := cl.ArmHolder()
	ph, err := H.Invoke(0, 1, lockappend.FAppend, lockappend.Invoke{Element: 1}, &work)
	if err != nil {
		return reg, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	acq, _, err := phase[lockappend.Acquired](ctx, s, 0, lockappend.PhaseAcquired, 10*time.Second)
	if err != nil {
		return reg, err
	}
	s.say("H", "acquires the lock: token %d, and holds it (its lease kept alive)", acq.Token)
	var hH nemesis.Holder
	select {
	case hH = <-holdH:
	case <-time.After(10 * time.Second):
		return reg, fmt.Errorf("%w: %s: H never reached its failpoint", harness.ErrHarness, Etcd11456Name)
	}

	pw, err := s.freezeWaiter(ctx, cl, work, hH, ttl)
	if err != nil {
		return reg, err
	}

	// H writes and releases: the keys before W's are gone.
	holdW := cl.ArmHolder()
	if err := letGo(hH, "H"); err != nil {
		return reg, err
	}
	if typ := H.Await(ctx, ph, 15*time.Second); typ != history.Ok {
		s.say("H", "writes and releases: %s", typ)
	} else {
		s.say("H", "writes [1] and releases the lock")
	}
	e, err := s.waitAcquiredOrDone(ctx, 1, 20*time.Second)
	if err != nil {
		return reg, err
	}
	var hW nemesis.Holder
	if e.Type == history.Phase {
		reg.Granted = true
		var a lockappend.Acquired
		_ = e.Decode(&a)
		s.say(cfg.Target.Name(), "GRANTS W the lock (token %d) although W's lease expired while it waited: etcd#11456", a.Token)
		select {
		case hW = <-holdW:
			s.say("W", "trusts the grant, reads the value, and is about to write")
		case <-time.After(10 * time.Second):
			return reg, harness.NotSetUp("W was granted the lock but never reached its write")
		}
	} else {
		var d lockappend.Completion
		_ = pw.Completion(&d)
		s.say(cfg.Target.Name(), "refuses W the lock: %s %s", d.Reason, d.Error)
		// The wait armed for W would catch X: let whoever it catches go.
		go func() {
			select {
			case h := <-holdW:
				h.Proceed()
			case <-time.After(time.Minute):
			}
		}()
	}

	// X takes the lock, which is free, and writes.
	px, err := X.Invoke(2, 3, lockappend.FAppend, lockappend.Invoke{Element: 3}, &work)
	if err != nil {
		proceed(hW)
		return reg, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	xType := X.Await(ctx, px, 5*ttl+10*time.Second)
	var xDone lockappend.Completion
	_ = px.Completion(&xDone)
	s.say("X", "acquires, reads %v, writes with element 3: %s %s", xDone.Read, xType, xDone.Reason)
	if reg.Granted {
		if err := letGo(hW, "W"); err != nil {
			return reg, err
		}
		wType := W.Await(ctx, pw, 15*time.Second)
		var wDone lockappend.Completion
		_ = pw.Completion(&wDone)
		s.say("W", "writes %v: %s %s", append(slices.Clone(wDone.Read), 2), wType, wDone.Reason)
	} else {
		W.Await(ctx, pw, 5*time.Second)
	}

	steps := etcd11456Steps(reg.Granted)
	if err := inOrder(s.rec.Events(), steps...); err != nil {
		return reg, err
	}
	final, res, err := s.finish(ctx, cfg, f, wlockappend.Workload{}, 3, work.Work, work.Margin)
	if err != nil {
		return reg, err
	}
	reg.Final, reg.Valid = final, res.Valid()
	s.say("check", "final value %v: %s: %s", final, res.Valid(), s.run.Path(store.ReportFile))
	return reg, nil
}

// freezeWaiter has W call Lock behind H (who holds the lock at its
// failpoint, hH) and freezes W for 3 TTLs, so that its lease expires while
// its call waits. It returns W's pending operation; an error lets H go on.
func (s *script) freezeWaiter(ctx context.Context, cl *harness.Cluster, work workloads.Config, hH nemesis.Holder, ttl time.Duration) (*harness.Pending, error) {
	W := s.clients[1]
	// W calls Lock and waits behind H; frozen, its lease expires.
	wCfg := work
	wCfg.AcquireTimeout = 60 * time.Second
	wCfg.Margin = -time.Hour // W trusts the grant: no lease check
	pw, err := W.Invoke(1, 2, lockappend.FAppend, lockappend.Invoke{Element: 2}, &wCfg)
	if err != nil {
		hH.Proceed()
		return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	time.Sleep(time.Second) // W's Lock call is under way, waiting behind H
	if e, done := answered(s.rec.Events(), 1, lockappend.PhaseAcquired); done {
		hH.Proceed()
		return nil, harness.NotSetUp("W's Lock call was answered (%s %s) while H held the lock, before W froze", e.Type, e.F)
	}
	if err := cl.Signal(ctx, W.Name(), "SIGSTOP"); err != nil {
		hH.Proceed()
		return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	fault := history.FaultValue{Fault: "pause-waiter", Nodes: []string{W.Name()}, Holder: &history.Aim{Process: 1}}
	s.rec.Record(history.Nemesis, history.Info, history.FStart, fault)
	s.say("harness", "SIGSTOP %s: W freezes while its Lock call waits, lease keepalives included", W.Name())
	time.Sleep(3 * ttl)
	if err := cl.Signal(ctx, W.Name(), "SIGCONT"); err != nil {
		hH.Proceed()
		return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	s.rec.Record(history.Nemesis, history.Info, history.FStop, fault)
	s.say("harness", "SIGCONT %s after %s: W's lease (TTL %s) has expired, and its lock key with it", W.Name(), 3*ttl, ttl)
	time.Sleep(time.Second)
	// W's call must still wait behind H: answered now, it reached the
	// server only after W's lease had expired (a loaded machine), which is
	// not the bug's scenario.
	if e, done := answered(s.rec.Events(), 1, lockappend.PhaseAcquired); done {
		hH.Proceed()
		return nil, harness.NotSetUp("W's Lock call was answered (%s %s) before H released: it had not reached the server before W froze", e.Type, e.F)
	}
	return pw, nil
}

// etcd11456Steps is the scenario's order in the history, with W granted
// the lock or refused.
func etcd11456Steps(granted bool) []history.Step {
	// The scenario took place only if the history says so: W frozen and
	// resumed while H held the lock, H's write and release after that,
	// then W's answer, X's write, and W's write last if W was granted.
	steps := []history.Step{
		{Name: "H acquires", Process: 0, Type: history.Phase, F: lockappend.PhaseAcquired},
		{Name: "W frozen", Process: history.Nemesis, Type: history.Info, F: history.FStart},
		{Name: "W resumed", Process: history.Nemesis, Type: history.Info, F: history.FStop},
		{Name: "H writes", Process: 0, Type: history.Phase, F: lockappend.PhaseWriteSent},
		// H's release lets the server answer W, so W's answer can reach
		// the harness before H's own (its operation completes after the
		// release): the order is taken at H's releasing phase, which
		// H's worker reports before it asks for the release.
		{Name: "H releases", Process: 0, Type: history.Phase, F: lockappend.PhaseReleasing},
	}
	if granted {
		steps = append(steps,
			history.Step{Name: "W granted", Process: 1, Type: history.Phase, F: lockappend.PhaseAcquired},
			history.Step{Name: "X's write acknowledged", Process: 2, Type: history.Ok, F: lockappend.FAppend},
			history.Step{Name: "W writes", Process: 1, Type: history.Phase, F: lockappend.PhaseWriteSent})
	} else {
		steps = append(steps,
			history.Step{Name: "W refused", Process: 1, Type: history.Fail, F: lockappend.FAppend},
			history.Step{Name: "X's write acknowledged", Process: 2, Type: history.Ok, F: lockappend.FAppend})
	}
	return steps
}

// waitAcquiredOrDone returns p's next lock-acquired phase or completion,
// whichever comes first, failing after d.
func (s *script) waitAcquiredOrDone(ctx context.Context, p history.Process, d time.Duration) (history.Event, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case e := <-s.events:
			if e.Process == p && (e.Type.Completes() || (e.Type == history.Phase && e.F == lockappend.PhaseAcquired)) {
				return e, nil
			}
		case <-t.C:
			return history.Event{}, fmt.Errorf("%w: %s: neither a grant nor an answer for %s within %s", harness.ErrHarness, Etcd11456Name, s.names[p], d)
		case <-ctx.Done():
			return history.Event{}, ctx.Err()
		}
	}
}
