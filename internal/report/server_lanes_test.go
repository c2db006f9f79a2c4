package report

import (
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/internal/history"
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
