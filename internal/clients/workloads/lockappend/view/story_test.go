package view

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// stepText joins a story's steps, one a line.
func stepText(s Story) string {
	var b strings.Builder
	for _, st := range s.Steps {
		b.WriteString(report.Secs(st.At) + " " + st.Who + " " + st.Text + "\n")
	}
	return b.String()
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// stepIndex returns the index of the first step containing s, -1 if none.
func stepIndex(st Story, s string) int {
	for i, x := range st.Steps {
		if strings.Contains(x.Text, s) {
			return i
		}
	}
	return -1
}

// The seed's story: A (token 4) is paused inside its critical section, its
// lease expires, B (token 7) acquires and writes, A wakes up and writes the
// list it read before: B's acknowledged element is lost.
func TestStoryStaleWriteErasesOthersUpdate(t *testing.T) {
	h := &hist{T: t}
	h.Begin(0, 1, 4, []int64{}, 0.06, 0.07)
	h.Fault(0.09, 2.19, "w1", pauseOf(0, 4, 2100*time.Millisecond))
	h.Invoke(0.09, 2, 3)
	h.Add(0.77, 2, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Reason: lockappend.ReasonNotAcquired})
	h.Section(1, 2, 7, []int64{}, 0.77, 2.17, 2.175, 9)
	h.Phase(2.19, 0, lockappend.PhaseWriteSent, nil)
	h.Phase(2.196, 0, lockappend.PhaseReleasing, nil)
	h.Phase(2.2, 0, lockappend.PhaseReleased, lockappend.Released{Error: "lease not found"})
	h.Add(2.201, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 1, Token: 4, Read: []int64{}, Rev: 11})
	h.Final(2.21, []int64{1})

	lost, fenced, res := storiesOf(t, h.Sorted(), "none", 3)
	if laResult(res).LostUpdates.Lost != 1 || len(lost) != 1 || len(fenced) != 0 {
		t.Fatalf("lost %d elements, %d lost stories, %d fenced; want 1, 1, 0", laResult(res).LostUpdates.Lost, len(lost), len(fenced))
	}
	s := lost[0]
	if s.Kind != KindStaleOverwrote || s.Stale != 0 || len(s.Lost) != 1 || s.Lost[0] != 2 {
		t.Fatalf("story %s, stale %d, lost %v; want %s by process 0, lost [2]", s.Kind, s.Stale, s.Lost, KindStaleOverwrote)
	}
	if a := s.Actors[0]; a.Name != "A" || a.Process != 0 || a.Token != 4 || a.Node != "w1" {
		t.Errorf("actor A = %+v, want process 0 on w1 with token 4", a)
	}
	if a := s.Actors[1]; a.Name != "B" || a.Process != 1 || a.Token != 7 {
		t.Errorf("actor B = %+v, want process 1 with token 7", a)
	}
	text := stepText(s)
	wantContains(t, "steps", text,
		"A acquires the lock: fencing token 4",
		"SIGSTOP w1, A's container",
		"B acquires the lock: fencing token 7 (> 4)",
		"B writes [2] with token 7: ACCEPTED",
		"SIGCONT w1, A's container after 2.1s: A resumes",
		"A writes [1] with token 4: ACCEPTED",
		"it lacks element 2",
		"element 2 is missing from the final read: B's acknowledged update is LOST")
	if strings.Count(text, "B acquires") != 1 {
		t.Errorf("B's grant told twice:\n%s", text)
	}
	// The resume comes before the write it allowed.
	if i, j := stepIndex(s, "SIGCONT"), stepIndex(s, "A] with token 4"); i < 0 || j >= 0 && j < i {
		t.Errorf("resume at step %d, A's write at %d:\n%s", i, j, text)
	}
	if i, j := stepIndex(s, "SIGCONT"), stepIndex(s, "with token 4: ACCEPTED"); j < i {
		t.Errorf("A writes (step %d) before it resumes (step %d):\n%s", j, i, text)
	}
	wantContains(t, "fencing", s.Fencing, "Token fencing would have stopped it", "would have held token 7 (B's read at 2.17s)", "A's token 4 is lower", "--fencing cas")
	wantContains(t, "title", s.Title, "A's stale write (token 4) erased B's acknowledged update")
}

// The other pattern: A's stale write lands inside C's critical section
// (after C read), and C's write, built on its older read, erases A's own
// acknowledged element.
func TestStoryStaleWriteLandsInsideAnotherSection(t *testing.T) {
	h := &hist{T: t}
	h.Section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.Begin(0, 3, 10, []int64{1}, 0.21, 0.22)
	h.Fault(0.3, 4.5, "w1", pauseOf(0, 10, 0))
	h.Section(1, 2, 13, []int64{1}, 0.21, 2.5, 2.75, 20)
	h.Begin(2, 4, 16, []int64{1, 2}, 0.21, 4.4)
	h.Phase(4.5, 0, lockappend.PhaseWriteSent, nil)
	h.Phase(4.51, 0, lockappend.PhaseReleasing, nil)
	h.Add(4.52, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10, Read: []int64{1}, Rev: 22})
	h.Phase(4.6, 2, lockappend.PhaseWriteSent, nil)
	h.Phase(4.61, 2, lockappend.PhaseReleasing, nil)
	h.Add(4.62, 2, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 4, Token: 16, Read: []int64{1, 2}, Rev: 23})
	h.Final(5, []int64{1, 2, 4})

	lost, _, res := storiesOf(t, h.Sorted(), "none", 3)
	if laResult(res).LostUpdates.Lost != 1 || len(lost) != 1 {
		t.Fatalf("lost %d, %d stories; want 1, 1", laResult(res).LostUpdates.Lost, len(lost))
	}
	s := lost[0]
	if s.Kind != KindStaleOverwritten || s.Stale != 0 || s.Lost[0] != 3 {
		t.Fatalf("story %s by %d lost %v; want %s by 0, lost [3]", s.Kind, s.Stale, s.Lost, KindStaleOverwritten)
	}
	if s.other == nil || s.other.Proc != 2 {
		t.Fatalf("the write that erased A's element should be process 2's")
	}
	text := stepText(s)
	wantContains(t, "steps", text,
		"B acquires the lock: fencing token 13 (> 10)",
		"C acquires the lock: fencing token 16",
		"C reads the list: [1, 2]. A's element 3 is not in it",
		"A writes [1, 3] with token 10: ACCEPTED",
		"for the moment it erases 2",
		"C writes [1, 2, 4] with token 16: ACCEPTED",
		"brings 2 back but does not have A's element 3",
		"A's own acknowledged update is LOST")
	wantContains(t, "title", s.Title, "landed inside C's critical section", "erased A's acknowledged element 3")
	// C's read (token 16) reached the resource before A's write: a token
	// fence, which fences reads too, would have refused A's write.
	wantContains(t, "fencing", s.Fencing, "Token fencing would have stopped it", "would have held token 16 (C's read at 4.40s)")
}

// A token fence fences reads too: C's read with token 16 came before A's
// stale write, so a token fence would have refused it, though no write
// with a higher token had landed yet; in a token run whose fence let the
// write through, the story says so and does not claim the opposite; cas
// stops it either way.
func TestStoryTokenFenceStopsItByAReadersToken(t *testing.T) {
	h := &hist{T: t}
	h.Section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.Begin(0, 3, 10, []int64{1}, 0.21, 0.22)
	h.Fault(0.3, 3, "w1", history.FaultValue{})
	h.Begin(2, 4, 16, []int64{1}, 0.21, 2.5)
	h.Phase(3, 0, lockappend.PhaseWriteSent, nil)
	h.Add(3.01, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10, Read: []int64{1}, Rev: 20})
	h.Phase(3.1, 2, lockappend.PhaseWriteSent, nil)
	h.Add(3.11, 2, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 4, Token: 16, Read: []int64{1}, Rev: 21})
	h.Final(4, []int64{1, 4})

	lost, _, _ := storiesOf(t, h.Sorted(), "none", 3)
	if len(lost) != 1 || lost[0].Kind != KindStaleOverwritten || !lost[0].TokenStops {
		t.Fatalf("%d stories (%v), want 1 %s that a token fence stops", len(lost), lost, KindStaleOverwritten)
	}
	wantContains(t, "fencing", lost[0].Fencing, "Token fencing would have stopped it", "would have held token 16 (B's read at 2.50s)",
		"--fencing cas", "B got the lock with token 16")
	lost, _, _ = storiesOf(t, h.Sorted(), "token", 3)
	if len(lost) != 1 {
		t.Fatalf("%d stories, want 1", len(lost))
	}
	wantContains(t, "fencing", lost[0].Fencing, "This run used token fencing, and the fence let this write through", "--fencing cas")
	if strings.Contains(lost[0].Fencing, "would not have stopped") {
		t.Errorf("the story says a token fence would not have stopped a write sent after a read with a higher token:\n%s", lost[0].Fencing)
	}
}

// pausedHolder begins the fence stories' history: process 1 appends
// element 1 (token 5); process 0 (w1) acquires with token 10, reads [1]
// and is paused until 3s, while process 1 appends element 2 with token 13.
func pausedHolder(t *testing.T) *hist {
	h := &hist{T: t}
	h.Section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.Begin(0, 3, 10, []int64{1}, 0.21, 0.22)
	h.Fault(0.3, 3, "w1", pauseOf(0, 10, 2700*time.Millisecond))
	h.Section(1, 2, 13, []int64{1}, 0.21, 2.5, 2.75, 20)
	return h
}

// With token fencing the resource refuses A's stale write: the story names
// both tokens and the update that survived.
func TestStoryFenceRejection(t *testing.T) {
	h := pausedHolder(t)
	h.Phase(3, 0, lockappend.PhaseWriteSent, nil)
	h.Phase(3.01, 0, lockappend.PhaseReleasing, nil)
	h.Add(3.02, 0, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10, Read: []int64{1},
		Reason: lockappend.ReasonFenced, Error: "write rejected by fencing: token 10 < highest accepted 13"})
	h.Final(4, []int64{1, 2})

	lost, fenced, res := storiesOf(t, h.Sorted(), "token", 3)
	if len(lost) != 0 || len(fenced) != 1 || laResult(res).FenceRejections != 1 {
		t.Fatalf("%d lost stories, %d fenced, %d rejections; want 0, 1, 1", len(lost), len(fenced), laResult(res).FenceRejections)
	}
	s := fenced[0]
	if s.Kind != KindFenced || s.Stale != 0 {
		t.Fatalf("story %s by %d", s.Kind, s.Stale)
	}
	wantContains(t, "title", s.Title, "The fence stopped A's stale write (token 10 < 13)")
	wantContains(t, "steps", stepText(s),
		"B acquires the lock: fencing token 13 (> 10)",
		"B reads the list with token 13: [1]. The read is fenced: the resource raises its highest accepted token to 13",
		"A writes [1, 3] with token 10: REJECTED by the fence (write rejected by fencing: token 10 < highest accepted 13)",
		"the 1 acknowledged element that A's stale list lacked (2) are all in the final read")
	wantContains(t, "fencing", s.Fencing, "(token fencing fences both): 13, from B's read at 2.50s", "A's token 10 is lower", "would have replaced the list and erased 1 acknowledged element")
	// The fence is credited to the first operation that carried token
	// 13, B's read, not to B's write that came after it.
	if strings.Contains(s.Fencing, "B's write") {
		t.Errorf("the story credits B's write, not the read that raised the fence first:\n%s", s.Fencing)
	}
}

// An info operation whose late result arrives: the harness gave up on A's
// section (info), but the worker later reported that the write was
// accepted. The late write is the stale one that lost B's update.
func TestStoryInfoWithLateResult(t *testing.T) {
	h := &hist{T: t}
	h.Section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.Begin(0, 3, 10, []int64{1}, 0.21, 0.22)
	h.Fault(0.3, 6, "w1", pauseOf(0, 10, 0))
	h.Add(5, 0, history.Info, lockappend.FAppend, lockappend.Completion{Element: 3, Reason: "timeout"})
	h.Section(1, 2, 13, []int64{1}, 0.21, 2.5, 2.75, 20)
	h.Phase(6.01, 0, lockappend.PhaseWriteSent, nil)
	h.Phase(6.05, 0, lockappend.PhaseLate, lockappend.Late{Type: history.Ok,
		Completion: lockappend.Completion{Element: 3, Token: 10, Read: []int64{1}, Rev: 22}})
	// The worker goes on as process 3 (0 + 3 workers).
	h.Section(3, 4, 20, []int64{1, 3}, 6.06, 6.1, 6.3, 25)
	h.Final(7, []int64{1, 3, 4})

	ev := h.Sorted()
	lost, _, res := storiesOf(t, ev, "none", 3)
	if laResult(res).LostUpdates.Lost != 1 || len(lost) != 1 {
		t.Fatalf("lost %d, %d stories; want 1, 1", laResult(res).LostUpdates.Lost, len(lost))
	}
	s := lost[0]
	if s.Kind != KindStaleOverwrote || s.Stale != 0 || s.Lost[0] != 2 {
		t.Fatalf("story %s by %d lost %v; want %s by 0, lost [2]", s.Kind, s.Stale, s.Lost, KindStaleOverwrote)
	}
	wantContains(t, "steps", stepText(s),
		"harness gives up waiting for A: the operation is recorded info (outcome unknown)",
		"A writes [1, 3] with token 10: ACCEPTED: the late result says ok, revision 22",
		"element 2 is missing from the final read")

	// The same section fenced: the late result says the fence refused it.
	h2 := &hist{T: t}
	h2.Section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h2.Begin(0, 3, 10, []int64{1}, 0.21, 0.22)
	h2.Fault(0.3, 6, "w1", history.FaultValue{})
	h2.Add(5, 0, history.Info, lockappend.FAppend, lockappend.Completion{Element: 3, Reason: "timeout"})
	h2.Section(1, 2, 13, []int64{1}, 0.21, 2.5, 2.75, 20)
	h2.Phase(6.01, 0, lockappend.PhaseWriteSent, nil)
	h2.Phase(6.05, 0, lockappend.PhaseLate, lockappend.Late{Type: history.Fail,
		Completion: lockappend.Completion{Element: 3, Token: 10, Read: []int64{1}, Reason: lockappend.ReasonFenced, Error: "token 10 < 13"}})
	h2.Final(7, []int64{1, 2})
	lost, fenced, _ := storiesOf(t, h2.Sorted(), "token", 3)
	if len(lost) != 0 || len(fenced) != 1 {
		t.Fatalf("%d lost, %d fenced stories; want 0, 1", len(lost), len(fenced))
	}
	wantContains(t, "steps", stepText(fenced[0]), "recorded info", "REJECTED by the fence (token 10 < 13), says its late result")
}

// Several acknowledged elements erased by one stale write make one story.
func TestStoryOneStaleWriteManyLosses(t *testing.T) {
	h := &hist{T: t}
	h.Begin(0, 1, 4, []int64{}, 0, 0.01)
	h.Fault(0.02, 5, "w1", history.FaultValue{})
	h.Section(1, 2, 7, []int64{}, 0, 2.1, 2.3, 10)
	h.Section(2, 3, 9, []int64{2}, 0, 2.4, 2.6, 12)
	h.Section(1, 4, 11, []int64{2, 3}, 2.31, 2.7, 2.9, 14)
	h.Section(2, 5, 13, []int64{2, 3, 4}, 2.61, 3.0, 3.2, 16)
	h.Phase(5, 0, lockappend.PhaseWriteSent, nil)
	h.Add(5.01, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 1, Token: 4, Read: []int64{}, Rev: 20})
	h.Final(6, []int64{1})
	lost, _, res := storiesOf(t, h.Sorted(), "none", 3)
	if laResult(res).LostUpdates.Lost != 4 || len(lost) != 1 {
		t.Fatalf("lost %d in %d stories; want 4 in 1", laResult(res).LostUpdates.Lost, len(lost))
	}
	s := lost[0]
	if len(s.Lost) != 4 || s.Kind != KindStaleOverwrote {
		t.Fatalf("story %s lost %v", s.Kind, s.Lost)
	}
	wantContains(t, "steps", stepText(s), "1 more critical section appends and is acknowledged: element 5", "elements 2, 3, 4, 5 are missing from the final read: 4 acknowledged updates are LOST")
}

// With token fencing reads are fenced: a holder stopped between its grant
// and its read is refused at the read and writes nothing; the story says so.
func TestStoryFencedRead(t *testing.T) {
	h := &hist{T: t}
	h.Section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.Invoke(0.21, 0, 3)
	h.Phase(0.22, 0, lockappend.PhaseAcquired, lockappend.Acquired{Token: 10})
	h.Fault(0.3, 3, "w1", pauseOf(0, 10, 2700*time.Millisecond))
	h.Section(1, 2, 13, []int64{1}, 0.21, 2.5, 2.75, 20)
	h.Phase(3.01, 0, lockappend.PhaseReleasing, nil)
	h.Add(3.02, 0, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10,
		Reason: lockappend.ReasonFenced, Error: "rejected by fencing: read with token 10 < highest accepted 13"})
	h.Final(4, []int64{1, 2})

	_, fenced, _ := storiesOf(t, h.Sorted(), "token", 3)
	if len(fenced) != 1 {
		t.Fatalf("%d fenced stories, want 1", len(fenced))
	}
	s := fenced[0]
	wantContains(t, "title", s.Title, "The fence refused A's stale read (token 10)")
	wantContains(t, "steps", stepText(s), "A reads with token 10: REJECTED by the fence", "it writes nothing")
	wantContains(t, "summary", s.Summary, "was stopped before it read", "it never wrote")
	wantContains(t, "fencing", s.Fencing, "the resource refused the read, so it never wrote")
	if strings.Contains(stepText(s), "A writes") {
		t.Errorf("the story has A write: %s", stepText(s))
	}
}

// A side writer's batch that erased acknowledged elements is told as the
// side writer's, and names it.
func TestSideWriterStory(t *testing.T) {
	h := &hist{T: t}
	sw := history.SideWriter
	h.Invoke(0.5, sw, 100)
	h.Section(0, 1, 10, []int64{}, 0.6, 0.6, 0.8, 0)
	h.Section(1, 2, 11, []int64{1}, 0.9, 0.9, 1.1, 0)
	h.Add(1.5, sw, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 100, Read: []int64{}})
	h.Final(2, []int64{100})
	ev := h.Sorted()
	res := check(t, ev)
	m, err := buildFromEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	lost, _ := stories(m, laResult(res).LostUpdates.Elements, storyConfig{Fencing: "token", TTL: "2s", Margin: "500ms", Workers: 2})
	if len(lost) != 1 || lost[0].Kind != KindSideWriter {
		t.Fatalf("stories %+v, want one side-writer story", lost)
	}
	if !strings.Contains(lost[0].Summary, "The write came from the side writer") || !slices.Equal(lost[0].Lost, []int64{1, 2}) {
		t.Errorf("story %q lost %v", lost[0].Summary, lost[0].Lost)
	}
}

// tokenlessPaused records the seed's story without tokens: w1 gets the
// lock, reads [] and is paused as the holder from 0.09s to 2.19s; w2 gets
// the lock at acq, reads [] and writes [2] at write (revision 9); w1
// resumes and writes [1] (revision 11), erasing element 2.
func tokenlessPaused(t *testing.T, acq, write float64) *hist {
	h := &hist{T: t}
	h.Begin(0, 1, 0, []int64{}, 0.06, 0.07)
	h.Fault(0.09, 2.19, "w1", pauseOf(0, 0, 2100*time.Millisecond))
	h.Section(1, 2, 0, []int64{}, 0.77, acq, write, 9)
	h.Phase(2.19, 0, lockappend.PhaseWriteSent, nil)
	h.Add(2.201, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 1, Read: []int64{}, Rev: 11})
	return h
}

// The seed's story with a lock whose grants carry no token: the story
// blames the holder the run recorded as stale (w1: paused as the holder,
// its grant superseded by w2's before it wrote), not the one a token
// order of zeros would; it shows no token anywhere ("token 0" would be a
// token the run never had), and says that a token fence could not have
// refused the stale write, as the headline does.
func TestStoryTokenless(t *testing.T) {
	h := tokenlessPaused(t, 2.17, 2.175)
	h.Final(2.21, []int64{1})
	ev := h.Sorted()

	lost, _, res := storiesOf(t, ev, "none", 3)
	if len(lost) != 1 {
		t.Fatalf("%d lost stories, want 1", len(lost))
	}
	s := lost[0]
	if s.Kind != KindStaleOverwrote || s.Stale != 0 || !slices.Equal(s.Lost, []int64{2}) {
		t.Errorf("story %s blames process %s for %v, want stale-overwrote by process 0 (w1), element 2 lost", s.Kind, s.Stale, s.Lost)
	}
	if len(s.Actors) != 2 || s.Actors[0].Node != "w1" || s.Actors[0].Role != "the stale holder" || s.Actors[1].Node != "w2" {
		t.Errorf("actors %+v, want A = w1, the stale holder, and B = w2", s.Actors)
	}
	wantContains(t, "brief", s.Brief, "w1, stopped by pause-holder for 2.1s, wrote its stale list at 2.19s: element 2 of w2 lost.")
	all := strings.Join([]string{stepText(s), s.Title, s.Summary, s.Brief, s.Fencing}, "\n")
	for _, a := range s.Actors {
		all += "\n" + a.TokenText
	}
	if regexp.MustCompile(`token 0\b|tokens? [0-9]`).MatchString(all) {
		t.Errorf("a tokenless story shows a token:\n%s", all)
	}
	wantContains(t, "story", all,
		"acquires the lock: no fencing token",
		"writes [2] without a token: ACCEPTED",
		"writes [1] without a token: ACCEPTED",
		"No grant of this run carried a fencing token",
		"no token")
	if s.TokenStops {
		t.Errorf("a token fence stops a tokenless write, the story says")
	}

	m, err := buildFromEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	in := &report.Input{Test: testInfo("none", 3), Results: res}
	_, sub := headline(in, laResult(res), lost, nil, 50, m.tokenless())
	subs := strings.Join(sub, "\n")
	wantContains(t, "headline", subs, "No grant of this run carried a fencing token", "could not have refused any of them (1 stale write)")
	if strings.Contains(subs, "would have refused 0 of") {
		t.Errorf("the headline counts token refusals of a tokenless run:\n%s", subs)
	}
}

// Without tokens, a holder is stale from the next grant to another client
// while it still believes it holds the lock, as the run recorded the
// grants; the timeline says so by whose grant, not by a "token 0".
func TestTokenlessStaleByGrantOrder(t *testing.T) {
	h := &hist{T: t}
	h.Begin(0, 1, 0, []int64{}, 0.06, 0.07)
	h.Section(1, 2, 0, []int64{}, 0.77, 0.8, 2.17, 9)
	h.Phase(2.19, 0, lockappend.PhaseWriteSent, nil)
	h.Add(2.201, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 1, Read: []int64{}, Rev: 11})
	h.Section(2, 3, 0, []int64{1}, 3, 3.1, 3.5, 12)
	h.Final(4, []int64{1, 3})
	m, err := buildFromEvents(h.Sorted())
	if err != nil {
		t.Fatal(err)
	}
	w1, w2, w3 := m.byElement[1], m.byElement[2], m.byElement[3]
	if w1.StaleBy != w2 || w1.StaleFrom != w2.AcquiredAt {
		t.Errorf("w1 stale from %d by %v, want from w2's grant at %d", w1.StaleFrom, w1.StaleBy, w2.AcquiredAt)
	}
	// w2 released before w3's grant, and w3 had no successor.
	if w2.StaleBy != nil || w3.StaleBy != nil {
		t.Errorf("w2 stale by %v, w3 by %v: neither held the lock when another got it", w2.StaleBy, w3.StaleBy)
	}
	f := report.DrawTimeline(report.TimelineInput{ID: "tl", Model: m.OpModel, Workers: 3, From: 0, To: m.Last})
	var titles []string
	for _, r := range f.Rects {
		if strings.HasPrefix(r.Class, "belief stale") {
			titles = append(titles, r.Title)
		}
	}
	if len(titles) != 1 || !strings.HasPrefix(titles[0], "w1 believed") || !strings.Contains(titles[0], "; stale from 0.80s, when the lock was granted to w2") {
		t.Errorf("stale belief titles %q, want w1's, stale from w2's grant", titles)
	}
	// Every tooltip names its client by worker, and none says "token 0"
	// or "process N" of a tokenless grant.
	var all []string
	for _, r := range f.Rects {
		all = append(all, r.Title)
	}
	for _, l := range f.Lines {
		all = append(all, l.Title)
	}
	for _, mk := range f.Marks {
		all = append(all, mk.Title)
	}
	for _, tt := range f.Texts {
		all = append(all, tt.Text)
	}
	joined := strings.Join(all, "\n")
	for _, bad := range []string{"token 0", "process "} {
		if strings.Contains(joined, bad) {
			t.Errorf("a tooltip of a tokenless run says %q:\n%s", bad, joined)
		}
	}
	if !strings.Contains(joined, "w2: append 2, ok at") {
		t.Errorf("no span tooltip names w2 as its client:\n%s", joined)
	}
}

// Without tokens, when both writers were stale before they wrote (w1
// superseded by w2's grant, w2 by w3's), the one whose grant came first,
// w1, is the stale holder whose write erased w2's element.
func TestStoryTokenlessBothStale(t *testing.T) {
	h := &hist{T: t}
	h.Begin(0, 1, 0, []int64{}, 0.06, 0.07)
	h.Begin(1, 2, 0, []int64{}, 0.77, 0.8)
	h.Begin(2, 3, 0, []int64{}, 1.4, 1.5)
	h.Add(1.6, 2, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Read: []int64{}, Reason: lockappend.ReasonLeaseShort})
	h.Phase(2.17, 1, lockappend.PhaseWriteSent, nil)
	h.Add(2.175, 1, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 2, Read: []int64{}, Rev: 9})
	h.Phase(2.19, 0, lockappend.PhaseWriteSent, nil)
	h.Add(2.201, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 1, Read: []int64{}, Rev: 11})
	h.Final(2.21, []int64{1})

	lost, _, _ := storiesOf(t, h.Sorted(), "none", 3)
	if len(lost) != 1 {
		t.Fatalf("%d lost stories, want 1", len(lost))
	}
	if s := lost[0]; s.Kind != KindStaleOverwrote || s.Stale != 0 || !slices.Equal(s.Lost, []int64{2}) {
		t.Errorf("story %s blames process %s for %v, want stale-overwrote by process 0 (w1), element 2 lost", s.Kind, s.Stale, s.Lost)
	}
}

// A tokenless run with both patterns: w1, paused as the holder and
// superseded by w2's grant, writes its stale list and erases w2's element;
// later w3, paused as the holder and superseded by w1's grant, writes
// inside w1's critical section, and w1's write erases w3's element. Each
// story blames the paused, superseded holder, and the headline counts one
// of each.
func TestStoriesTokenlessBothPatterns(t *testing.T) {
	h := tokenlessPaused(t, 0.8, 2.17)
	h.Begin(2, 3, 0, []int64{1}, 3, 3.01)
	h.Fault(3.05, 5, "w3", pauseOf(2, 0, 1950*time.Millisecond))
	h.Section(0, 4, 0, []int64{1}, 4, 4.1, 5.5, 13)
	h.Phase(5.01, 2, lockappend.PhaseWriteSent, nil)
	h.Add(5.02, 2, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 3, Read: []int64{1}, Rev: 12})
	h.Final(6, []int64{1, 4})
	ev := h.Sorted()

	lost, _, res := storiesOf(t, ev, "none", 3)
	if len(lost) != 2 {
		t.Fatalf("%d lost stories, want 2", len(lost))
	}
	for i, want := range []struct {
		kind  StoryKind
		stale history.Process
		lost  int64
	}{{KindStaleOverwrote, 0, 2}, {KindStaleOverwritten, 2, 3}} {
		s := lost[i]
		if s.Kind != want.kind || s.Stale != want.stale || !slices.Equal(s.Lost, []int64{want.lost}) {
			t.Errorf("story %d: %s blaming process %s for %v, want %s blaming process %s for [%d]", i+1, s.Kind, s.Stale, s.Lost, want.kind, want.stale, want.lost)
		}
	}
	wantContains(t, "second story", lost[1].Title, "A's stale write landed inside B's critical section; B's write erased A's acknowledged element 3")
	if a := lost[1].Actors; len(a) < 2 || a[0].Node != "w3" || a[1].Node != "w1" {
		t.Errorf("second story's actors %+v, want A = w3, B = w1", a)
	}

	m, err := buildFromEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	in := &report.Input{Test: testInfo("none", 3), Results: res}
	_, sub := headline(in, laResult(res), lost, nil, 50, m.tokenless())
	wantContains(t, "headline", strings.Join(sub, "\n"),
		"1 of 2 stories: a stale holder went on and wrote the list it had read before its lease passed on",
		"1 of 2 stories: a stale holder's write landed inside a newer holder's critical section",
		"could not have refused any of them (2 stale writes)")
}

// The headline counts each pattern from the stories, out of all of them:
// a run whose 24 stories are 22 of one kind and 2 of the other says so,
// not that every story was of one kind.
func TestHeadlineCountsPatterns(t *testing.T) {
	_, _, res := storiesOf(t, seedHistory(t, "pause-holder"), "none", 3)
	var lost []Story
	for i := range 24 {
		k := KindStaleOverwritten
		if i < 2 {
			k = KindStaleOverwrote
		}
		lost = append(lost, Story{Kind: k})
	}
	in := &report.Input{Test: testInfo("none", 3), Results: res}
	_, sub := headline(in, laResult(res), lost, nil, 50, false)
	subs := strings.Join(sub, "\n")
	wantContains(t, "headline", subs,
		"2 of 24 stories: a stale holder went on and wrote the list it had read before its lease passed on, erasing others' acknowledged elements.",
		"22 of 24 stories: a stale holder's write landed inside a newer holder's critical section")
}

// A story's letter is a client's, not a grant's: the client that got the
// lock after the stale holder and whose later read raised the highest
// token the resource accepted is one letter, B, with both tokens; and the
// story's highest token is the one the resource's refusal states.
func TestStoryOneLetterPerClient(t *testing.T) {
	h := pausedHolder(t)
	h.Section(1, 4, 16, []int64{1, 2}, 2.76, 2.8, 2.9, 21)
	h.Phase(3, 0, lockappend.PhaseWriteSent, nil)
	h.Add(3.02, 0, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10, Read: []int64{1},
		Reason: lockappend.ReasonFenced, Error: "write rejected by fencing: token 10 < highest accepted 16"})
	h.Final(4, []int64{1, 2, 4})

	_, fenced, _ := storiesOf(t, h.Sorted(), "token", 3)
	if len(fenced) != 1 {
		t.Fatalf("%d fenced stories, want 1", len(fenced))
	}
	s := fenced[0]
	if len(s.Actors) != 2 || s.Actors[1].Name != "B" || s.Actors[1].Node != "w2" || s.Actors[1].TokenText != "token 13, then token 16" {
		t.Errorf("actors %+v, want A and B (w2, token 13, then token 16)", s.Actors)
	}
	wantContains(t, "title", s.Title, "(token 10 < 16)")
	wantContains(t, "steps", stepText(s), "B acquires the lock: fencing token 13 (> 10)", "B reads the list with token 16: [1, 2]. The read is fenced")
	wantContains(t, "fencing", s.Fencing, "(token fencing fences both): 16, from B's read at 2.80s")
	if strings.Contains(stepText(s)+s.Fencing, "C ") {
		t.Errorf("a third letter for the same client:\n%s", stepText(s))
	}
}

// A run invalid by its tokens alone (the restarted server granted token 5
// again) loses no update and refuses no write: its report tells no story,
// and Lead names the failing checker and its message instead of nothing,
// for the matrix's JUnit file and job summary.
func TestLeadOfARunInvalidByItsTokensAlone(t *testing.T) {
	h := &hist{T: t}
	h.Section(0, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.Section(1, 2, 5, []int64{1}, 0.3, 0.31, 0.5, 20)
	h.Final(1, []int64{1, 2})
	res := check(t, h.Sorted())
	la := laResult(res)
	if la.Valid != checkers.Invalid || la.LostUpdates.Lost != 0 || la.FenceRejections != 0 {
		t.Fatalf("verdict %v, %d lost, %d rejections: want invalid by the tokens alone", la.Valid, la.LostUpdates.Lost, la.FenceRejections)
	}
	in := &report.Input{Events: h.Sorted(), Results: res, Test: testInfo("token", 3)}
	got := Lead(in)
	if want := "token-monotonic: " + la.Checkers.TokenMonotonic.Message; got != want || !strings.Contains(got, "token violation") {
		t.Errorf("Lead %q, want %q", got, want)
	}
	// A valid run has no lead.
	la.Valid = checkers.Valid
	if got := Lead(in); got != "" {
		t.Errorf("Lead of a valid run %q", got)
	}
}
