package harness

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/targets"
)

// startProbes starts the probe of every registered kind of record that
// has one (record.Kind.Probe) while the clients run; stop stops them all
// and returns what they recorded, in the kinds' order.
func startProbes(ctx context.Context, env record.Env) (stop func() []record.Record) {
	var stops []func() record.Record
	for _, k := range record.Kinds() {
		if k.Probe != nil {
			stops = append(stops, k.Probe.Start(ctx, env))
		}
	}
	return func() []record.Record {
		var out []record.Record
		for _, s := range stops {
			if r := s(); r != nil {
				out = append(out, r)
			}
		}
		return out
	}
}

// probeEnv is the record.Env of a run: its cluster and its history's
// clock.
type probeEnv struct {
	c   *Cluster
	rec *history.Recorder
}

var _ record.Env = probeEnv{}

// Since is the time since the history began.
func (e probeEnv) Since() time.Duration { return e.rec.Since() }

// LeaderAsker asks the cluster's target for its leader: through the
// target's own asker where it has one (targets.LeaderAsker: one client for
// the whole run), else Leader. ok is false for a target that elects none
// (targets.Elected).
func (e probeEnv) LeaderAsker(ctx context.Context) (ask func(context.Context) (string, error), release func(), ok bool) {
	if el, ok := e.c.cfg.Target.(targets.Elected); !ok || !el.ElectsLeader() {
		return nil, nil, false
	}
	ask, release = e.c.leaderAsker(ctx)
	return ask, release, true
}
