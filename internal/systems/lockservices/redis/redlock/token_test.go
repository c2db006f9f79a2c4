package redlock

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/testkit/redistest"
	"github.com/fencecheck/fencecheck/targets"
)

// Kleppmann's objection, on real masters: the token is taken after the
// grant, not with it. A holds the Redlock and stops before its INCR; its
// lease expires, B takes the lock, its token, and writes. A resumes, takes
// a higher token than B's, and its stale write passes the token fence: B's
// acknowledged update is lost. cas (n1's lock key) refuses A.
func TestTokenIsNotPartOfTheGrant(t *testing.T) {
	cl, host := redistest.Start(t, Target{}, 5)
	ctx := context.Background()
	a := host.(*Client)
	b := redistest.Dial(t, Target{}, cl)
	granted, resume := make(chan struct{}), make(chan struct{})
	a.afterGrant = func() { close(granted); <-resume }
	type result struct {
		lease targets.Lease
		err   error
	}
	done := make(chan result, 1)
	go func() {
		l, err := a.Acquire(ctx)
		done <- result{l, err}
	}()
	<-granted
	time.Sleep(redistest.TTL + 200*time.Millisecond) // A stops past its lease

	lb, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(ctx, []int64{2}, lb, targets.FencingToken); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	close(resume)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	la := r.lease
	t.Logf("A: granted first, token %d, %s left; B: granted second, token %d", la.Token(), la.Remaining().Round(time.Millisecond), lb.Token())
	if la.Remaining() > 0 {
		t.Errorf("A believes it has %s left, want an expired lease", la.Remaining())
	}
	if la.Token() <= lb.Token() {
		t.Fatalf("A's token %d is not above B's %d", la.Token(), lb.Token())
	}
	if _, err := a.Write(ctx, []int64{9}, la, targets.FencingCAS); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("A's cas write: %v, want ErrFenced (n1's lock key holds B's value)", err)
	}
	if _, err := a.Write(ctx, []int64{1}, la, targets.FencingToken); err != nil {
		t.Errorf("A's stale token write: %v, want it accepted (its token is the higher)", err)
	}
	if list, _ := a.Read(ctx); !slices.Equal(list, []int64{1}) {
		t.Errorf("list %v, want [1]: B's acknowledged element 2 erased", list)
	}
	lb.Release(ctx)
}
