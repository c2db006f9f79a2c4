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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

// Holder is a client that holds the lock and has just passed its lease
// check: it is inside its critical section, about to work and write.
type Holder struct {
	Node    string // its container's node name (w1, ...)
	Process history.Process
	Token   int64
}

// Env is what faults act on; the harness implements it.
type Env interface {
	// Lease is the longest the lock can stay unavailable after its holder's
	// last renewal (targets.MaxLease): a holder paused longer than this has
	// lost the lock. Work is the clients' time between lease check and write.
	Lease() time.Duration
	Work() time.Duration
	// NextHolder blocks until a client reports a passed lease check after
	// the call, and returns it.
	NextHolder(ctx context.Context) (Holder, error)
	// Signal sends a signal (SIGSTOP, SIGCONT, ...) to the process of a node:
	// a server or a client container.
	Signal(ctx context.Context, node string, sig string) error
}

// Fault is one kind of failure.
type Fault interface {
	// Name is the fault's name as --nemesis takes it, with its scope.
	Name() string
	// Inject breaks something, now or when its trigger comes (it may block
	// until then, or until ctx ends), and returns what it broke. r is the
	// schedule's seeded random source.
	Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error)
}

// Injection is a fault in effect.
type Injection struct {
	Nodes  []string
	Params map[string]string
	// Hold is how long the schedule keeps the fault before recovering it.
	Hold time.Duration
	// Recover heals exactly what Inject broke. It is called once, with a
	// context that is not the (maybe cancelled) run's.
	Recover func(ctx context.Context) error
}

// Recorder records nemesis events.
type Recorder interface {
	Record(p history.Process, t history.Type, f string, value any) history.Event
}

// Schedule runs faults one at a time: wait Interval, pick a fault at random
// (seeded), inject it, hold it, recover it; again until the context ends.
type Schedule struct {
	Faults   []Fault
	Interval time.Duration
	Seed     uint64
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

// Run runs the schedule until ctx ends. When it returns, no fault it injected
// is in effect.
func (s *Schedule) Run(ctx context.Context, env Env, rec Recorder) {
	if len(s.Faults) == 0 {
		return
	}
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed))
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.Interval):
		}
		f := s.Faults[r.IntN(len(s.Faults))]
		inj, err := f.Inject(ctx, env, r)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("fault not injected", "fault", f.Name(), "err", err)
			}
			continue
		}
		s.mu.Lock()
		s.active = &active{fault: f.Name(), inj: inj}
		s.mu.Unlock()
		rec.Record(history.Nemesis, history.Info, history.FStart,
			history.FaultValue{Fault: f.Name(), Nodes: inj.Nodes, Params: inj.Params})
		select {
		case <-ctx.Done():
		case <-time.After(inj.Hold):
		}
		s.heal(rec, log)
	}
}

// heal recovers the active fault, if any, and records its stop.
func (s *Schedule) heal(rec Recorder, log *slog.Logger) {
	s.mu.Lock()
	a := s.active
	s.active = nil
	s.mu.Unlock()
	if a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := history.FaultValue{Fault: a.fault, Nodes: a.inj.Nodes, Params: a.inj.Params}
	if err := a.inj.Recover(ctx); err != nil {
		v.Error = err.Error()
		log.Error("fault not recovered", "fault", a.fault, "nodes", a.inj.Nodes, "err", err)
	}
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
			return nil, fmt.Errorf("%w %q: %v", ErrUnknown, item, err)
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
	Name   string
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
