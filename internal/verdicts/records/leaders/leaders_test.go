package leaders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
)

// env is a probe's record.Env: a clock, and an asker made by newAsker
// (none: the target elects no leader).
type env struct {
	now      func() time.Duration
	newAsker func(context.Context) (func(context.Context) (string, error), func())
}

var _ record.Env = env{}

func (e env) Since() time.Duration { return e.now() }

func (e env) LeaderAsker(ctx context.Context) (func(context.Context) (string, error), func(), bool) {
	if e.newAsker == nil {
		return nil, nil, false
	}
	ask, release := e.newAsker(ctx)
	return ask, release, true
}

// line is the summary's text of ls ("" none).
func line(ls Leaders) string {
	if l := ls.Summary(); len(l) > 0 {
		return l[0].Text
	}
	return ""
}

// The leader log keeps the first answer and each change: a repeated
// answer is no change, an error is "none" with its reason (cut), errors
// in a row are one, and a flapping cluster keeps at most MaxLeaders.
func TestLeaderLogKeepsChanges(t *testing.T) {
	var l log
	boom := errors.New("etcd: no leader found: " + strings.Repeat("n1: context deadline exceeded; ", 40))
	for i, a := range []struct {
		name string
		err  error
	}{{"n1", nil}, {"n1", nil}, {"", boom}, {"", errors.New("again")}, {"n2", nil}, {"n2", nil}, {"n3", nil}, {"n1", errors.New("an answer with an error is none")}} {
		l.add(int64(i), a.name, a.err)
	}
	var got []string
	for _, s := range l.out {
		got = append(got, fmt.Sprintf("%d:%s", s.Time, s.Leader))
	}
	if want := "0:n1 2: 4:n2 6:n3 7:"; strings.Join(got, " ") != want {
		t.Errorf("recorded %q, want %q", strings.Join(got, " "), want)
	}
	// Cut to maxError bytes, then safetext.Clip's "… (N bytes more)".
	if e := l.out[1].Error; !strings.HasPrefix(e, "etcd: no leader found") || len(e) > maxError+len("… (99999 bytes more)") {
		t.Errorf("the reason of none: %d bytes %q, want the error cut to %d", len(e), e, maxError)
	}
	var flap log
	for i := range 3 * Max {
		flap.add(int64(i), fmt.Sprintf("n%d", i%2+1), nil)
	}
	if len(flap.out) != Max {
		t.Errorf("a flapping cluster kept %d changes, want %d", len(flap.out), Max)
	}
	if last := flap.out[len(flap.out)-1]; last.Leader != "" || !strings.Contains(last.Error, "the rest were not recorded") {
		t.Errorf("the last of a full record %+v does not say that the record stops", last)
	}
}

// The probe asks an elected target's Leader until stopped and returns
// the changes timed on the given clock; a target that elects none is never
// asked.
func TestProbe(t *testing.T) {
	var asked atomic.Int32
	leader := func(ctx context.Context) (string, error) {
		n := asked.Add(1)
		switch {
		case n <= 2:
			return "n1", nil
		case n == 3:
			return "", errors.New("no quorum")
		}
		return "n2", nil
	}
	start := time.Now()
	now := func() time.Duration { return time.Since(start) }

	var made, released atomic.Int32
	newAsker := func(context.Context) (func(context.Context) (string, error), func()) {
		made.Add(1)
		return leader, func() { released.Add(1) }
	}
	stop := probe{}.Start(context.Background(), env{now: now})
	time.Sleep(2 * Poll)
	if got := stop(); got != nil || asked.Load() != 0 {
		t.Fatalf("a target that elects none: asked %d times, recorded %+v", asked.Load(), got)
	}

	if made.Load() != 0 {
		t.Errorf("an asker was made for a target that elects none")
	}
	stop = probe{}.Start(context.Background(), env{now: now, newAsker: newAsker})
	deadline := time.Now().Add(30 * time.Second)
	for asked.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := stop().(Leaders)
	after := asked.Load()
	if made.Load() != 1 || released.Load() != 1 {
		t.Errorf("asker made %d times, released %d times; want once each", made.Load(), released.Load())
	}
	time.Sleep(2 * Poll)
	if asked.Load() != after {
		t.Errorf("asked %d times after stop returned", asked.Load()-after)
	}
	if len(got) != 3 || got[0].Leader != "n1" || got[1].Leader != "" || got[1].Error != "no quorum" || got[2].Leader != "n2" {
		t.Fatalf("recorded %+v, want n1, none (no quorum), n2", got)
	}
	for i := 1; i < len(got); i++ {
		// The polls come one after another, so their times grow.
		if got[i].Time <= got[i-1].Time {
			t.Errorf("recorded times %+v do not grow", got)
		}
	}
}

// The end-of-run summary names the first leader and each change with its
// time, at most maxShown of them, and nothing when the leader never
// changed.
func TestSummary(t *testing.T) {
	if got := line(Leaders{{Time: 1e8, Leader: "n1"}}); got != "" {
		t.Errorf("one leader throughout: %q, want nothing", got)
	}
	got := line(Leaders{{Time: 1e8, Leader: "n2"}, {Time: 3_587_000_123, Error: "no quorum"}, {Time: 4_200_000_000, Leader: "n3"}})
	if want := "n2, then none at 3.587s, n3 at 4.2s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var flap Leaders
	for i := range 10 {
		flap = append(flap, Seen{Time: int64(i) * 1e9, Leader: fmt.Sprintf("n%d", i%2+1)})
	}
	if got := line(flap); !strings.HasSuffix(got, "n2 at 5s, n1 at 6s and 3 more changes") {
		t.Errorf("a flapping leader: %q, want the first 6 changes and 3 more", got)
	}
	hostile := Leaders{{Time: 0, Leader: "n1"}, {Time: 1e9, Leader: "n2\x1b[2J\r\nFAKE"}}
	if got := line(hostile); strings.ContainsAny(got, "\x1b\r\n") {
		t.Errorf("control characters of a stored leader reach the terminal: %q", got)
	}
}

// A stored leader's name reaches the terminal through safetext: no bidi
// override, no workflow command, cut (issue 48, item 4).
func TestSummaryFiltersNames(t *testing.T) {
	long := strings.Repeat("n", 100_000)
	hostile := Leaders{{Time: 0, Leader: "::error::forged"}, {Time: 1e9, Leader: "n2\u202e1n"}, {Time: 2e9, Leader: long}}
	got := line(hostile)
	if err := safetext.Check(got); err != nil {
		t.Errorf("%v", err)
	}
	if len(got) > 4*safetext.MaxName {
		t.Errorf("a leader's name of %d bytes is printed uncut: %d bytes", len(long), len(got))
	}
}
