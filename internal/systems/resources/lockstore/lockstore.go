// Package lockstore is the resource "lock-store": the list lives in the lock
// service's own store, next to the lock (an etcd key, a Consul key, a Redis
// key), written through the same client that holds the lock. It is the
// default resource, and the only one whose cas fencing can tie a write to
// the lock's own state (etcd: the lock key's CreateRevision; Consul: the
// session; Redis: the lock key's value).
package lockstore

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// Resource is the lock service's own store.
type Resource struct{}

// Name is "lock-store".
func (Resource) Name() string { return "lock-store" }

// Fencings are none, token and cas.
func (Resource) Fencings() []targets.Fencing {
	return []targets.Fencing{targets.FencingNone, targets.FencingToken, targets.FencingCAS}
}

// Nodes are none: the lock service's servers hold the list.
func (Resource) Nodes() []resources.NodeSpec { return nil }

// Ready is the lock service's readiness, which the harness checks anyway.
func (Resource) Ready(context.Context, []targets.Node) error { return nil }

// Dial returns the store of lock, which must implement targets.Store.
func (Resource) Dial(_ context.Context, _ resources.Config, lock targets.Client) (resources.Store, error) {
	s, ok := lock.(targets.Store)
	if !ok {
		return nil, fmt.Errorf("lock-store: %w (%T)", resources.ErrNoStore, lock)
	}
	return store{s}, nil
}

// store adapts a target's Store. Closing it leaves the lock client open:
// its owner closes that.
type store struct{ s targets.Store }

func (s store) Reset(ctx context.Context) error { return s.s.Reset(ctx) }

func (s store) Read(ctx context.Context, a resources.Access) (resources.State, error) {
	var list []int64
	var err error
	if a.Fencing == targets.FencingToken {
		list, err = s.s.ReadFenced(ctx, a.Lease)
	} else {
		list, err = s.s.Read(ctx)
	}
	if list == nil && err == nil {
		list = []int64{}
	}
	return resources.State{List: list}, err
}

func (s store) Write(ctx context.Context, a resources.Access, _ resources.State, list []int64) (int64, error) {
	return s.s.Write(ctx, list, a.Lease, a.Fencing)
}

func (store) Close() error { return nil }
