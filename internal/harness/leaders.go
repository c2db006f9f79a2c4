package harness

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/safetext"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/targets"
)

// LeaderPoll is how often the harness asks an elected target
// (targets.Elected) for its leader while the clients run.
const LeaderPoll = 250 * time.Millisecond

// leaderAsk bounds one answer of the target's Leader: a poll that takes
// longer (servers paused, cut off) records none, and the next poll asks
// again.
const leaderAsk = 3 * time.Second

// maxLeaderError bounds the reason recorded with an answer that named no
// leader.
const maxLeaderError = 300

// asker makes what the leader watch asks through: ask answers as the
// target's Leader does; done releases it (Cluster.leaderAsker).
type asker func(ctx context.Context) (ask func(context.Context) (string, error), done func())

// watchLeader asks the cluster's target for its leader every LeaderPoll
// from now until the returned stop is called, through an asker made by
// newAsker and released by stop, and stop returns the first answer and
// each change (store.LeaderSeen), timed on now's clock (the history's: ns
// since it started). A target that elects no leader is not asked, and no
// asker is made: stop returns nil.
func watchLeader(ctx context.Context, t targets.Target, newAsker asker, now func() time.Duration) (stop func() []store.LeaderSeen) {
	if e, ok := t.(targets.Elected); !ok || !e.ElectsLeader() {
		return func() []store.LeaderSeen { return nil }
	}
	leader, release := newAsker(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg   sync.WaitGroup
		seen leaderLog
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(LeaderPoll)
		defer tick.Stop()
		for {
			actx, done := context.WithTimeout(ctx, leaderAsk)
			name, err := leader(actx)
			done()
			if ctx.Err() != nil {
				return // stopped while asking: the answer may be the stop's
			}
			seen.add(now().Nanoseconds(), name, err)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() []store.LeaderSeen {
		cancel()
		wg.Wait()
		release()
		return seen.out
	}
}

// leaderLog keeps the first answer and each change, at most
// store.MaxLeaders, the last of which then says that the record stops.
type leaderLog struct{ out []store.LeaderSeen }

// add records an answer at (ns) when it names another leader than the
// last recorded one (or none after one, or one after none).
func (l *leaderLog) add(at int64, name string, err error) {
	if err != nil {
		name = ""
	}
	if n := len(l.out); n > 0 && l.out[n-1].Leader == name {
		return
	}
	switch {
	case len(l.out) >= store.MaxLeaders:
		return
	case len(l.out) == store.MaxLeaders-1:
		// The last entry says the record stops here: a bar drawn past it
		// would claim a leader nobody asked about.
		l.out = append(l.out, store.LeaderSeen{Time: at,
			Error: fmt.Sprintf("more than %d leader changes: the rest were not recorded", store.MaxLeaders)})
		return
	}
	s := store.LeaderSeen{Time: at, Leader: name}
	if name == "" {
		s.Error = "no answer"
		if err != nil {
			s.Error = report.Clip(err.Error(), maxLeaderError)
		}
	}
	l.out = append(l.out, s)
}

// maxLeadersShown bounds the changes the end-of-run summary names.
const maxLeadersShown = 6

// leadersLine says the recorded leaders in the end-of-run summary: the
// first and each change with its time ("n2, then n3 at 3.587s, none at
// 10.2s, n1 at 12.1s"), the first maxLeadersShown changes and how many
// more; "" when the leader never changed (or none was recorded).
func leadersLine(ls []store.LeaderSeen) string {
	if len(ls) < 2 {
		return ""
	}
	name := func(l store.LeaderSeen) string {
		if l.Leader == "" {
			return "none"
		}
		// A results.json is anybody's file: its names reach the terminal
		// filtered and cut.
		return safetext.Name(l.Leader)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, then ", name(ls[0]))
	changes := ls[1:]
	for i, l := range changes[:min(len(changes), maxLeadersShown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s at %s", name(l), time.Duration(l.Time).Round(time.Millisecond))
	}
	if more := len(changes) - maxLeadersShown; more > 0 {
		fmt.Fprintf(&b, " and %d more changes", more)
	}
	return b.String()
}
