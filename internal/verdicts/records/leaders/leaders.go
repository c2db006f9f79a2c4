// Package leaders is the record of what a target said its leader was while
// the clients ran (targets.Elected): the first answer and each change,
// results.json's "leaders". The harness's probe asks every Poll; the
// summary names the changes, the report draws a bar along the leader's
// lane and a crown where it changed, and the stories tell each change.
package leaders

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
)

// Key is the record's key in results.json.
const Key = "leaders"

// Kind is the record's line of the table: carried by check (the answers
// came from the servers during the run), drawn in the servers' purple.
var Kind = record.Kind{
	Key:     Key,
	Decode:  decode,
	Carried: true,
	Probe:   probe{},
	Styles: []record.Style{
		{Tag: "leads", Bar: true, Class: "leads", LabelClass: "leader", Tone: "fault",
			CSS: ".fig .leads{fill:#7c5cc4}"},
		{Tag: "leader", Shape: "lead", Class: "leader-ev", Tone: "fault",
			CSS: ".fig .leader-ev{fill:#7c5cc4;stroke:#fff;stroke-width:.8}"},
		{Tag: "none", Shape: "lead", Class: "leader-ev none", LabelClass: "leader none", Tone: "fault",
			CSS: ".fig .leader-ev.none{fill:#fff;stroke:#7c5cc4;stroke-width:1.4}.fig .srv-label.leader{fill:#4b2e91}\n"},
	},
}

// Seen is one answer of the target's Leader during a run: the node it
// named, or none with the reason (an election under way, the servers cut
// off or down), at Time, ns on the history's clock, when the answer came.
// A run records the first answer and then each answer that names another
// node (or none after one, or one after none).
type Seen struct {
	Time   int64  `json:"time_ns"`
	Leader string `json:"leader,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Leaders is the record: the answers, in time order.
type Leaders []Seen

// Max bounds the leader changes a run records (and a report reads): a
// cluster flapping for hours keeps its first Max.
const Max = 4096

// Key is the record's key.
func (Leaders) Key() string { return Key }

// IsNil: a run whose target elects no leader records none.
func (l Leaders) IsNil() bool { return l == nil }

func decode(b json.RawMessage) (record.Record, error) {
	var l Leaders
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	return l, nil
}

// Bound keeps at most Max answers, each name and reason cut, in time
// order (a hand-made file may hold them in any).
func (l Leaders) Bound(lim record.Limits) record.Record {
	out := slices.Clone(l[:min(len(l), Max)])
	for i := range out {
		out[i].Leader, out[i].Error = safetext.Clip(out[i].Leader, lim.Name), safetext.Clip(out[i].Error, lim.Text)
	}
	slices.SortStableFunc(out, func(a, b Seen) int { return cmp.Compare(a.Time, b.Time) })
	return out
}

// maxShown bounds the changes the end-of-run summary names.
const maxShown = 6

// Summary says the recorded leaders: the first and each change with its
// time ("n2, then n3 at 3.587s, none at 10.2s, n1 at 12.1s"), the first
// maxShown changes and how many more; nothing when the leader never
// changed (or none was recorded).
func (l Leaders) Summary() []record.Line {
	if len(l) < 2 {
		return nil
	}
	name := func(s Seen) string {
		if s.Leader == "" {
			return "none"
		}
		// A results.json is anybody's file: its names reach the terminal
		// filtered and cut.
		return safetext.Name(s.Leader)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, then ", name(l[0]))
	changes := l[1:]
	for i, s := range changes[:min(len(changes), maxShown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s at %s", name(s), time.Duration(s.Time).Round(time.Millisecond))
	}
	if more := len(changes) - maxShown; more > 0 {
		fmt.Fprintf(&b, " and %d more changes", more)
	}
	return []record.Line{{Label: "leaders", Text: b.String()}}
}

// Marks are a bar along the bottom of the leader's lane while it led
// (labelled "leader"), a crown where another node became leader, and a
// hollow crown on the last leader's lane where the target named none
// ("no leader", with the reason in its words; none is drawn when no node
// had led). The last answer lasts to end (or to itself, if later).
func (l Leaders) Marks(end int64) []record.Mark {
	if len(l) == 0 {
		return nil
	}
	end = max(end, l[len(l)-1].Time)
	var out []record.Mark
	prev := ""
	for k, s := range l {
		until := end
		if k+1 < len(l) {
			until = l[k+1].Time
		}
		if s.Leader == "" {
			if prev != "" {
				why := ""
				if s.Error != "" {
					why = ": " + s.Error
				}
				tell := "no server leads"
				if s.Error != "" {
					tell += " (" + s.Error + ")"
				}
				out = append(out, record.Mark{Lane: prev, Tag: "none", Start: s.Time, End: s.Time,
					Words: fmt.Sprintf("no leader at %s, %s had led%s", record.Secs(s.Time), prev, why), Label: "no leader",
					Tell: tellIf(k, tell), Who: "servers"})
			} else if k > 0 {
				tell := "no server leads"
				if s.Error != "" {
					tell += " (" + s.Error + ")"
				}
				// Nothing is drawn (no lane had led), but the story tells it.
				out = append(out, record.Mark{Tag: "none", Start: s.Time, End: s.Time, Tell: tell, Who: "servers"})
			}
			prev = ""
			continue
		}
		prev = s.Leader
		words := fmt.Sprintf("%s led from %s to %s, as the target answered when asked", s.Leader, record.Secs(s.Time), record.Secs(until))
		if k == 0 {
			words = fmt.Sprintf("%s led from the first answer, at %s, to %s", s.Leader, record.Secs(s.Time), record.Secs(until))
		}
		out = append(out, record.Mark{Lane: s.Leader, Tag: "leads", Start: s.Time, End: until, Words: words, Label: "leader"})
		if k > 0 {
			out = append(out, record.Mark{Lane: s.Leader, Tag: "leader", Start: s.Time, End: s.Time,
				Words: fmt.Sprintf("%s became leader at %s", s.Leader, record.Secs(s.Time)),
				Tell:  s.Leader + " becomes the servers' leader", Who: "servers"})
		}
	}
	return out
}

// tellIf is tell, but for the first answer (k 0), which the stories leave
// out: it is no change.
func tellIf(k int, tell string) string {
	if k == 0 {
		return ""
	}
	return tell
}

// LeaderAt is the node the answers named last at or before t ("" none).
func (l Leaders) LeaderAt(t int64) string {
	i := sort.Search(len(l), func(i int) bool { return l[i].Time > t })
	if i == 0 {
		return ""
	}
	return l[i-1].Leader
}

// Poll is how often the probe asks an elected target for its leader while
// the clients run.
const Poll = 250 * time.Millisecond

// ask bounds one answer of the target's Leader: a poll that takes longer
// (servers paused, cut off) records none, and the next poll asks again.
const ask = 3 * time.Second

// maxError bounds the reason recorded with an answer that named no
// leader.
const maxError = 300

// probe asks the target for its leader every Poll while the clients run.
type probe struct{}

// Start asks through the run's leader asker every Poll until stop, which
// returns the first answer and each change, timed on the history's clock.
// A target that elects no leader is not asked: stop returns nil.
func (probe) Start(ctx context.Context, env record.Env) (stop func() record.Record) {
	leader, release, ok := env.LeaderAsker(ctx)
	if !ok {
		return func() record.Record { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg   sync.WaitGroup
		seen log
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(Poll)
		defer tick.Stop()
		for {
			actx, done := context.WithTimeout(ctx, ask)
			name, err := leader(actx)
			done()
			if ctx.Err() != nil {
				return // stopped while asking: the answer may be the stop's
			}
			seen.add(env.Since().Nanoseconds(), name, err)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() record.Record {
		cancel()
		wg.Wait()
		release()
		if seen.out == nil {
			return nil
		}
		return seen.out
	}
}

// log keeps the first answer and each change, at most Max, the last of
// which then says that the record stops.
type log struct{ out Leaders }

// add records an answer at (ns) when it names another leader than the
// last recorded one (or none after one, or one after none).
func (l *log) add(at int64, name string, err error) {
	if err != nil {
		name = ""
	}
	if n := len(l.out); n > 0 && l.out[n-1].Leader == name {
		return
	}
	switch {
	case len(l.out) >= Max:
		return
	case len(l.out) == Max-1:
		// The last entry says the record stops here: a bar drawn past it
		// would claim a leader nobody asked about.
		l.out = append(l.out, Seen{Time: at,
			Error: fmt.Sprintf("more than %d leader changes: the rest were not recorded", Max)})
		return
	}
	s := Seen{Time: at, Leader: name}
	if name == "" {
		s.Error = "no answer"
		if err != nil {
			s.Error = safetext.Clip(err.Error(), maxError)
		}
	}
	l.out = append(l.out, s)
}
