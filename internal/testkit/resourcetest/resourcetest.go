// Package resourcetest holds the contract every resource passes on real
// containers: what Reset leaves, which of a stale holder's reads and writes
// each fencing mode refuses, that an unfenced stale write is accepted (the
// lost update fencing exists to stop), and that revisions grow.
package resourcetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/targets"
)

// Holders gives the contract its lock holders: Acquire returns a lease
// whose token is higher than every earlier one's; Release ends it (the
// lease stays usable as a stale holder's).
type Holders struct {
	Acquire func(t testing.TB) targets.Lease
	Release func(t testing.TB, l targets.Lease)
}

// Contract checks resource r through store s, for every fencing mode r
// offers, from an empty list each time:
//
//   - Reset leaves an empty list, never nil;
//   - A reads and writes [1]; A's lock ends and B acquires it, with a
//     higher token; B reads [1] and writes [1 2];
//   - under token fencing, A's read and A's write are then refused with
//     ErrFenced, and leave [1 2];
//   - under cas fencing, A's write of what it read before B wrote is
//     refused, and leaves [1 2];
//   - under every mode, A's unfenced write of [9] is accepted: the lost
//     update fencing exists to stop;
//   - the revisions of B's write and of A's unfenced write grow (0 is
//     "none" and is not compared).
func Contract(t *testing.T, r resources.Resource, s resources.Store, h Holders) {
	ctx := context.Background()
	for _, f := range r.Fencings() {
		t.Run(string(f), func(t *testing.T) {
			if err := s.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			plain := resources.Access{Fencing: targets.FencingNone}
			if st, err := s.Read(ctx, plain); err != nil || st.List == nil || len(st.List) != 0 {
				t.Fatalf("after reset: %#v %v, want an empty list", st.List, err)
			}
			a := h.Acquire(t)
			asA := resources.Access{Lease: a, Fencing: f}
			readA, err := s.Read(ctx, asA)
			if err != nil {
				t.Fatalf("A's read: %v", err)
			}
			if _, err := s.Write(ctx, asA, readA, []int64{1}); err != nil {
				t.Fatalf("A's write: %v", err)
			}
			h.Release(t, a)
			b := h.Acquire(t)
			if b.Token() != 0 && b.Token() <= a.Token() {
				t.Fatalf("token %d after %d: not increasing", b.Token(), a.Token())
			}
			asB := resources.Access{Lease: b, Fencing: f}
			readB, err := s.Read(ctx, asB)
			if err != nil || !slices.Equal(readB.List, []int64{1}) {
				t.Fatalf("B's read: %v %v, want [1]", readB.List, err)
			}
			if f == targets.FencingToken {
				if _, err := s.Read(ctx, asA); !errors.Is(err, resources.ErrFenced) {
					t.Errorf("A's fenced read after B's: %v, want ErrFenced", err)
				} else {
					t.Logf("stale read refused: %v", err)
				}
			}
			revB, err := s.Write(ctx, asB, readB, []int64{1, 2})
			if err != nil {
				t.Fatalf("B's write: %v", err)
			}
			if f != targets.FencingNone {
				if _, err := s.Write(ctx, asA, readA, []int64{1, 7}); !errors.Is(err, resources.ErrFenced) {
					t.Errorf("A's stale %s write: %v, want ErrFenced", f, err)
				} else {
					t.Logf("stale %s write refused: %v", f, err)
				}
				if st, err := s.Read(ctx, plain); err != nil || !slices.Equal(st.List, []int64{1, 2}) {
					t.Errorf("after the refused write: %v %v, want [1 2]", st.List, err)
				}
			}
			revA, err := s.Write(ctx, resources.Access{Lease: a, Fencing: targets.FencingNone}, readA, []int64{9})
			if err != nil {
				t.Fatalf("A's unfenced stale write: %v; want it accepted", err)
			}
			if st, err := s.Read(ctx, plain); err != nil || !slices.Equal(st.List, []int64{9}) {
				t.Errorf("after the unfenced stale write: %v %v, want [9]", st.List, err)
			}
			if revB != 0 && revA != 0 && revA <= revB {
				t.Errorf("revisions %d then %d: not increasing", revB, revA)
			}
			h.Release(t, b)
		})
	}
}

// TokenLease is a lease that is only a token: the lease of a lock that
// fencecheck does not run, for resources that see nothing but the token.
type TokenLease int64

// Token is the lease's token.
func (l TokenLease) Token() int64 { return int64(l) }

// Remaining is a minute.
func (TokenLease) Remaining() time.Duration { return time.Minute }

// Release does nothing.
func (TokenLease) Release(context.Context) error { return nil }

// Tokens are holders whose leases are TokenLeases 1, 2, ...
func Tokens() Holders {
	var n int64
	return Holders{
		Acquire: func(testing.TB) targets.Lease { n++; return TokenLease(n) },
		Release: func(testing.TB, targets.Lease) {},
	}
}

// Start starts r's containers for a test (beside a one-node Redis, the
// lock service every cluster has) and returns the cluster and the
// harness's store of r. Everything goes at the test's end.
func Start(t *testing.T, r resources.Resource) (*harness.Cluster, resources.Store) {
	t.Helper()
	harnesstest.RequireDocker(t) // before the worker binary is built
	cl := harnesstest.Cluster(t, harness.ClusterConfig{
		Target: redis.Target{}, Nodes: 1,
		Resources: []harness.ResourceUse{{Resource: r, Fencing: targets.FencingNone}},
		Client:    targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 5 * time.Second},
		// The proxy runs the fencecheck binary of the worker image.
		WorkerBinary: harnesstest.WorkerBinary(t),
	})
	return cl, cl.Host().Resources[0].Store
}
