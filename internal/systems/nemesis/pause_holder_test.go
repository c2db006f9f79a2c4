package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// pause-holder:xM parses M as a TTL multiple in (0, MaxTTLMultiple]; its
// name gives the parameter back as it parses.
func TestPauseHolderParam(t *testing.T) {
	for _, c := range []struct {
		spec string
		m    float64
		name string
		ok   bool
	}{
		{"pause-holder", 0, "pause-holder", true},
		{"pause-holder:x1.25", 1.25, "pause-holder:x1.25", true},
		{"pause-holder:x0.5", 0.5, "pause-holder:x0.5", true},
		{"pause-holder:x3", 3, "pause-holder:x3", true},
		{"pause-holder:x50", 50, "pause-holder:x50", true},
		{"pause-holder:x50.5", 0, "", false},
		{"pause-holder:x0", 0, "", false},
		{"pause-holder:x-1", 0, "", false},
		{"pause-holder:xNaN", 0, "", false},
		{"pause-holder:xInf", 0, "", false},
		{"pause-holder:x", 0, "", false},
		{"pause-holder:1.25", 0, "", false},
		{"pause-holder:leader", 0, "", false},
	} {
		fs, err := Parse(c.spec)
		if (err == nil) != c.ok {
			t.Errorf("Parse(%q): %v", c.spec, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrUnknown) {
				t.Errorf("Parse(%q): %v does not wrap ErrUnknown", c.spec, err)
			}
			continue
		}
		p, ok := fs[0].(PauseHolder)
		if !ok || p.TTLMultiple != c.m || p.Name() != c.name {
			t.Errorf("Parse(%q) = %#v named %q, want multiple %v named %q", c.spec, fs[0], fs[0].Name(), c.m, c.name)
		}
		if again, err := Parse(p.Name()); err != nil || again[0] != fs[0] {
			t.Errorf("Parse(Name()) of %q = %v, %v", c.spec, again, err)
		}
	}
	if !strings.Contains(Names(), "pause-holder[:xM]") {
		t.Errorf("Names() = %s, without pause-holder[:xM]", Names())
	}
}

// With a TTL multiple the holder is held exactly M TTLs from the moment it
// was found at its failpoint (the lease, longer here, notwithstanding): the
// time SIGSTOP took counts, the schedule holds the rest; the multiple is in
// the params. Without one the hold is 1.5-3 leases, after SIGSTOP.
func TestPauseHolderHold(t *testing.T) {
	for _, c := range []struct {
		f         PauseHolder
		stopTakes time.Duration
		min, max  time.Duration
		multiple  string
	}{
		{PauseHolder{TTLMultiple: 0.5}, 0, 0, 50 * time.Millisecond, "0.5"},
		{PauseHolder{TTLMultiple: 2.25}, 0, 0, 225 * time.Millisecond, "2.25"},
		{PauseHolder{TTLMultiple: 2.25}, 60 * time.Millisecond, 0, 225 * time.Millisecond, "2.25"},
		{PauseHolder{TTLMultiple: 0.5}, 80 * time.Millisecond, 0, 0, "0.5"},
		{PauseHolder{}, 60 * time.Millisecond, 450 * time.Millisecond, 900 * time.Millisecond, ""},
	} {
		env := &fakeEnv{holders: make(chan Holder, 1), lease: 300 * time.Millisecond, stopTakes: c.stopTakes}
		env.holders <- env.holder("w1", 0, 7)
		inj, err := c.f.Inject(context.Background(), env, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatalf("%s: %v", c.f.Name(), err)
		}
		if inj.Hold > c.max {
			t.Errorf("%s: hold %s, want at most %s", c.f.Name(), inj.Hold, c.max)
		}
		if c.multiple == "" && inj.Hold < c.min {
			t.Errorf("%s: hold %s, want %s to %s", c.f.Name(), inj.Hold, c.min, c.max)
		}
		// With a multiple, the hold is the rest of M TTLs after SIGSTOP
		// took what it took (however long a loaded machine made that):
		// the two add up to M TTLs, to the millisecond stop_took is
		// rounded to, unless SIGSTOP alone took the M TTLs (a 60 ms
		// sleep can take more than 225 on a loaded machine): then the
		// hold is none.
		var took time.Duration
		if inj.Holder.StopTook != nil {
			took = inj.Holder.StopTook.D()
		}
		if c.multiple != "" && inj.Holder.StopTook != nil && c.max > 0 {
			if want := max(c.max-took, 0); inj.Hold < want-time.Millisecond || inj.Hold > want+time.Millisecond {
				t.Errorf("%s: hold %s after stop_took %s, want %s (M TTLs %s less stop_took)", c.f.Name(), inj.Hold, took, want, c.max)
			}
		}
		if got := inj.Record.(*PauseHolderRecord).TTLMultiple; fmt.Sprint(got) != c.multiple && (got != 0 || c.multiple != "") {
			t.Errorf("%s: ttl_multiple %v, want %q", c.f.Name(), got, c.multiple)
		}
		if c.multiple != "" && (inj.Holder.StopTook == nil || took < c.stopTakes) {
			t.Errorf("%s: stop_took %v, want at least %s", c.f.Name(), inj.Holder.StopTook, c.stopTakes)
		}
		if err := inj.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
