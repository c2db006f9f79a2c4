package scenarios

import (
	"errors"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/lockservices/consul"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/zookeeper"
	"github.com/fencecheck/fencecheck/internal/systems/resources/lockstore"
	"github.com/fencecheck/fencecheck/targets"
)

// A script takes its TTL, lock-delay and ready timeout from the target's
// profile, as a run does, and derives its waits from the longest lease.
func TestTimingsFromProfile(t *testing.T) {
	for _, c := range []struct {
		target           targets.Target
		ttl, lease, wait time.Duration
		lockDelay        *time.Duration
	}{
		{target: etcd.Target{}, ttl: 2 * time.Second, lease: 2 * time.Second, wait: 30 * time.Second},
		{target: consul.Target{}, ttl: consul.MinTTL, lease: 2*consul.MinTTL + time.Second, wait: 30 * time.Second, lockDelay: new(time.Duration)},
		{target: zookeeper.Target{}, ttl: 2 * time.Second, lease: 2*time.Second + 2*zookeeper.Tick, wait: 90 * time.Second},
	} {
		cfg := Config{Target: c.target, Resource: lockstore.Resource{}}
		tm, err := cfg.timings()
		if err != nil {
			t.Fatalf("%s: %v", c.target.Name(), err)
		}
		if cfg.TTL != c.ttl || tm.Client.TTL != c.ttl || tm.Lease != c.lease || tm.ReadyTimeout != c.wait || tm.Margin != c.ttl/4 {
			t.Errorf("%s: TTL %s, lease %s, ready %s, margin %s; want %s, %s, %s, %s", c.target.Name(), tm.Client.TTL, tm.Lease, tm.ReadyTimeout, tm.Margin, c.ttl, c.lease, c.wait, c.ttl/4)
		}
		if (c.lockDelay == nil) != (tm.Client.LockDelay == nil) || (c.lockDelay != nil && *c.lockDelay != *tm.Client.LockDelay) {
			t.Errorf("%s: lock-delay %v, want %v", c.target.Name(), tm.Client.LockDelay, c.lockDelay)
		}
	}
	// A flag given overrides the profile; what the target cannot honour is
	// a bad configuration (Consul's TTL is at least 10 s).
	cfg := Config{Target: etcd.Target{}, Resource: lockstore.Resource{}, TTL: 5 * time.Second}
	if tm, err := cfg.timings(); err != nil || tm.Client.TTL != 5*time.Second {
		t.Errorf("etcd --ttl 5s: TTL %s, %v", tm.Client.TTL, err)
	}
	cfg = Config{Target: consul.Target{}, Resource: lockstore.Resource{}, TTL: 2 * time.Second}
	if _, err := cfg.timings(); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("consul --ttl 2s: %v, want a bad configuration", err)
	}
	if _, err := (&Config{Target: etcd.Target{}}).timings(); !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("no resource: %v, want a bad configuration", err)
	}
}
