package view

import (
	"encoding/json"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/leaders"
)

// rawParam is a name=value pair as the report wrote records before they
// were told in words ("healthy_after=35ms").
var rawParam = regexp.MustCompile(`[a-z_]+=[^ ]`)

// started is when the tests' histories started, on the wall clock.
var started = time.Date(2026, 12, 5, 21, 4, 5, 0, time.UTC)

// typedSeed is the seed story with pause-holder's typed record: the holder
// w1 (token tok, 0 for none) frozen at its failpoint for 2.1 s, the
// cluster healthy around it.
func typedSeed(t *testing.T, tok int64) []history.Event {
	h := &hist{T: t}
	h.Begin(0, 1, tok, []int64{}, 0.06, 0.07)
	hit := true
	h.Fault(0.09, 2.19, "w1", history.FaultValue{Hold: history.Duration(2100 * time.Millisecond),
		Holder: &history.Aim{Process: 0, Token: &tok, Hit: &hit, Phase: nemesis.PhaseFailpoint},
		Health: history.Health{Before: history.Duration(6 * time.Millisecond), After: history.Duration(35 * time.Millisecond)}})
	h.Section(1, 2, 2*tok, []int64{}, 0.77, 1.17, 1.175, 9)
	h.Phase(2.19, 0, lockappend.PhaseWriteSent, nil)
	h.Add(2.201, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 1, Token: tok, Read: []int64{}, Rev: 11})
	h.Final(2.21, []int64{1})
	return h.Sorted()
}

// storiesTold builds the stories as the page does: faults told by
// nemesis.Tell, steps stamped from started.
func storiesTold(t *testing.T, ev []history.Event, fencing string) (lost, fenced []Story) {
	t.Helper()
	res := check(t, ev)
	m, err := buildFromEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	return stories(m, laResult(res).LostUpdates.Elements, storyConfig{Fencing: fencing, TTL: "2s", Margin: "500ms", Workers: 3,
		Tell: nemesis.Tell, Started: started})
}

// A story of a run with typed fault records tells each fault by its own
// type, in words that name the holder by its worker: no name=value pair,
// and no "token 0" for a holder without a token.
func TestStoryTellsFaultsInWords(t *testing.T) {
	for _, c := range []struct {
		tok  int64
		want string
	}{
		// How long it held is said once, at the resume, from its window.
		{4, "SIGSTOP w1, A's container (pause-holder, the holder w1 (token 4) was frozen at its failpoint; the cluster served before it and again 35ms after the heal)"},
		{0, "SIGSTOP w1, A's container (pause-holder, the holder w1 was frozen at its failpoint; the cluster served before it and again 35ms after the heal)"},
	} {
		lost, _ := storiesTold(t, typedSeed(t, c.tok), "none")
		if len(lost) != 1 {
			t.Fatalf("token %d: %d lost stories, want 1", c.tok, len(lost))
		}
		text := stepText(lost[0])
		wantContains(t, "steps", text, c.want, "SIGCONT w1, A's container after 2.1s")
		if n := strings.Count(text, "2.1s"); n != 1 {
			t.Errorf("token %d: how long the pause held is said %d times, want once:\n%s", c.tok, n, text)
		}
		if p := rawParam.FindString(text); p != "" {
			t.Errorf("token %d: a raw parameter %q in the story:\n%s", c.tok, p, text)
		}
		if c.tok == 0 && strings.Contains(text, "token 0") {
			t.Errorf("a tokenless holder's story says token 0:\n%s", text)
		}
	}
}

// A run recorded before typed records tells its faults as it always did,
// name=value, but for how long it held, which the resume says from the
// window.
func TestStoryOfEarlierRunKeepsRecordedParams(t *testing.T) {
	ev := typedSeed(t, 4)
	for i, e := range ev {
		if e.Process == history.Nemesis {
			ev[i].Value = json.RawMessage(`{"fault":"pause-holder","nodes":["w1"],"params":{"hold":"2.1s","process":"0","token":"4","healthy_after":"35ms"}}`)
		}
	}
	lost, _ := storiesTold(t, ev, "none")
	if len(lost) != 1 {
		t.Fatalf("%d lost stories, want 1", len(lost))
	}
	wantContains(t, "steps", stepText(lost[0]), "(pause-holder, healthy_after=35ms)", "after 2.1s")
}

// Each step carries its wall-clock time beside its time in the run, from
// test.json's history_started, so that a reader finds it in logs/n*.log;
// a run that did not record it shows none.
func TestStoryStepsCarryWallClock(t *testing.T) {
	lost, _ := storiesTold(t, typedSeed(t, 4), "none")
	if len(lost) != 1 {
		t.Fatalf("%d lost stories, want 1", len(lost))
	}
	for _, s := range lost[0].Steps {
		want := started.Add(time.Duration(s.At)).Format("15:04:05.000") + " UTC"
		if s.Wall != want {
			t.Errorf("step at %s (%s): wall %q, want %q", report.Secs(s.At), s.Text, s.Wall, want)
		}
	}
	if i := stepIndex(lost[0], "SIGSTOP"); i < 0 || lost[0].Steps[i].Wall != "21:04:05.090 UTC" {
		t.Errorf("the pause's step is not stamped 21:04:05.090 UTC: %+v", lost[0].Steps)
	}

	ev := typedSeed(t, 4)
	res := check(t, ev)
	test := testInfo("none", 3)
	test.HistoryStarted = started
	page := html.UnescapeString(render(t, report.Input{Test: test, Results: res, Events: ev, Tell: nemesis.Tell}))
	for _, want := range []string{
		`0.09s <span class="wall">(21:04:05.090 UTC)</span>`,
		// The faults table and the timeline's band say the record in
		// words too; the table says how long it held once, in its
		// held column (the window).
		"<td>2.1s</td><td>the holder w1 (token 4) was frozen at its failpoint; the cluster served before it and again 35ms after the heal</td>",
		"pause-holder on w1: 0.09s to 2.19s (held 2.1s; the holder w1 (token 4)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "healthy_after=") || strings.Contains(page, "process=") {
		t.Errorf("the page of a typed-record run shows raw parameters")
	}

	untimed, _, _ := storiesOf(t, typedSeed(t, 4), "none", 3)
	for _, s := range untimed[0].Steps {
		if s.Wall != "" {
			t.Errorf("a run without history_started stamps a step %q", s.Wall)
		}
	}
}

// A fenced story says one highest accepted token, the one the resource's
// refusal stated at the moment of the write, in its title, its brief and
// its fencing note, even when the harness had not yet seen that write
// acknowledged (its acknowledgement came after the refused write).
func TestFencedStoryHighestAtTheWrite(t *testing.T) {
	h := pausedHolder(t) // A (w1, token 10) frozen 0.3-3 s; B (w2) token 13 at 2.5 s
	// B again, token 16: applied before A's write, acknowledged after it.
	h.Invoke(2.76, 1, 4)
	h.Phase(2.8, 1, lockappend.PhaseAcquired, lockappend.Acquired{Token: 16})
	h.Phase(2.801, 1, lockappend.PhaseRead, lockappend.ReadValue{Value: []int64{1, 2}})
	h.Phase(2.9, 1, lockappend.PhaseWriteSent, nil)
	h.Phase(3, 0, lockappend.PhaseWriteSent, nil)
	h.Add(3.02, 0, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10, Read: []int64{1},
		Reason: lockappend.ReasonFenced, Error: "write rejected by fencing: token 10 < highest accepted 16"})
	h.Add(3.2, 1, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 4, Token: 16, Read: []int64{1, 2}, Rev: 21})
	h.Final(4, []int64{1, 2, 4})
	ev := h.Sorted()
	m, err := buildFromEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := highestRaised(m.raises(false), 3*1e9); r.tok != 13 {
		t.Fatalf("the harness saw %d acknowledged as the highest before A's write, want 13 (the test's premise)", r.tok)
	}
	_, fenced, _ := storiesOf(t, ev, "token", 3)
	if len(fenced) != 1 {
		t.Fatalf("%d fenced stories, want 1", len(fenced))
	}
	s := fenced[0]
	wantContains(t, "title", s.Title, "(token 10 < 16)")
	wantContains(t, "brief", s.Brief, "(highest accepted token 16)")
	wantContains(t, "fencing", s.Fencing, "highest token it accepted, from reads and writes alike (token fencing fences both): 16, from B's read at 2.80s", "token 10 < highest accepted 16")
	all := s.Title + "\n" + s.Brief + "\n" + s.Fencing + "\n" + stepText(s)
	if regexp.MustCompile(`highest (accepted|token)[^0-9]*13\b|accepted: 13\b`).MatchString(all) {
		t.Errorf("the story says 13 as the highest accepted token somewhere:\n%s", all)
	}

	// A refusal stating a token no recorded write carried: the story
	// still says the resource's figure, and names no other.
	ev2 := make([]history.Event, len(ev))
	copy(ev2, ev)
	for i, e := range ev2 {
		if e.Process == 0 && e.Type == history.Fail {
			b, _ := json.Marshal(lockappend.Completion{Element: 3, Token: 10, Read: []int64{1},
				Reason: lockappend.ReasonFenced, Error: "write rejected by fencing: token 10 < highest accepted 54"})
			ev2[i].Value = b
		}
	}
	_, fenced, _ = storiesOf(t, ev2, "token", 3)
	if len(fenced) != 1 {
		t.Fatalf("%d fenced stories, want 1", len(fenced))
	}
	s = fenced[0]
	wantContains(t, "title", s.Title, "(token 10 < 54)")
	wantContains(t, "brief", s.Brief, "(highest accepted token 54)")
	if strings.Contains(s.Fencing, "accepted: 16") || strings.Contains(s.Brief, "token 16") {
		t.Errorf("the story names 16 beside the refusal's 54:\n%s\n%s", s.Brief, s.Fencing)
	}
}

// A story tells the leader changes the run recorded inside its span, as
// steps of the servers: another leader, or none with the reason; not the
// first answer, and nothing outside the span.
func TestStoryTellsLeaderChanges(t *testing.T) {
	ev := typedSeed(t, 4)
	res := check(t, ev)
	m, err := buildFromEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	answers := leaders.Leaders{
		{Time: 5e7, Leader: "n1"},
		{Time: 1e9, Leader: "n2"},
		{Time: 15e8, Error: "etcd: no leader found: no member names a leader"},
		{Time: 3e9, Leader: "n3"},
	}
	lost, _ := stories(m, laResult(res).LostUpdates.Elements, storyConfig{Fencing: "none", TTL: "2s", Margin: "500ms", Workers: 3,
		Tell: nemesis.Tell, Started: started, Records: record.Set{answers}})
	if len(lost) != 1 {
		t.Fatalf("%d lost stories, want 1", len(lost))
	}
	var got []string
	for _, s := range lost[0].Steps {
		if s.Who == "servers" {
			got = append(got, report.Secs(s.At)+" "+s.Text)
		}
	}
	want := []string{"1.00s n2 becomes the servers' leader", "1.50s no server leads (etcd: no leader found: no member names a leader)"}
	if !slices.Equal(got, want) {
		t.Errorf("the servers' steps %q, want %q", got, want)
	}
}
