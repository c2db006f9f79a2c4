package redis_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/internal/testkit/redistest"
	"github.com/fencecheck/fencecheck/internal/testkit/targettest"
	"github.com/fencecheck/fencecheck/targets"
)

func TestLockTokensAndFencing(t *testing.T) {
	cl, c := redistest.Start(t, redis.Target{}, 1)
	if leader, err := cl.Leader(context.Background()); err != nil || leader != "n1" {
		t.Errorf("leader %q, %v; want n1", leader, err)
	}
	redistest.LockAndFences(t, c)
}

// The lock key's PX expiry is the lease: a holder that stops releasing
// loses the lock after the TTL.
func TestLeaseExpiresWhenHolderStops(t *testing.T) {
	cl, c := redistest.Start(t, redis.Target{}, 1)
	redistest.LeaseExpires(t, c, redistest.Dial(t, redis.Target{}, cl))
}

// ServerVersion is what the image runs.
func TestServerVersion(t *testing.T) {
	cl, _ := redistest.Start(t, redis.Target{}, 1)
	rdb := redis.NewClient(cl.Nodes[0].Addr, time.Second)
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "redis_version:"+redis.ServerVersion+"\r\n") {
		t.Errorf("INFO server does not say redis_version:%s:\n%s", redis.ServerVersion, info)
	}
}

// A killed server restarts on its data: with the append-only file the
// counter goes on; without persistence the server comes back empty and
// INCR grants the old tokens again.
func TestRestartAndTokens(t *testing.T) {
	for _, c := range []struct {
		target redis.Target
		reused bool
	}{{redis.Target{}, false}, {redis.Target{NoPersistence: true}, true}} {
		t.Run(c.target.Name(), func(t *testing.T) {
			cl, cli := redistest.Start(t, c.target, 1)
			ctx := context.Background()
			var last int64
			for range 3 {
				l, err := cli.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				last = l.Token()
				if _, err := cli.Write(ctx, []int64{last}, l, targets.FencingToken); err != nil {
					t.Fatal(err)
				}
				l.Release(ctx)
			}
			restart(t, cl, "n1")
			l, err := cli.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			list, _ := cli.Read(ctx)
			if c.reused {
				if l.Token() > last || len(list) != 0 {
					t.Errorf("after a restart without persistence: token %d (before: %d), list %v; want a reused token and an empty list", l.Token(), last, list)
				}
				// The fence forgot too: the reused token passes it.
				if _, err := cli.Write(ctx, []int64{1}, l, targets.FencingToken); err != nil {
					t.Errorf("token write after the restart: %v", err)
				}
			} else if l.Token() != last+1 || !slices.Equal(list, []int64{last}) {
				t.Errorf("after a restart with the append-only file: token %d (before: %d), list %v; want %d and [%d]", l.Token(), last, list, last+1, last)
			}
		})
	}
}

func restart(t *testing.T, cl *harness.Cluster, node string) {
	t.Helper()
	// A hang limit, not a speed bound: a loaded CI machine took more than
	// 30 s to start the killed container again.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cl.Kill(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := cl.Restart(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := cl.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// Redis expires keys by its wall clock: when the server's clock jumps past
// the lease (the vDSO patch of clock-skew:server), the lock passes at once
// while its holder still works. cas refuses the old holder's write; token
// fencing does not, when the old holder writes first.
//
// The clients' TTL is 20 s, not the tests' 2 s: "at once" is then "while
// the holder's own estimate still has half its TTL", which no loaded
// machine's clock jump and Acquire take, while a lock that passed only
// when its key expired by itself had none left.
func TestServerClockJumpExpiresTheLock(t *testing.T) {
	cl, _ := redistest.Start(t, redis.Target{}, 1)
	ctx := context.Background()
	cfg := cl.ClientConfig()
	cfg.TTL = 20 * time.Second
	dial := func() targettest.Client {
		t.Helper()
		lc, err := redis.Target{}.Dial(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lc.Close() })
		return targettest.LockStore(t, lc)
	}
	c, other := dial(), dial()
	a, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read, _ := c.Read(ctx)
	if err := cl.SkewProcessClock(ctx, "n1", 3*cfg.TTL); err != nil {
		t.Fatal(err)
	}
	defer cl.SkewProcessClock(ctx, "n1", 0)
	actx, cancel := context.WithTimeout(ctx, cfg.TTL/2)
	b, err := other.Acquire(actx)
	cancel()
	if err != nil {
		t.Fatalf("the lock did not pass at once when the server's clock jumped: %v", err)
	}
	if left := a.Remaining(); left < cfg.TTL/2 {
		t.Errorf("the old holder's own estimate: %s left when the lock passed, want at least half the TTL (the lock passed early; its clock did not jump)", left)
	}
	bRead, _ := other.Read(ctx)
	// The old holder, still working, writes first.
	if _, err := c.Write(ctx, append(read, 1), a, targets.FencingCAS); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("cas write of the old holder: %v, want ErrFenced", err)
	}
	if _, err := c.Write(ctx, append(read, 1), a, targets.FencingToken); err != nil {
		t.Errorf("token write of the old holder (lower token, but first): %v, want it accepted", err)
	}
	if _, err := other.Write(ctx, append(bRead, 2), b, targets.FencingToken); err != nil {
		t.Errorf("token write of the new holder: %v", err)
	}
	if list, _ := c.Read(ctx); slices.Contains(list, 1) {
		t.Errorf("final %v: the old holder's element survived, want it overwritten", list)
	}
}

func TestValidate(t *testing.T) {
	for ttl, ok := range map[time.Duration]bool{time.Second: true, 150 * time.Millisecond: true,
		1500 * time.Microsecond: false, 50 * time.Millisecond: false, 0: false} {
		err := redis.Target{}.Validate(targets.ClientConfig{TTL: ttl})
		if (err == nil) != ok || (err != nil && !errors.Is(err, targets.ErrBadConfig)) {
			t.Errorf("ttl %s: %v", ttl, err)
		}
	}
	for _, n := range []int{0, 3} {
		if _, err := (redis.Target{}).Nodes(n); !errors.Is(err, targets.ErrBadConfig) || !strings.Contains(err.Error(), "--nodes 1") {
			t.Errorf("%d nodes: %v", n, err)
		}
	}
	if (redis.Target{}).Image() != "base" {
		t.Errorf("image %q, want the base image", redis.Target{}.Image())
	}
}
