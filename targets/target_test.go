package targets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/testkit/bound"
	"github.com/fencecheck/fencecheck/targets"
)

// bare is a target with no optional behaviour.
type bare struct{}

func (bare) Name() string                                           { return "bare" }
func (bare) Image() string                                          { return "" }
func (bare) Nodes(int) ([]targets.NodeSpec, error)                  { return nil, nil }
func (bare) Validate(targets.ClientConfig) error                    { return nil }
func (bare) Ready(context.Context, []targets.Node) error            { return nil }
func (bare) Leader(context.Context, []targets.Node) (string, error) { return "", nil }
func (bare) Dial(context.Context, targets.ClientConfig) (targets.Client, error) {
	return nil, nil
}

// slow has a profile of its own for some fields.
type slow struct{ bare }

func (slow) Profile() targets.Profile {
	return targets.Profile{TTL: 10 * time.Second, TimeLimit: time.Minute}
}

func TestProfileOf(t *testing.T) {
	p := targets.ProfileOf(bare{})
	if p.TTL != 2*time.Second || p.NemesisInterval != 3*time.Second || p.TimeLimit != 30*time.Second || p.ReadyTimeout != 30*time.Second || p.LockDelay != nil {
		t.Errorf("general defaults: %+v", p)
	}
	p = targets.ProfileOf(slow{})
	if p.TTL != 10*time.Second || p.TimeLimit != time.Minute || p.NemesisInterval != 3*time.Second || p.ReadyTimeout != 30*time.Second {
		t.Errorf("a profile's zero fields take the general defaults: %+v", p)
	}
	if targets.DefaultTTL(slow{}) != 10*time.Second {
		t.Errorf("DefaultTTL is the profile's")
	}
	if targets.PromisesLinearizable(bare{}, "linearizable") {
		t.Errorf("a target without LinearizableReadModes promises nothing")
	}
}

// PollReady returns once the probe succeeds, and else, when the context
// ends, the probe's last reason.
func TestPollReady(t *testing.T) {
	calls := 0
	err := targets.PollReady(context.Background(), "thing", time.Millisecond, func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("PollReady: %v after %d calls, want nil after 3", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	why := errors.New("no leader")
	calls = 0
	err = targets.PollReady(ctx, "thing", 5*time.Millisecond, func(context.Context) error { calls++; return why })
	if !errors.Is(err, why) || err.Error() != "thing not ready: no leader" || calls < 2 {
		t.Fatalf("PollReady past its deadline: %v after %d calls, want the probe's last error", err, calls)
	}
	// The probe that the deadline cuts short ends with the context's
	// error: the reason before it is kept (a refused password, not
	// "context deadline exceeded").
	ctx3, cancel3 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel3()
	wrong := errors.New("WRONGPASS invalid username-password pair")
	calls = 0
	err = targets.PollReady(ctx3, "thing", 5*time.Millisecond, func(ctx context.Context) error {
		if calls++; calls == 1 {
			return wrong
		}
		<-ctx.Done() // a request in flight when the deadline comes
		return ctx.Err()
	})
	if !errors.Is(err, wrong) {
		t.Fatalf("PollReady whose last probe the deadline cut short: %v, want the reason before it", err)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	// Not after the hour's poll interval: a return within the hang limit
	// shows it, and the probe ran exactly once.
	probes := 0
	bound.Returns(t, "PollReady on an ended context", func() {
		err = targets.PollReady(done, "thing", time.Hour, func(context.Context) error { probes++; return why })
	})
	if !errors.Is(err, why) || probes != 1 {
		t.Fatalf("PollReady on an ended context: %v after %d probes, want the probe's error after one", err, probes)
	}
}
