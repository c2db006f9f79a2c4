package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/store"
)

// Server lanes with their events: on the lane of each server (and each
// other node) a fault names, the fault's window is a bar (faultBands), and
// its events are marks at their times, with a word saying what happened:
// a kill (a cross) and the restart at its heal (a green dot), a power loss's
// unsynced writes lost at the restart, a pause, a cut (partition), a
// throttle, a slowed disk, a network fault, a clock fault. A fault aimed
// at the leader (its scope names it: partition:leader, kill:leader, ...)
// marks its node as the leader when the fault began (aimedLeader). Events are
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
		aimed := in.aimedLeader(ft)
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
				if n == aimed {
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
		width := px(6 * len(word))
		// After the mark, or, where that would leave the figure, before it.
		t := text{X: x + 6, Y: l.y + l.h - 4, Text: word, Class: "srv-label " + cls}
		w := span{x, x + 6 + width + 4}
		if w.b > f.W {
			t.X, t.Anchor = x-6, "end"
			w = span{x - 6 - width - 4, x}
		}
		for _, tk := range taken[i] {
			if w.a < tk.b && tk.a < w.b {
				return // it would overlap a word on the lane
			}
		}
		f.Texts = append(f.Texts, t)
		taken[i] = append(taken[i], w)
	}
}

// leaderEvents draws what the target said its leader was (in.Leaders):
// a bar along the bottom of the leader's lane while it led, a crown where
// another node became leader ("leader") and a hollow crown on the last
// leader's lane where the target named none ("no leader", with the
// reason in its title: none is drawn when no node had led, or that node
// is no lane). A node that is not a lane of the figure is left out, and
// so is whatever falls outside the window [From, To).
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
		inWindow := ld.Time >= in.From && ld.Time < in.To
		if ld.Leader == "" {
			if i, ok := lane(prev); ok && inWindow {
				l := ls[i]
				x := s.x(ld.Time)
				why := ""
				if ld.Error != "" {
					why = ": " + ld.Error
				}
				f.Marks = append(f.Marks, mark{X: x, Y: l.y + l.h/2, Shape: "lead", Class: "leader-ev none",
					Title: fmt.Sprintf("no leader at %s, %s had led%s", Secs(ld.Time), prev, why)})
				label(i, x, "no leader", "leader none")
			}
			prev = ""
			continue
		}
		i, ok := lane(ld.Leader)
		prev = ld.Leader
		if !ok || until <= in.From || ld.Time >= in.To {
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
		if k > 0 && inWindow {
			f.Marks = append(f.Marks, mark{X: x, Y: l.y + l.h/2, Shape: "lead", Class: "leader-ev", Title: fmt.Sprintf("%s became leader at %s", ld.Leader, Secs(ld.Time))})
		}
		label(i, x, "leader", "leader")
	}
}

// serverLanesCSS is the server events' style.
const serverLanesCSS = `
.fig .srv-ev{fill:#fff;stroke:#b45f06;stroke-width:1.8}.fig .srv-ev.kill{stroke:var(--bad);stroke-width:2.2}.fig .srv-ev.heal{fill:#b7dfb9;stroke:var(--good);stroke-width:1.2}
.fig .srv-label{font-size:10px;fill:#3a1d00;font-weight:600}.fig .srv-label.kill{fill:var(--bad)}
.fig .leads{fill:#7c5cc4}.fig .leader-ev{fill:#7c5cc4;stroke:#fff;stroke-width:.8}.fig .leader-ev.none{fill:#fff;stroke:#7c5cc4;stroke-width:1.4}.fig .srv-label.leader{fill:#4b2e91}
`

// aimedLeader is the node a fault aimed at the leader took as the leader,
// whose lane says "leader": the one its record names (a partition, whose
// nodes are every node), else its one node, else, for a run recorded
// before faults named it, the node the recorded leaders name last at or
// before its start ("" none).
func (in *TimelineInput) aimedLeader(ft history.Fault) string {
	switch {
	case !aimedAtLeader(ft.Fault):
		return ""
	case ft.Leader != "":
		return ft.Leader
	case len(ft.Nodes) == 1:
		return ft.Nodes[0]
	}
	i := sort.Search(len(in.Leaders), func(i int) bool { return in.Leaders[i].Time > ft.Start })
	if i == 0 {
		return ""
	}
	return in.Leaders[i-1].Leader
}

// LeadersOf is the leaders a report's input recorded (its results'), for
// its timelines.
func LeadersOf(in *Input) []store.LeaderSeen {
	if in == nil || in.Results == nil {
		return nil
	}
	return in.Results.Leaders
}
