package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
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
// (Shown), is in each mark's title. The run's records are drawn on the
// lanes too (recordMarks): leader changes, where the target elects its
// leader and the run recorded them, and whatever else a record marks.

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
			top, h := l.faultRow()
			mid := top + h/2
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
// a word already on the lane; it reports whether it did.
type laneLabeler func(lane int, x px, word, cls string) bool

// newLaneLabeler is the labeler of one figure's lanes.
func newLaneLabeler(f *Figure, ls []laneSpec) laneLabeler {
	type span struct{ a, b px }
	taken := map[int][]span{}
	return func(i int, x px, word, cls string) bool {
		l := ls[i]
		width := px(6 * len(word))
		// After the mark, or, where that would leave the figure, before
		// it: on the lane's fault row, haloed (srv-label's style) so that
		// it reads over a fault's bar.
		t := text{X: x + 6, Y: l.wordY(), Text: word, Class: "srv-label " + cls}
		w := span{x, x + 6 + width + 4}
		if w.b > f.W {
			t.X, t.Anchor = x-6, "end"
			w = span{x - 6 - width - 4, x}
		}
		for _, tk := range taken[i] {
			if w.a < tk.b && tk.a < w.b {
				return false // it would overlap a word on the lane
			}
		}
		f.Texts = append(f.Texts, t)
		taken[i] = append(taken[i], w)
		return true
	}
}

// recordMarks draws the marks of the run's records (in.Records:
// internal/base/record), each as its kind's style row for its tag says: a bar
// along its lane's lower row (leaderRow) from its start to its end, or a
// symbol at its start; its label, if any, is written on the lane where it
// starts. A bar on the lane of a node that a fault killed ends at the kill
// (a killed node leads nothing, whenever the next answer came). A mark
// whose lane is no lane of the figure is left out, and so is whatever
// falls outside the window [From, To): a symbol outside it, a bar that
// does not reach into it (one that does is cut to it). A figure with
// server lanes on which the records mark nothing says so on them, so that
// empty lanes are not read as servers that never led.
func recordMarks(f *Figure, in TimelineInput, s scale, ls []laneSpec, label laneLabeler) {
	idx := laneIndex(ls)
	onServers := false
	for _, m := range in.Records.Marks(in.Model.Last) {
		st, ok := m.Style()
		i, lane := idx[m.Lane]
		if !ok || !lane {
			continue
		}
		l := ls[i]
		onServers = onServers || l.Kind == "server"
		top, h := l.recordRow()
		if st.Bar {
			words := m.Words
			if k, ok := in.killedAt(m.Lane, m.Start, m.End); ok {
				m.End = k
				words += fmt.Sprintf("; drawn to %s, when %s was killed", Secs(k), m.Lane)
			}
			if m.End <= in.From || m.Start >= in.To {
				continue
			}
			a, b := max(m.Start, in.From), min(m.End, in.To)
			f.Rects = append(f.Rects, shape{X: s.x(a), Y: top, W: max(s.x(b)-s.x(a), 1), H: h, Class: st.Class, Title: words})
			if m.Label != "" {
				label(i, s.x(a), m.Label, st.LabelClass)
			}
			continue
		}
		if m.Start < in.From || m.Start >= in.To {
			continue
		}
		x := s.x(m.Start)
		f.Marks = append(f.Marks, mark{X: x, Y: l.recordSymbolY(), Shape: st.Shape, Class: st.Class, Title: m.Words})
		if m.Label != "" {
			label(i, x, m.Label, st.LabelClass)
		}
	}
	if !onServers {
		// On the first server lane's record row, which is empty.
		if i := slices.IndexFunc(ls, func(l laneSpec) bool { return l.Kind == "server" }); i >= 0 {
			l := ls[i]
			f.Texts = append(f.Texts, text{X: s.x0 + 4, Y: l.y + l.h - 2, Text: "no leader recorded by this run", Class: "srv-label none"})
		}
	}
}

// killedAt is the first time in (from, to) that a fault killed node (a
// kill or a power loss of it began), false for none.
func (in *TimelineInput) killedAt(node string, from, to int64) (int64, bool) {
	at, ok := int64(0), false
	for _, ft := range in.Model.Faults {
		if !strings.HasPrefix(serverEventOf(ft.Fault).class, "kill") || ft.Start <= from || ft.Start >= to || !slices.Contains(ft.Nodes, node) {
			continue
		}
		if !ok || ft.Start < at {
			at, ok = ft.Start, true
		}
	}
	return at, ok
}

// serverLanesCSS is the server events' style.
const serverLanesCSS = `
.fig .srv-ev{fill:#fff;stroke:#b45f06;stroke-width:1.8}.fig .srv-ev.kill{stroke:var(--bad);stroke-width:2.2}.fig .srv-ev.heal{fill:#b7dfb9;stroke:var(--good);stroke-width:1.2}
.fig .srv-label{font-size:10px;fill:#3a1d00;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}.fig .srv-label.kill{fill:var(--bad)}.fig .srv-label.none{fill:var(--muted);font-weight:400;font-style:italic}
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
	return in.Records.LeaderAt(ft.Start)
}

// RecordsOf is what a report's input recorded beside its history (its
// results' records), for its timelines and stories.
func RecordsOf(in *Input) record.Set {
	if in == nil || in.Results == nil {
		return nil
	}
	return in.Results.Records
}
