package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis/redlock"
	"github.com/fencecheck/fencecheck/internal/testkit/redistest"
	"github.com/fencecheck/fencecheck/targets"
)

func TestLockTokensAndFencing(t *testing.T) {
	cl, c := redistest.Start(t, redlock.Target{}, 5)
	if leader, err := cl.Leader(context.Background()); err != nil || leader != "n1" {
		t.Errorf("leader %q, %v; want n1 (the token and resource master)", leader, err)
	}
	redistest.LockAndFences(t, c)
}

func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	cl, c := redistest.Start(t, redlock.Target{}, 5)
	redistest.LeaseExpires(t, c, redistest.Dial(t, redlock.Target{}, cl))
}

// A majority of masters grants the lock: with two of five down it still
// does, with three down it cannot.
func TestMajority(t *testing.T) {
	cl, c := redistest.Start(t, redlock.Target{}, 5)
	ctx := context.Background()
	for _, n := range []string{"n4", "n5"} {
		if err := cl.Kill(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.Acquire(ctx)
	if err != nil {
		t.Fatalf("3 of 5 masters up: %v", err)
	}
	l.Release(ctx)
	if err := cl.Kill(ctx, "n3"); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := c.Acquire(actx); err == nil {
		t.Fatalf("2 of 5 masters up: the lock was granted")
	}
}

func TestValidate(t *testing.T) {
	if err := (redlock.Target{}).Validate(targets.ClientConfig{TTL: 10 * time.Millisecond}); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("ttl 10ms: %v", err)
	}
	if _, err := (redlock.Target{}).Nodes(8); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("8 nodes: %v", err)
	}
}
