package report

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/store"
)

// Server lanes with their events: on the lane of each server (and each
// other node) a fault names, the fault's window is a bar (faultBands), and
// its events are marks at their times, with a word saying what happened:
// a kill (a cross) and the restart at its heal (a green dot), a power loss's
// unsynced writes lost at the restart, a pause, a cut (partition), a
// throttle, a slowed disk, a network fault, a clock fault. A fault aimed
// at the leader (its scope names it: partition:leader, kill:leader, ...)
// marks its node as the leader when the fault began: the fault's one
// node, or, for a fault on several (a partition, where every node drops
// some), the one the run's recorded leaders name at its start. Events are
// read from the fault's name and its window; its record, as people read it
// (Shown), is in each mark's title. Leader changes, where the target
// elects its leader and the run recorded them, are drawn too
// (leaderEvents).

// serverEvent is what a fault does to a server, for its lane.
type serverEvent struct {
	start, stop string // the words at the start and at the heal ("" none)
	class       string
}

// serverEventOf names a fault's events by its name (the nemesis table's:
// "kill:one:lose-unsynced", "partition:leader", ...).
func serverEventOf(fault string) serverEvent {
	name, _, _ := strings.Cut(fault, ":")
	switch name {
	case "kill":
		if strings.HasSuffix(fault, ":lose-unsynced") {
			return serverEvent{start: "power loss", stop: "restarted, unsynced writes lost", class: "kill disk"}
		}
		return serverEvent{start: "killed", stop: "restarted", class: "kill"}
	case "pause-server":
		return serverEvent{start: "paused", stop: "resumed", class: "pause"}
	case "partition":
		return serverEvent{start: "cut off", stop: "rejoined", class: "cut"}
	case "cpu-throttle":
		return serverEvent{start: "throttled", class: "throttle"}
	case "disk-slow":
		return serverEvent{start: "slow disk", class: "disk"}
	case "netem":
		return serverEvent{start: "network", class: "net"}
	case "clock-skew", "clock-rate", "clock-strobe":
		return serverEvent{start: "clock", class: "clock"}
	}
	return serverEvent{start: name, class: "other"}
}

// aimedAtLeader tells a fault whose scope is the leader.
func aimedAtLeader(fault string) bool {
	_, scope, _ := strings.Cut(fault, ":")
	return scope == "leader" || strings.HasPrefix(scope, "leader:")
}

// serverEvents draws each fault's events on the server and node lanes of
// the window (one by one: only in a detailed timeline).
func serverEvents(f *Figure, in TimelineInput, s scale, ls []laneSpec, label laneLabeler) {
	idx := laneIndex(ls)
	for _, ft := range in.Model.Faults {
		if _, ok := in.faultIn(ft); !ok {
			continue
		}
		ev := serverEventOf(ft.Fault)
		params := FaultWords(in.Tell, ft.FaultValue, in.Workers)
		for _, n := range ft.Nodes {
			i, ok := idx[n]
			if !ok || ls[i].Kind == "client" {
				continue
			}
			l := ls[i]
			mid := l.y + l.h/2
			title := func(word string, at int64) string {
				t := fmt.Sprintf("%s %s at %s (%s)", n, word, Secs(at), ft.Fault)
				if params != "" {
					t += ": " + params
				}
				return t
			}
			if ft.Start >= in.From {
				x := s.x(ft.Start)
				shape := "dot"
				if strings.HasPrefix(ev.class, "kill") {
					shape = "cross"
				}
				f.Marks = append(f.Marks, mark{X: x, Y: mid, R: 3, Shape: shape, Class: "srv-ev " + ev.class, Title: title(ev.start, ft.Start)})
				word := ev.start
				if aimedAtLeader(ft.Fault) && (len(ft.Nodes) == 1 || n == in.leaderAt(ft.Start)) {
					word = "leader, " + word
				}
				label(i, x, word, ev.class)
			}
			if ev.stop != "" && ft.Stop >= 0 && ft.Stop <= in.To {
				x := s.x(ft.Stop)
				f.Marks = append(f.Marks, mark{X: x, Y: mid, R: 3, Shape: "dot", Class: "srv-ev heal " + ev.class, Title: title(ev.stop, ft.Stop)})
				label(i, x, ev.stop, ev.class)
			}
		}
	}
}

// laneLabeler puts a word on a server lane at x, unless it would overlap
// a word already on the lane.
type laneLabeler func(lane int, x px, word, cls string)

// newLaneLabeler is the labeler of one figure's lanes.
func newLaneLabeler(f *Figure, ls []laneSpec) laneLabeler {
	type span struct{ a, b px }
	taken := map[int][]span{}
	return func(i int, x px, word, cls string) {
		l := ls[i]
		w := span{x, x + 6 + px(6*len(word)) + 4}
		for _, t := range taken[i] {
			if w.a < t.b && t.a < w.b {
				return // it would overlap a word on the lane
			}
		}
		f.Texts = append(f.Texts, text{X: x + 6, Y: l.y + l.h - 4, Text: word, Class: "srv-label " + cls})
		taken[i] = append(taken[i], w)
	}
}

// leaderEvents draws what the target said its leader was (in.Leaders):
// a bar along the bottom of the leader's lane while it led, a diamond
// where another node became leader ("leader") and a ring on the last
// leader's lane where the target named none ("no leader", with the
// reason in its title). A node that is not a lane of the figure is left
// out.
func leaderEvents(f *Figure, in TimelineInput, s scale, ls []laneSpec, label laneLabeler) {
	if len(in.Leaders) == 0 {
		return
	}
	idx := laneIndex(ls)
	lane := func(node string) (int, bool) {
		i, ok := idx[node]
		return i, ok && ls[i].Kind != "client"
	}
	end := max(in.Model.Last, in.Leaders[len(in.Leaders)-1].Time)
	prev := ""
	for k, ld := range in.Leaders {
		until := end
		if k+1 < len(in.Leaders) {
			until = in.Leaders[k+1].Time
		}
		if ld.Leader == "" {
			if i, ok := lane(prev); ok && ld.Time >= in.From && ld.Time <= in.To {
				l := ls[i]
				x := s.x(ld.Time)
				why := ""
				if ld.Error != "" {
					why = ": " + ld.Error
				}
				f.Marks = append(f.Marks, mark{X: x, Y: l.y + l.h/2, R: 3, Shape: "ring", Class: "leader-ev none",
					Title: fmt.Sprintf("no leader at %s, %s had led%s", Secs(ld.Time), prev, why)})
				label(i, x, "no leader", "leader none")
			}
			prev = ""
			continue
		}
		i, ok := lane(ld.Leader)
		prev = ld.Leader
		if !ok || until < in.From || ld.Time > in.To {
			continue
		}
		l := ls[i]
		a, b := max(ld.Time, in.From), min(until, in.To)
		title := fmt.Sprintf("%s led from %s to %s, as the target answered when asked", ld.Leader, Secs(ld.Time), Secs(until))
		if k == 0 {
			title = fmt.Sprintf("%s led from the first answer, at %s, to %s", ld.Leader, Secs(ld.Time), Secs(until))
		}
		f.Rects = append(f.Rects, shape{X: s.x(a), Y: l.y + l.h - 3, W: max(s.x(b)-s.x(a), 1), H: 3, Class: "leads", Title: title})
		x := s.x(a)
		if k > 0 && ld.Time >= in.From {
			f.Marks = append(f.Marks, mark{X: x, Y: l.y + l.h/2, R: 3.5, Shape: "diamond", Class: "leader-ev", Title: fmt.Sprintf("%s became leader at %s", ld.Leader, Secs(ld.Time))})
		}
		label(i, x, "leader", "leader")
	}
}

// serverLanesCSS is the server events' style.
const serverLanesCSS = `
.fig .srv-ev{fill:#fff;stroke:#b45f06;stroke-width:1.8}.fig .srv-ev.kill{stroke:var(--bad);stroke-width:2.2}.fig .srv-ev.heal{fill:#b7dfb9;stroke:var(--good);stroke-width:1.2}
.fig .srv-label{font-size:10px;fill:#3a1d00;font-weight:600}.fig .srv-label.kill{fill:var(--bad)}
.fig .leads{fill:#7c5cc4}.fig .leader-ev{fill:#7c5cc4;stroke:#fff;stroke-width:1}.fig .leader-ev.none{fill:#fff;stroke:#7c5cc4;stroke-width:1.5}.fig .srv-label.leader{fill:#4b2e91}
`

// leaderAt is the node the recorded leaders name last at or before t (""
// none, or none recorded). A fault aimed at the leader on several nodes (a
// partition: every node drops some) says "leader" on this node's lane
// only.
func (in *TimelineInput) leaderAt(t int64) string {
	at := ""
	for _, l := range in.Leaders {
		if l.Time > t {
			break
		}
		at = l.Leader
	}
	return at
}

// LeadersOf is the leaders a report's input recorded (its results'), for
// its timelines.
func LeadersOf(in *Input) []store.LeaderSeen {
	if in == nil || in.Results == nil {
		return nil
	}
	return in.Results.Leaders
}
