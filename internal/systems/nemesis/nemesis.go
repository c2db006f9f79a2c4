// Package nemesis injects faults into a running test and heals them.
//
// A Fault is one kind of failure. Inject breaks something and returns an
// Injection that knows how to heal exactly that; a Schedule runs faults one
// after another, holds each, recovers it, and records every fault's start and
// stop as nemesis events in the history. Recovery always runs: when the hold
// ends, when the schedule's context ends (end of the run, Ctrl-C), and, for a
// harness that crashed, `fencecheck clean` resumes and removes the containers.
//
// Faults are listed in one table (table.go); each lives in its own file.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/platform/netdelay"
)

// Holder is a client that holds the lock and waits at its failpoint, inside
// its critical section: it has passed its lease check and will work and
// write once it proceeds.
type Holder struct {
	Node    string // its container's node name (w1, ...)
	Process history.Process
	Token   int64
	// Proceed lets the holder go on. A fault that takes a holder calls it
	// exactly once, after its fault is in place (or when injecting failed),
	// so that the fault is in place before the holder's write leaves. It
	// reports whether the holder was still waiting at its failpoint: false
	// when it had given up waiting (the fault may have missed it).
	Proceed func() bool
}

// aim lets the holder go on and is what a fault aimed at it records: its
// process and token, and whether the fault was in place while it waited at
// its failpoint (hit).
func (h Holder) aim() *history.Aim {
	waiting := h.Proceed == nil || h.Proceed()
	return h.aimed(waiting)
}

// aimed is the record of a fault aimed at h, which hit it or not.
func (h Holder) aimed(hit bool) *history.Aim {
	token := h.Token
	return &history.Aim{Process: h.Process, Token: &token, Hit: &hit, Phase: PhaseFailpoint}
}

// PhaseFailpoint is where a fault aimed at a holder lands: the holder's
// failpoint, after its lease check and before its work and write.
const PhaseFailpoint = "after the lease check, before the write"

// Env is what faults act on; the harness implements it.
type Env interface {
	Cluster
	Processes
	Network
	Clocks
	Disks
}

// Cluster is what a fault knows of the test.
type Cluster interface {
	// Lease is the longest the lock can stay unavailable after its holder's
	// last renewal (targets.MaxLease): a holder paused longer than this has
	// lost the lock. TTL is the lease TTL.
	Lease() time.Duration
	TTL() time.Duration
	// Servers and Clients are the node names (n1 ..., w1 ...); Resources
	// the nodes of the resources that run containers of their own (each
	// resource's first: pg, proxy), none when the list lives in the lock
	// service.
	Servers() []string
	Clients() []string
	// Tier is a server's tier in a target with servers of more than one
	// kind (targets.NodeSpec.Tier), "" otherwise.
	Tier(node string) string
	Resources() []string
	// Leader is the server that leads now.
	Leader(ctx context.Context) (string, error)
	// NextHolder blocks until a client reaches its failpoint after the
	// call, and returns it, waiting there until its Proceed is called.
	NextHolder(ctx context.Context) (Holder, error)
	// Healthy returns nil once every server serves again, or the reason it
	// does not when ctx ends.
	Healthy(ctx context.Context) error
}

// Processes acts on the processes of nodes.
type Processes interface {
	// Signal sends a signal (SIGSTOP, SIGCONT, ...) to the process of a
	// node: a server or a client container.
	Signal(ctx context.Context, node string, sig string) error
	// Kill sends SIGKILL to a node's container (a server, a resource or a
	// client) and waits until it stopped; Restart starts it again on its
	// data, at its address. A killed client's operation in flight
	// completes info at once; once restarted, the harness reconnects to it
	// and its next operations run under a fresh process.
	Kill(ctx context.Context, node string) error
	Restart(ctx context.Context, node string) error
	// LimitCPU caps a node's container at cpus cores of CPU time (0.02: 2 %
	// of one core); 0 lifts the cap. CPUTime is the CPU time every process
	// of the container has used so far.
	LimitCPU(ctx context.Context, node string, cpus float64) error
	CPUTime(ctx context.Context, node string) (time.Duration, error)
}

// Network changes the network of node containers, in their namespaces.
type Network interface {
	// NetExec runs a command (iptables, tc) in a node's network
	// namespace, from a helper container of fencecheck's base image that
	// shares it: it needs nothing inside the node's own image, which may
	// have no shell and no iptables.
	NetExec(ctx context.Context, node string, cmd ...string) (string, error)
	// Addr is a node's IP address on the run's network.
	Addr(node string) string
	// Shape gives every packet a node sends on the run's network the
	// treatment p says (delay, reorder, duplication, corruption, a
	// bandwidth; package netdelay) until Unshape, which returns what was
	// done to them.
	Shape(ctx context.Context, node string, p netdelay.Policy) error
	Unshape(ctx context.Context, node string) (netdelay.Counts, error)
}

// Clocks skews clocks.
type Clocks interface {
	// SkewProcessClock makes the wall clock of a node's processes (a
	// server's; every process of a client's container: the worker and any
	// client program it runs) run offset ahead, at the true rate (0
	// restores it). Their monotonic clocks are not touched.
	SkewProcessClock(ctx context.Context, node string, offset time.Duration) error
	// RateProcessClock makes both clocks of a node's processes (as
	// SkewProcessClock picks them) run rate times as fast as true time,
	// each continuing from what it reads. 1 heals: the wall clock reads
	// true again, and the monotonic clock runs at the true rate from
	// where it is (it never goes back).
	RateProcessClock(ctx context.Context, node string, rate float64) error
	// ObservedClock reads what a node's clock showed since a time, from
	// its log lines (those its process stamps with its wall clock, against
	// the engine's true time of each); an error says why it could not.
	ObservedClock(ctx context.Context, node string, since time.Time) (ClockSeen, error)
	// SkewClientClock makes a client's lease clock run offset ahead
	// (negative: behind; 0 restores it).
	SkewClientClock(ctx context.Context, node string, offset time.Duration) error
}

// Disks acts on the lazy disks the harness mounts under the data
// directories of a run's nodes when a fault asks for them (DiskFault): file
// systems that can slow fsync and forget what no fsync made durable.
type Disks interface {
	// SlowSync makes every fsync on a node's disk take delay longer (0:
	// as it does).
	SlowSync(ctx context.Context, node string, delay time.Duration) error
	// LoseUnsynced makes a node's disk forget every write no fsync made
	// durable, as a power loss does; the node must be down (Kill). An
	// error says why it could not (no lazy disk, or one its process never
	// wrote through).
	LoseUnsynced(ctx context.Context, node string) (DiskLoss, error)
	// DiskStats is what a node's disk has seen so far.
	DiskStats(ctx context.Context, node string) (DiskStats, error)
}

// DiskLoss is what Disks.LoseUnsynced dropped.
type DiskLoss struct {
	Files int   // files that lost content
	Bytes int64 // bytes written or cut since those files' last fsync
}

// DiskStats counts what a lazy disk has seen: writes, truncations and
// fsyncs (Ops), fsyncs, and those SlowSync held.
type DiskStats struct{ Ops, Syncs, Slowed int64 }

// DiskFault is a fault that may need lazy disks (Disks) under the data
// directories of the run's nodes, mounted before they start: it does when
// NeedsDisk says so.
type DiskFault interface {
	Fault
	NeedsDisk() bool
}

// NeedsDisk reports whether any of the faults needs lazy disks.
func NeedsDisk(faults []Fault) bool {
	for _, f := range faults {
		if df, ok := f.(DiskFault); ok && df.NeedsDisk() {
			return true
		}
	}
	return false
}

// ClockSeen is what a node's log showed of its clock (Clocks.ObservedClock).
type ClockSeen struct {
	// Lines counts the log lines stamped with the process's clock.
	Lines int
	// Offset is the process's clock minus the true time at the last.
	Offset time.Duration
	// Rate is the process's clock's rate since the clock was set,
	// assuming it read true then; 0 when the lines span too little time.
	Rate float64
}

// NeedsNet reports whether any of the faults changes a node's network
// (its table row is marked Net): the run then needs the network helpers
// (Network.NetExec), whose image is fencecheck's base image. A fault that
// is not in the table (a story's own) counts as none.
func NeedsNet(faults []Fault) bool {
	for _, f := range faults {
		name, _, _ := strings.Cut(f.Name(), ":")
		if e, ok := lookup(name); ok && e.Net {
			return true
		}
	}
	return false
}

// NetFault is a fault that changes the network of nodes (through
// Network.NetExec). NetNodes names every node it may change, so that the
// harness can start their network helpers before the schedule begins.
type NetFault interface {
	Fault
	NetNodes(c Cluster) []string
}

// NetNodes is every node the faults may change the network of, once each,
// in the order the faults name them.
func NetNodes(faults []Fault, c Cluster) []string {
	var out []string
	for _, f := range faults {
		if nf, ok := f.(NetFault); ok {
			for _, n := range nf.NetNodes(c) {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// Fault is one kind of failure.
type Fault interface {
	// Name is the fault's name as --nemesis takes it, with its scope.
	Name() string
	// Inject breaks something, now or when its trigger comes (it may block
	// until then, or until ctx ends), and returns what it broke. r is the
	// schedule's seeded random source.
	//
	// If it fails after it broke something (or may have: a SIGKILL or
	// SIGSTOP whose call the run's end cut short), it returns, with its
	// error, the Injection of what it broke, whose Recover heals exactly
	// that (inPart): the schedule records it as a fault cut short, its
	// error at its start, and heals it, so that no fault that took effect
	// is missing from the history. If it broke nothing, the Injection is
	// nil.
	Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error)
}

// Injection is a fault in effect.
type Injection struct {
	Nodes []string
	// Hold is how long the schedule keeps the fault before recovering it
	// (recorded as the fault's hold).
	Hold time.Duration
	// Holder is the lock holder the fault took, if it took one (Holder's
	// aim).
	Holder *history.Aim
	// Leader is the node the fault took as the leader, when its Nodes are
	// more than that one (history.FaultValue's Leader).
	Leader string
	// Record is the fault's own record, if it has one: a pointer to its
	// record type, declared in the fault's file, recorded as the fault's
	// figures at its start and again at its stop. Recover may add to it
	// what it measured.
	Record any
	// Recover heals exactly what Inject broke. It is called once, with a
	// context that is not the (maybe cancelled) run's.
	Recover func(ctx context.Context) error

	// health and replay are the schedule's: the health checks around the
	// fault, and the replayed step.
	health history.Health
	replay string
}

// inPart is what Inject returns when it failed with err after breaking
// nodes: an Injection of those nodes, with rec as its record and heal as
// its Recover, held for no time (the schedule heals it at once), or nil if
// no node was broken.
func inPart(nodes []string, rec any, heal func(context.Context) error, err error) (*Injection, error) {
	if len(nodes) == 0 {
		return nil, err
	}
	return &Injection{Nodes: slices.Clone(nodes), Record: rec, Recover: heal}, err
}

// Hit tells whether the fault was aimed at a holder and in place while the
// holder still waited at its failpoint.
func (inj *Injection) Hit() bool {
	return inj.Holder != nil && inj.Holder.Hit != nil && *inj.Holder.Hit
}

// Value is the nemesis event's value of the injection of fault: its record.
func (inj *Injection) Value(fault string) history.FaultValue {
	v := history.FaultValue{Fault: fault, Nodes: inj.Nodes, Hold: history.Ms(inj.Hold), Leader: inj.Leader, Health: inj.health,
		Replay: inj.replay, Figures: history.FiguresOf(inj.Record)}
	if inj.Holder != nil {
		h := *inj.Holder
		v.Holder = &h
	}
	return v
}

// Recorder records nemesis events.
type Recorder interface {
	Record(p history.Process, t history.Type, f string, value any) history.Event
}

// Schedule runs faults one at a time: wait Interval, pick a fault at random
// (seeded), inject it, hold it, recover it; again until the context ends.
//
// With Steps it replays a recorded schedule instead (see Recorded): for each
// step in order it waits the step's After, injects the step's fault (a
// holder fault on the next holder, a :leader fault on the leader of the
// moment), holds it for the step's Hold, and recovers it; after the last
// step it injects nothing more. Every random choice else (the nodes of a
// random scope, a clock's offset) is drawn from the seeded source as the
// original schedule drew it, the draw that picked each fault included, so
// that a replay with the run's seed and fault list picks the recorded nodes
// again; each replayed fault records which step it is (param "replay") and,
// when its nodes differ from the recorded ones, both.
type Schedule struct {
	Faults   []Fault
	Interval time.Duration
	Seed     uint64
	Steps    []Step
	Log      *slog.Logger

	mu     sync.Mutex
	active *active
}

type active struct {
	fault string
	inj   *Injection
}

// Active returns the name and nodes of the fault in effect, if any.
func (s *Schedule) Active() (string, []string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		return "", nil, false
	}
	return s.active.fault, s.active.inj.Nodes, true
}

// Run runs the schedule until ctx ends (or, replaying, until its last step
// is healed). When it returns, no fault it injected is in effect.
func (s *Schedule) Run(ctx context.Context, env Env, rec Recorder) {
	if len(s.Faults) == 0 && len(s.Steps) == 0 {
		return
	}
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed))
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer s.heal(env, rec, log) // on every return, nothing stays broken
	if s.Steps != nil {
		s.replay(ctx, env, rec, r, log)
		return
	}
	for {
		if sleep(ctx, s.Interval) != nil {
			return
		}
		f := s.Faults[r.IntN(len(s.Faults))]
		if !s.inject(ctx, env, rec, r, log, f, nil) {
			continue
		}
		sleep(ctx, s.activeHold())
		s.heal(env, rec, log)
	}
}

// replay runs the recorded steps.
func (s *Schedule) replay(ctx context.Context, env Env, rec Recorder, r *rand.Rand, log *slog.Logger) {
	for i, st := range s.Steps {
		if sleep(ctx, st.After) != nil {
			return
		}
		if len(s.Faults) > 0 {
			r.IntN(len(s.Faults)) // the original's pick: the fault's own draws follow it
		}
		fs, err := Parse(st.Fault)
		if err != nil || len(fs) != 1 {
			log.Warn("replayed fault not known; skipped", "step", i+1, "fault", st.Fault, "err", err)
			continue
		}
		label := fmt.Sprintf("step %d of %d", i+1, len(s.Steps))
		ok := s.inject(ctx, env, rec, r, log, fs[0], func(inj *Injection) {
			if st.Hold > 0 {
				inj.Hold = st.Hold
			}
			if st.Role == "" && !sameNodes(inj.Nodes, st.Nodes) {
				label += fmt.Sprintf(": nodes %s, recorded %s", strings.Join(inj.Nodes, ","), strings.Join(st.Nodes, ","))
			}
			inj.replay = label
		})
		if ctx.Err() != nil {
			return
		}
		if ok {
			sleep(ctx, s.activeHold())
			s.heal(env, rec, log)
		}
	}
}

// sameNodes tells whether a and b hold the same nodes, in any order.
func sameNodes(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// inject checks the cluster's health, injects f (adjust, if not nil, may
// change the injection before it is recorded), makes it the active fault and
// records its start. It returns whether f is in effect: a fault cut short
// after it broke something is (Fault's Inject), with its error recorded.
func (s *Schedule) inject(ctx context.Context, env Env, rec Recorder, r *rand.Rand, log *slog.Logger, f Fault, adjust func(*Injection)) bool {
	// Health before: a fault lands on a cluster that serves.
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	herr := env.Healthy(hctx)
	cancel()
	if ctx.Err() != nil {
		return false
	}
	before := history.Health{Before: history.Ms(time.Since(start))}
	if herr != nil {
		before = history.Health{BeforeError: herr.Error()}
		log.Warn("cluster unhealthy before a fault", "fault", f.Name(), "err", herr)
	}
	began := time.Now()
	inj, err := f.Inject(ctx, env, r)
	took := time.Since(began)
	if err != nil && inj == nil {
		if ctx.Err() == nil {
			log.Warn("fault not injected", "fault", f.Name(), "err", err)
		}
		return false
	}
	inj.health = before
	if adjust != nil {
		adjust(inj)
	}
	s.mu.Lock()
	s.active = &active{fault: f.Name(), inj: inj}
	s.mu.Unlock()
	v := inj.Value(f.Name())
	v.Took = history.Ms(took)
	if err != nil {
		// Cut short after it broke something: recorded as it is, with
		// its error, and healed by the caller's heal.
		v.Error = "cut short: " + err.Error()
		log.Warn("fault cut short after it took effect", "fault", f.Name(), "nodes", inj.Nodes, "err", err)
	}
	rec.Record(history.Nemesis, history.Info, history.FStart, v)
	return true
}

// activeHold is how long the active fault is to be held.
func (s *Schedule) activeHold() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		return 0
	}
	return s.active.inj.Hold
}

// recoverTimeout bounds a fault's recovery and the health check after it:
// a recovery's reconnects retry until their context ends.
const recoverTimeout = 30 * time.Second

// heal recovers the active fault, if any, waits until the cluster serves
// again (at most 30 s), and records the fault's stop with the time that
// took (its health's after).
func (s *Schedule) heal(env Env, rec Recorder, log *slog.Logger) {
	s.mu.Lock()
	a := s.active
	s.mu.Unlock()
	if a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	defer cancel()
	rerr := a.inj.Recover(ctx)
	healed := time.Now()
	if err := env.Healthy(ctx); err != nil {
		a.inj.health.AfterError = err.Error()
		log.Error("cluster unhealthy after a fault", "fault", a.fault, "err", err)
	} else {
		a.inj.health.After = history.Ms(time.Since(healed))
	}
	v := a.inj.Value(a.fault)
	if rerr != nil {
		v.Error = rerr.Error()
		log.Error("fault not recovered", "fault", a.fault, "nodes", a.inj.Nodes, "err", rerr)
	}
	s.mu.Lock()
	s.active = nil
	s.mu.Unlock()
	rec.Record(history.Nemesis, history.Info, history.FStop, v)
}

// ErrUnknown: a --nemesis name that is not in the table.
var ErrUnknown = errors.New("unknown nemesis")

// Parse turns a --nemesis value (comma-separated names, each with an
// optional :scope; "none" for no faults) into faults.
func Parse(spec string) ([]Fault, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return nil, nil
	}
	var out []Fault
	for _, item := range strings.Split(spec, ",") {
		name, scope, _ := strings.Cut(strings.TrimSpace(item), ":")
		e, ok := lookup(name)
		if !ok {
			return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknown, name, Names())
		}
		f, err := e.New(scope)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrUnknown, item, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Names lists the valid --nemesis values.
func Names() string {
	var names []string
	for _, e := range table {
		n := e.Name
		if len(e.Scopes) > 0 {
			n += "[:" + strings.Join(e.Scopes, "|") + "]"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return "none, " + strings.Join(names, ", ")
}

func lookup(name string) (entry, bool) {
	for _, e := range table {
		if e.Name == name {
			return e, true
		}
	}
	return entry{}, false
}

// entry is one row of the fault table.
type entry struct {
	Name string
	// Net: the fault changes a node's network (Network's NetExec or
	// Shape, which the harness runs from the node's network helper), at
	// every scope; the run then needs the helpers' image (NeedsNet).
	Net    bool
	Doc    string
	Scopes []string
	New    func(scope string) (Fault, error)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
