package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		spec string
		n    int
		ok   bool
	}{
		{"", 0, true}, {"none", 0, true}, {"pause-holder", 1, true}, {" pause-holder , pause-holder ", 2, true},
		{"pause-holder:leader", 0, false}, {"meteor", 0, false}, {"pause-holder,", 0, false},
	} {
		fs, err := Parse(c.spec)
		if (err == nil) != c.ok || len(fs) != c.n {
			t.Errorf("Parse(%q) = %d faults, %v", c.spec, len(fs), err)
		}
		if err != nil && !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q): %v does not wrap ErrUnknown", c.spec, err)
		}
	}
}

// fakeEnv records signals; its holders come from a channel.
type fakeEnv struct {
	mu      sync.Mutex
	signals []string
	holders chan Holder
}

func (e *fakeEnv) Lease() time.Duration { return 100 * time.Millisecond }
func (e *fakeEnv) Work() time.Duration  { return 10 * time.Millisecond }
func (e *fakeEnv) NextHolder(ctx context.Context) (Holder, error) {
	select {
	case h := <-e.holders:
		return h, nil
	case <-ctx.Done():
		return Holder{}, ctx.Err()
	}
}
func (e *fakeEnv) Signal(_ context.Context, node, sig string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signals = append(e.signals, sig+" "+node)
	return nil
}

// The schedule pauses the holder for 1.5 to 3 TTLs, resumes it, records
// both, and leaves nothing paused when its context ends mid-fault.
func TestSchedulePausesAndAlwaysResumes(t *testing.T) {
	env := &fakeEnv{holders: make(chan Holder, 10)}
	env.holders <- Holder{Node: "w2", Process: 1, Token: 77}
	env.holders <- Holder{Node: "w3", Process: 2, Token: 80}
	rec := history.NewMemoryRecorder()
	s := &Schedule{Faults: []Fault{PauseHolder{}}, Interval: time.Millisecond, Seed: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	s.Run(ctx, env, rec)
	env.mu.Lock()
	defer env.mu.Unlock()
	want := []string{"SIGSTOP w2", "SIGCONT w2", "SIGSTOP w3", "SIGCONT w3"}
	if len(env.signals) != len(want) {
		t.Fatalf("signals %v, want %v", env.signals, want)
	}
	for i := range want {
		if env.signals[i] != want[i] {
			t.Errorf("signal %d = %s, want %s", i, env.signals[i], want[i])
		}
	}
	faults, err := history.Faults(rec.Events())
	if err != nil || len(faults) != 2 {
		t.Fatalf("faults %v, %v", faults, err)
	}
	for _, f := range faults {
		held := time.Duration(f.Stop - f.Start)
		if f.Stop < 0 || held < 140*time.Millisecond || held > 320*time.Millisecond {
			t.Errorf("fault on %v held %s, want 1.5-3 TTL (150-300ms)", f.Nodes, held)
		}
	}
	if _, _, on := s.Active(); on {
		t.Errorf("a fault is still active after Run returned")
	}
}

func TestPauseHolderIsSeeded(t *testing.T) {
	params := func() map[string]string {
		env := &fakeEnv{holders: make(chan Holder, 1)}
		env.holders <- Holder{Node: "w1"}
		inj, err := PauseHolder{}.Inject(context.Background(), env, rand.New(rand.NewPCG(42, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return inj.Params
	}
	a, b := params(), params()
	if a["hold"] != b["hold"] || a["delay"] != b["delay"] {
		t.Errorf("same seed, different faults: %v %v", a, b)
	}
}
