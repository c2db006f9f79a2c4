package report

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/store"
)

// A server fault's events are drawn on its server's lane: a kill of the
// leader as a cross with "leader, killed" and its restart at the heal, a
// power loss's lost writes at the restart, a cut; none on a client's lane,
// and none for a fault outside the window.
func TestServerLaneEvents(t *testing.T) {
	fault := func(name string, node string, start, stop int64) history.Fault {
		return history.Fault{FaultValue: history.FaultValue{Fault: name, Nodes: []string{node}}, Start: start, Stop: stop}
	}
	m := &OpModel{Last: 20e9, Faults: []history.Fault{
		fault("kill:leader", "n2", 1e9, 3e9),
		fault("partition:one", "n1", 6e9, 9e9),
		fault("kill:all:lose-unsynced", "n3", 11e9, 13e9),
		fault("pause-holder", "w1", 4e9, 5e9),
		fault("cpu-throttle:one", "n1", 30e9, 31e9),
	}}
	f := DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: []string{"n1", "n2", "n3"}, From: 0, To: 20e9})
	var words []string
	for _, tx := range f.Texts {
		if len(tx.Class) > 9 && tx.Class[:9] == "srv-label" {
			words = append(words, tx.Text)
		}
	}
	want := []string{"leader, killed", "restarted", "cut off", "rejoined", "power loss", "restarted, unsynced writes lost"}
	if !slices.Equal(words, want) {
		t.Errorf("server lane words %q, want %q", words, want)
	}
	var kills, heals int
	for _, mk := range f.Marks {
		switch mk.Class {
		case "srv-ev kill", "srv-ev kill disk":
			if mk.Shape != "cross" {
				t.Errorf("a kill drawn as %s", mk.Shape)
			}
			kills++
		case "srv-ev heal kill", "srv-ev heal kill disk":
			heals++
		}
	}
	if kills != 2 || heals != 2 {
		t.Errorf("%d kills and %d restarts marked, want 2 and 2", kills, heals)
	}
}

// The leaders a run recorded are drawn on the server lanes: a bar while
// each node led, a diamond where another became leader, a ring where the
// target named none (on the lane of the node that had led), each change
// once; a node that is no lane (the target named something else) and a
// change outside the window are left out.
func TestLeaderLaneEvents(t *testing.T) {
	m := &OpModel{Last: 20e9}
	leaders := []store.LeaderSeen{
		{Time: 1e8, Leader: "n1"},
		{Time: 5e9, Error: "etcd: no leader found"},
		{Time: 6e9, Leader: "n3"},
		{Time: 9e9, Leader: "x9"},
		{Time: 12e9, Leader: "n2"},
	}
	f := DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: []string{"n1", "n2", "n3"}, From: 0, To: 20e9, Leaders: leaders})
	var bars, diamonds, rings []string
	for _, r := range f.Rects {
		if r.Class == "leads" {
			bars = append(bars, r.Title)
		}
	}
	for _, mk := range f.Marks {
		switch {
		case mk.Class == "leader-ev" && mk.Shape == "diamond":
			diamonds = append(diamonds, mk.Title)
		case mk.Class == "leader-ev none" && mk.Shape == "ring":
			rings = append(rings, mk.Title)
		}
	}
	wantBars := []string{
		"n1 led from the first answer, at 0.10s, to 5.00s",
		"n3 led from 6.00s to 9.00s, as the target answered when asked",
		"n2 led from 12.00s to 20.00s, as the target answered when asked",
	}
	if !slices.Equal(bars, wantBars) {
		t.Errorf("leadership bars %q, want %q", bars, wantBars)
	}
	if want := []string{"n3 became leader at 6.00s", "n2 became leader at 12.00s"}; !slices.Equal(diamonds, want) {
		t.Errorf("changes %q, want %q", diamonds, want)
	}
	if want := []string{"no leader at 5.00s, n1 had led: etcd: no leader found"}; !slices.Equal(rings, want) {
		t.Errorf("no-leader marks %q, want %q", rings, want)
	}

	// A story's window from 7s to 10s: n3's bar cut to it, no mark.
	f = DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: []string{"n1", "n2", "n3"}, From: 7e9, To: 10e9, Leaders: leaders})
	n := 0
	for _, r := range f.Rects {
		if r.Class == "leads" {
			n++
			if r.X != labelW {
				t.Errorf("n3's bar starts at x=%v, want the window's left edge %v", r.X, labelW)
			}
		}
	}
	for _, mk := range f.Marks {
		if strings.HasPrefix(mk.Class, "leader-ev") {
			t.Errorf("a change outside the window is marked: %q", mk.Title)
		}
	}
	if n != 1 {
		t.Errorf("%d leadership bars in the window from 7s to 10s, want 1 (n3's)", n)
	}
}

// A partition aimed at the leader names every node (each drops some): the
// word "leader" goes on the lane of the node the recorded leaders name at
// its start only, and on none without recorded leaders.
func TestPartitionLeaderLabelsTheLeader(t *testing.T) {
	m := &OpModel{Last: 20e9, Faults: []history.Fault{
		{FaultValue: history.FaultValue{Fault: "partition:leader", Nodes: []string{"n1", "n2", "n3"}}, Start: 4e9, Stop: 9e9},
	}}
	words := func(leaders []store.LeaderSeen) map[string]string {
		f := DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 1, Servers: []string{"n1", "n2", "n3"}, From: 0, To: 20e9, Leaders: leaders})
		ls := (&TimelineInput{Model: m, Workers: 1, Servers: []string{"n1", "n2", "n3"}}).lanes()
		out := map[string]string{}
		for _, tx := range f.Texts {
			if !strings.HasPrefix(tx.Class, "srv-label") || !strings.Contains(tx.Text, "cut off") {
				continue
			}
			for _, l := range ls {
				if tx.Y > l.y && tx.Y <= l.y+l.h {
					out[l.Name] = tx.Text
				}
			}
		}
		return out
	}
	got := words([]store.LeaderSeen{{Time: 1e8, Leader: "n1"}, {Time: 2e9, Leader: "n2"}, {Time: 6e9, Leader: "n3"}})
	if want := map[string]string{"n1": "cut off", "n2": "leader, cut off", "n3": "cut off"}; !maps.Equal(got, want) {
		t.Errorf("with leaders recorded: %v, want %v", got, want)
	}
	got = words(nil)
	if want := map[string]string{"n1": "cut off", "n2": "cut off", "n3": "cut off"}; !maps.Equal(got, want) {
		t.Errorf("without leaders recorded: %v, want %v", got, want)
	}
}
