// Package targettest holds the contract checks every target's integration
// tests run on a real cluster: how a lock passes from a holder that becomes
// stale to the next one, which of the stale holder's operations each fence
// refuses, and what Reset leaves. A target's test keeps only its own
// prologue and epilogue (lease lengths, sessions, lock keys).
package targettest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/targets"
)

// Exclusive checks that nobody else gets the lock while it is held: an
// Acquire on c with a deadline wait from now fails. It returns how long that
// Acquire took to give up.
func Exclusive(t testing.TB, c targets.Client, wait time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	if _, err := c.Acquire(ctx); err == nil {
		t.Fatalf("a second client acquired a held lock")
	}
	return time.Since(start)
}

// Fences checks the fencing contract on c, starting from a, the lease of the
// lock's holder, and an empty list:
//
//   - a says it is held (targets.Believer);
//   - a's token write of [1] passes; a releases; the next holder b gets a
//     higher token;
//   - b's fenced read returns [1] and moves the fence before b writes
//     anything: from then on a's token write and a's fenced read are refused
//     with ErrFenced;
//   - b's token write of [1 2] passes; a's token and cas writes are refused
//     and leave [1 2]; b's cas write of [1 2 3] passes;
//   - a's unfenced write of [9] is accepted and overwrites the list: the lost
//     update fencing exists to stop;
//   - the revisions the resource gives for these three writes increase
//     (a revision of 0, "none", is not compared).
//
// It returns b, still holding the lock, and the revisions, which the caller
// checks against what its resource promises.
func Fences(t testing.TB, lc targets.Client, a targets.Lease) (b targets.Lease, revs Revisions) {
	t.Helper()
	ctx := context.Background()
	c := LockStore(t, lc)
	// A built-in recipe answers whether it holds the lock, with its own
	// signal (targets.Believer), and a fresh holder is told it does.
	if bel, ok := a.(targets.Believer); !ok {
		t.Errorf("the lease %T cannot say whether it is held (targets.Believer)", a)
	} else if held, err := bel.Held(ctx); err != nil || !held {
		t.Errorf("a fresh holder asked whether it holds the lock: %v, %v", held, err)
	}
	if _, err := c.Write(ctx, []int64{1}, a, targets.FencingToken); err != nil {
		t.Fatalf("token write of the holder: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d: not increasing", b.Token(), a.Token())
	}

	if list, err := c.ReadFenced(ctx, b); err != nil || !slices.Equal(list, []int64{1}) {
		t.Fatalf("b's fenced read: %v %v", list, err)
	}
	if _, err := c.Write(ctx, []int64{7}, a, targets.FencingToken); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("stale token write after the new holder's read: %v, want ErrFenced", err)
	}
	if _, err := c.ReadFenced(ctx, a); !errors.Is(err, targets.ErrFenced) {
		t.Errorf("stale fenced read: %v, want ErrFenced", err)
	}

	revs.Token, err = c.Write(ctx, []int64{1, 2}, b, targets.FencingToken)
	if err != nil {
		t.Fatalf("token write: %v", err)
	}
	for _, f := range []targets.Fencing{targets.FencingToken, targets.FencingCAS} {
		if _, err := c.Write(ctx, []int64{9}, a, f); !errors.Is(err, targets.ErrFenced) {
			t.Errorf("stale %s write: %v, want ErrFenced", f, err)
		} else {
			t.Logf("stale %s write refused: %v", f, err)
		}
	}
	if list, err := c.Read(ctx); err != nil || !slices.Equal(list, []int64{1, 2}) {
		t.Errorf("read %v %v, want [1 2]", list, err)
	}
	if revs.CAS, err = c.Write(ctx, []int64{1, 2, 3}, b, targets.FencingCAS); err != nil {
		t.Errorf("cas write of the holder: %v", err)
	}
	if revs.Unfenced, err = c.Write(ctx, []int64{9}, a, targets.FencingNone); err != nil {
		t.Errorf("unfenced stale write: %v; want it accepted", err)
	}
	if list, _ := c.Read(ctx); !slices.Equal(list, []int64{9}) {
		t.Errorf("after the unfenced stale write: %v, want [9]", list)
	}
	if (revs.CAS != 0 && revs.CAS <= revs.Token) || (revs.Unfenced != 0 && revs.Unfenced <= max(revs.CAS, revs.Token)) {
		t.Errorf("revisions %+v: not increasing", revs)
	}
	return b, revs
}

// Client is a target's client that keeps the list in its own store (the
// lock-store resource).
type Client interface {
	targets.Client
	targets.Store
}

// LockStore returns c as a Client, failing the test when the target keeps
// no store of its own.
func LockStore(t testing.TB, c targets.Client) Client {
	t.Helper()
	s, ok := c.(Client)
	if !ok {
		t.Fatalf("%T keeps no store of its own (targets.Store)", c)
	}
	return s
}

// Revisions are the resource's revisions of the writes Fences made, in
// order: b's token write, b's cas write, a's unfenced write. 0 is "none"
// (Client.Write's contract).
type Revisions struct{ Token, CAS, Unfenced int64 }

// AllSet reports whether the resource gave a revision for every write.
func (r Revisions) AllSet() bool { return r.Token > 0 && r.CAS > 0 && r.Unfenced > 0 }

// Emptied checks that Reset empties the list: a read returns an empty,
// non-nil list.
func Emptied(t testing.TB, lc targets.Client) {
	t.Helper()
	ctx := context.Background()
	c := LockStore(t, lc)
	if err := c.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Read(ctx); err != nil || len(list) != 0 || list == nil {
		t.Errorf("after reset: %#v %v, want an empty list", list, err)
	}
}

// Elects checks a target's election recipe with two clients of one
// cluster: a campaigns and leads; b's campaign does not win while a leads
// (it gives up after wait); a resigns, and b's next campaign wins with a
// higher term; after b resigns, a wins again with a higher term still.
func Elects(t testing.TB, a, b targets.Client, wait time.Duration) {
	t.Helper()
	ctx := context.Background()
	ea, ok := a.(targets.Elector)
	eb, ok2 := b.(targets.Elector)
	if !ok || !ok2 {
		t.Fatalf("%T has no election recipe (targets.Elector)", a)
	}
	la, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("a's campaign: %v", err)
	}
	if la.Token() <= 0 {
		t.Errorf("a leads with term %d, want > 0", la.Token())
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	if _, err := eb.Campaign(wctx, "b"); err == nil {
		t.Fatalf("b won a campaign while a led")
	}
	cancel()
	if err := la.Release(ctx); err != nil {
		t.Fatalf("a resigns: %v", err)
	}
	lb, err := eb.Campaign(ctx, "b")
	if err != nil {
		t.Fatalf("b's campaign after a resigned: %v", err)
	}
	if lb.Token() <= la.Token() {
		t.Errorf("b's term %d after a's %d: not increasing", lb.Token(), la.Token())
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatalf("b resigns: %v", err)
	}
	la2, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("a's second campaign: %v", err)
	}
	if la2.Token() <= lb.Token() {
		t.Errorf("a's second term %d after b's %d: not increasing", la2.Token(), lb.Token())
	}
	_ = la2.Release(ctx)
}

// PassesOn checks that a holder that stops (its client closed: no renewal
// and no release, as in a frozen or crashed process) keeps the lock for
// between least and most, and that the next holder, on other, gets a
// higher token. It returns the stopped holder's lease, the next holder's,
// still held, and how long the lock took to pass on.
func PassesOn(t testing.TB, holder, other targets.Client, least, most time.Duration) (a, b targets.Lease, waited time.Duration) {
	t.Helper()
	ctx := context.Background()
	a, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	holder.Close()
	start := time.Now()
	if b, err = other.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waited = time.Since(start)
	if waited < least || waited > most {
		t.Errorf("lock passed on after %s, want %s to %s", waited, least, most)
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}
	return a, b, waited
}
