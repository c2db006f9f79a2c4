package report

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/belief"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/leaders"
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
	// The run recorded no leader: the server lanes say so.
	want := []string{"leader, killed", "restarted", "cut off", "rejoined", "power loss", "restarted, unsynced writes lost", "no leader recorded by this run"}
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
// each node led, on its lane and ending where the next answer came; a
// crown where another became leader, on the new leader's lane; a hollow
// crown where the target named none, on the lane of the node that had
// led; each change once; a node that is no lane (the target named
// something else) and a change outside the window are left out.
func TestLeaderLaneEvents(t *testing.T) {
	m := &OpModel{Last: 20e9}
	servers := []string{"n1", "n2", "n3"}
	answers := leaders.Leaders{
		{Time: 1e8, Leader: "n1"},
		{Time: 5e9, Error: "etcd: no leader found"},
		{Time: 6e9, Leader: "n3"},
		{Time: 9e9, Leader: "x9"},
		{Time: 12e9, Leader: "n2"},
	}
	in := TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: servers, From: 0, To: 20e9, Records: record.Set{answers}}
	f := DrawTimeline(in)
	ls := in.lanes()
	s := scale{t0: in.From, t1: in.To, x0: labelW, x1: figW - rightPad}
	laneAt := func(y px) string {
		for _, l := range ls {
			if y >= l.y && y <= l.y+l.h {
				return l.Name
			}
		}
		return "none"
	}
	type drawn struct {
		lane, title string
		from, to    px
	}
	var bars, crowns, hollow []drawn
	for _, r := range f.Rects {
		if r.Class == "leads" {
			bars = append(bars, drawn{laneAt(r.Y), r.Title, r.X, r.X + r.W})
		}
	}
	for _, mk := range f.Marks {
		if mk.Shape != "lead" {
			continue
		}
		switch mk.Class {
		case "leader-ev":
			crowns = append(crowns, drawn{laneAt(mk.Y), mk.Title, mk.X, mk.X})
		case "leader-ev none":
			hollow = append(hollow, drawn{laneAt(mk.Y), mk.Title, mk.X, mk.X})
		}
	}
	wantBars := []drawn{
		{"n1", "n1 led from the first answer, at 0.10s, to 5.00s", s.x(1e8), s.x(5e9)},
		{"n3", "n3 led from 6.00s to 9.00s, as the target answered when asked", s.x(6e9), s.x(9e9)},
		{"n2", "n2 led from 12.00s to 20.00s, as the target answered when asked", s.x(12e9), s.x(20e9)},
	}
	if !slices.Equal(bars, wantBars) {
		t.Errorf("leadership bars\n%+v, want\n%+v", bars, wantBars)
	}
	if want := []drawn{{"n3", "n3 became leader at 6.00s", s.x(6e9), s.x(6e9)}, {"n2", "n2 became leader at 12.00s", s.x(12e9), s.x(12e9)}}; !slices.Equal(crowns, want) {
		t.Errorf("changes %+v, want %+v", crowns, want)
	}
	if want := []drawn{{"n1", "no leader at 5.00s, n1 had led: etcd: no leader found", s.x(5e9), s.x(5e9)}}; !slices.Equal(hollow, want) {
		t.Errorf("no-leader marks %+v, want %+v", hollow, want)
	}

	count := func(f Figure) (bars, marks int, words []string) {
		for _, r := range f.Rects {
			if r.Class == "leads" {
				bars++
			}
		}
		for _, mk := range f.Marks {
			if strings.HasPrefix(mk.Class, "leader-ev") {
				marks++
			}
		}
		for _, tx := range f.Texts {
			if strings.Contains(tx.Class, "leader") {
				words = append(words, tx.Text)
				a, b := tx.X, tx.X+px(6*len(tx.Text))
				if tx.Anchor == "end" {
					a, b = tx.X-px(6*len(tx.Text)), tx.X
				}
				if a < 0 || b > f.W {
					t.Errorf("the word %q from x=%v to %v is outside the figure (width %v)", tx.Text, a, b, f.W)
				}
			}
		}
		return
	}
	// A story's window from 7 s to 10 s: n3's bar cut to it, no mark.
	f = DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: servers, From: 7e9, To: 10e9, Records: record.Set{answers}})
	if b, mk, _ := count(f); b != 1 || mk != 0 {
		t.Errorf("window 7-10 s: %d bars and %d marks, want n3's bar only", b, mk)
	}
	// A window that starts at a change (12 s): n2's bar and no sliver of
	// n3's leadership before it.
	f = DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: servers, From: 12e9, To: 15e9, Records: record.Set{answers}})
	if b, mk, words := count(f); b != 1 || mk != 1 || !slices.Equal(words, []string{"leader"}) {
		t.Errorf("window 12-15 s: %d bars, %d marks, words %q; want n2's bar and crown, one word", b, mk, words)
	}
	// A window that ends at a change (to 12 s): nothing of n2's.
	f = DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: servers, From: 10e9, To: 12e9, Records: record.Set{answers}})
	if b, mk, _ := count(f); b != 0 || mk != 0 {
		t.Errorf("window 10-12 s: %d bars and %d marks, want none (x9 led, no lane; n2 from 12 s)", b, mk)
	}
	// A change near the right edge: its word is written before its mark.
	f = DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: servers, From: 0, To: 12.1e9, Records: record.Set{answers}})
	count(f)
}

// A partition aimed at the leader names every node (each drops some): the
// word "leader" goes on the lane of the node its record names, or, for a
// run recorded before faults named it, the node the recorded leaders name
// at its start, and on none without either.
func TestPartitionLeaderLabelsTheLeader(t *testing.T) {
	m := &OpModel{Last: 20e9, Faults: []history.Fault{
		{FaultValue: history.FaultValue{Fault: "partition:leader", Nodes: []string{"n1", "n2", "n3"}}, Start: 4e9, Stop: 9e9},
	}}
	words := func(answers leaders.Leaders) map[string]string {
		f := DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 1, Servers: []string{"n1", "n2", "n3"}, From: 0, To: 20e9, Records: record.Set{answers}})
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
	got := words(leaders.Leaders{{Time: 1e8, Leader: "n1"}, {Time: 2e9, Leader: "n2"}, {Time: 6e9, Leader: "n3"}})
	if want := map[string]string{"n1": "cut off", "n2": "leader, cut off", "n3": "cut off"}; !maps.Equal(got, want) {
		t.Errorf("with leaders recorded: %v, want %v", got, want)
	}
	got = words(nil)
	if want := map[string]string{"n1": "cut off", "n2": "cut off", "n3": "cut off"}; !maps.Equal(got, want) {
		t.Errorf("without leaders recorded: %v, want %v", got, want)
	}
	// The fault's record names the leader it cut off: that one, whatever
	// the polls said last.
	m.Faults[0].Leader = "n3"
	got = words(leaders.Leaders{{Time: 1e8, Leader: "n1"}, {Time: 2e9, Leader: "n2"}})
	if want := map[string]string{"n1": "cut off", "n2": "cut off", "n3": "leader, cut off"}; !maps.Equal(got, want) {
		t.Errorf("with the leader in the fault's record: %v, want %v", got, want)
	}
}

// A record's marks go on a client's lane too: a belief window is a bar
// on the stale holder's lane from the next grant to its last "held", in
// its kind's class, labelled.
func TestBeliefWindowOnClientLane(t *testing.T) {
	m := &OpModel{Last: 10e9}
	b := &belief.Belief{Workers: 2, Stale: 1, MaxNS: 9e8, Windows: []belief.Window{{Holder: 0, Next: 1, GrantedNS: 3e9, LastHeldNS: 3.9e9, WindowNS: 9e8}}}
	in := TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: []string{"n1"}, From: 0, To: 10e9, Records: record.Set{b}}
	f := DrawTimeline(in)
	ls := in.lanes()
	s := scale{t0: in.From, t1: in.To, x0: labelW, x1: figW - rightPad}
	var bars []shape
	for _, r := range f.Rects {
		if r.Class == "stale-belief" {
			bars = append(bars, r)
		}
	}
	w1 := ls[0]
	if len(bars) != 1 || bars[0].Y != w1.y+w1.h-3 || bars[0].X != s.x(3e9) || bars[0].X+bars[0].W != s.x(3.9e9) ||
		!strings.Contains(bars[0].Title, "w1: its library said it held the lock until 3.90s, 0.90s after w2 was granted it at 3.00s") {
		t.Fatalf("bars %+v: want one on w1 from 3s to 3.9s", bars)
	}
	labelled := false
	for _, tx := range f.Texts {
		labelled = labelled || tx.Text == "held 0.90s too long" && tx.Class == "srv-label stale-belief"
	}
	if !labelled {
		t.Error("the window is not labelled on its lane")
	}
}

// A leader's bar sits in its own lane, on the lane's lower row and clear
// of its bottom edge (it read as the lane below's), under the row of the
// lane's faults; a killed leader's bar ends at its kill, not at the next
// answer of the polls (a second later), and says so.
func TestKilledLeaderBarEndsAtKill(t *testing.T) {
	m := &OpModel{Last: 20e9, Faults: []history.Fault{{FaultValue: history.FaultValue{Fault: "kill:leader", Nodes: []string{"n1"}}, Start: 3e9, Stop: 4e9}}}
	answers := leaders.Leaders{{Time: 1e8, Leader: "n1"}, {Time: 4.2e9, Leader: "n2"}}
	in := TimelineInput{ID: "tl", Model: m, Workers: 2, Servers: []string{"n1", "n2", "n3"}, From: 0, To: 20e9, Records: record.Set{answers}}
	f := DrawTimeline(in)
	ls := in.lanes()
	s := scale{t0: in.From, t1: in.To, x0: labelW, x1: figW - rightPad}
	var n1 []shape
	var fault shape
	for _, r := range f.Rects {
		switch {
		case r.Class == "leads" && r.Y >= ls[2].y && r.Y < ls[2].y+ls[2].h:
			n1 = append(n1, r)
		case strings.HasPrefix(r.Class, "fault") && r.Y >= ls[2].y && r.Y < ls[2].y+ls[2].h:
			fault = r
		}
	}
	if ls[2].Name != "n1" || len(n1) != 1 {
		t.Fatalf("lane %s, bars %+v", ls[2].Name, n1)
	}
	bar, l := n1[0], ls[2]
	if bar.X+bar.W != s.x(3e9) || !strings.Contains(bar.Title, "drawn to 3.00s, when n1 was killed") {
		t.Errorf("n1's bar ends at x %v (%q), want its kill's %v", bar.X+bar.W, bar.Title, s.x(3e9))
	}
	if bar.Y < fault.Y+fault.H || bar.Y+bar.H > l.y+l.h-3 {
		t.Errorf("n1's bar spans y %v to %v: want it under the fault's row (to %v) and 3 units clear of the lane's bottom (%v)", bar.Y, bar.Y+bar.H, fault.Y+fault.H, l.y+l.h)
	}
	for _, tx := range f.Texts {
		if tx.Text == "no leader recorded by this run" {
			t.Error("the lanes say no leader was recorded")
		}
	}
}
