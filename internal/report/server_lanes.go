package report

import (
	"fmt"
	"strings"
)

// Server lanes with their events: on the lane of each server (and each
// other node) a fault names, the fault's window is a bar (faultBands), and
// its events are marks at their times, with a word saying what happened:
// a kill (a cross) and the restart at its heal (a green dot), a power loss's
// unsynced writes lost at the restart, a pause, a cut (partition), a
// throttle, a slowed disk, a network fault, a clock fault. A fault aimed
// at the leader (its scope names it: partition:leader, kill:leader, ...)
// marks its node as the leader when the fault began: where the target
// tells the harness its leader, the fault's record names it. Events are
// read from the fault's name and its window; its record, as people read it
// (Shown), is in each mark's title.

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
func serverEvents(f *Figure, in TimelineInput, s scale, ls []laneSpec) {
	idx := laneIndex(ls)
	lastText := map[int]px{}
	label := func(i int, x px, word, cls string) {
		l := ls[i]
		if x < lastText[i] {
			return // it would overlap the lane's previous word
		}
		f.Texts = append(f.Texts, text{X: x + 6, Y: l.y + l.h - 4, Text: word, Class: "srv-label " + cls})
		lastText[i] = x + 6 + px(6*len(word)) + 4
	}
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
				if aimedAtLeader(ft.Fault) {
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

// serverLanesCSS is the server events' style.
const serverLanesCSS = `
.fig .srv-ev{fill:#fff;stroke:#b45f06;stroke-width:1.8}.fig .srv-ev.kill{stroke:var(--bad);stroke-width:2.2}.fig .srv-ev.heal{fill:#b7dfb9;stroke:var(--good);stroke-width:1.2}
.fig .srv-label{font-size:10px;fill:#3a1d00;font-weight:600}.fig .srv-label.kill{fill:var(--bad)}
`
