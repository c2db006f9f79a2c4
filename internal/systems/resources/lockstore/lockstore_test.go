package lockstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/systems/resources/lockstore"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/resourcetest"
	"github.com/fencecheck/fencecheck/targets"
)

// The lock-store passes the resource contract with real etcd leases: its
// cas fencing checks lock ownership, its tokens are the lock's.
func TestContract(t *testing.T) {
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: etcd.Target{}, Nodes: 1,
		Client: targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 5 * time.Second},
	})
	lock := cl.Host().Lock
	h := resourcetest.Holders{
		Acquire: func(t testing.TB) targets.Lease {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := lock.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		Release: func(t testing.TB, l targets.Lease) {
			if err := l.Release(context.Background()); err != nil {
				t.Logf("release: %v", err)
			}
		},
	}
	resourcetest.Contract(t, lockstore.Resource{}, cl.Host().Resources[0].Store, h)
}
