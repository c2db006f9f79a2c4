package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/systems/resources/postgres"
	"github.com/fencecheck/fencecheck/internal/testkit/resourcetest"
	"github.com/fencecheck/fencecheck/targets"
)

func TestContract(t *testing.T) {
	_, s := resourcetest.Start(t, postgres.Resource{})
	resourcetest.Contract(t, postgres.Resource{}, s, resourcetest.Tokens())
}

// A committed write survives a SIGKILL of the server and its restart on
// its data; the fence does too.
func TestKillKeepsCommittedWrites(t *testing.T) {
	cl, s := resourcetest.Start(t, postgres.Resource{})
	ctx := context.Background()
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	b := resources.Access{Lease: resourcetest.TokenLease(5), Fencing: targets.FencingToken}
	st, err := s.Read(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, b, st, []int64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(ctx, "pg"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Restart(ctx, "pg"); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	if err := cl.Healthy(rctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("postgres serves again %s after its restart", time.Since(start).Round(time.Millisecond))
	// The old connection died with the server: the next call reconnects.
	got, err := s.Read(ctx, resources.Access{Fencing: targets.FencingNone})
	if err != nil {
		got, err = s.Read(ctx, resources.Access{Fencing: targets.FencingNone})
	}
	if err != nil || !slices.Equal(got.List, []int64{1, 2}) {
		t.Fatalf("after the restart: %v %v, want [1 2]", got.List, err)
	}
	stale := resources.Access{Lease: resourcetest.TokenLease(4), Fencing: targets.FencingToken}
	if _, err := s.Write(ctx, stale, got, []int64{9}); err == nil {
		t.Errorf("a stale write passed the fence after the restart")
	}
}

// The audit log keeps every entry, in order, and checks no token.
func TestAuditLog(t *testing.T) {
	cl, _ := resourcetest.Start(t, postgres.Resource{})
	ctx := context.Background()
	cfg := resources.Config{Prefix: "/audit-test", RPCTimeout: 5 * time.Second}
	for _, n := range cl.ResourceNodes["postgres"] {
		cfg.Endpoints = append(cfg.Endpoints, n.Addr)
	}
	l, err := postgres.Resource{}.DialAuditLog(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	want := []resources.AuditEntry{{Process: 1, Token: 9, Element: 3}, {Process: 0, Token: 4, Element: 7}}
	for _, e := range want {
		if err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Entries(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("entries %v %v, want %v", got, err, want)
	}
}
