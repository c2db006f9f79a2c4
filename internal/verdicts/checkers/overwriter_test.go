package checkers

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

// The stale holder's write lands inside the next holder's critical section,
// and that holder's write then erases the stale holder's own element: the
// eraser is the write that landed after it (D), not the first write of the
// final list's chain that diverged (C, which landed before).
func TestOverwriterIsTheWriteThatLandedAfter(t *testing.T) {
	for _, withRevs := range []bool{true, false} {
		okRev := func(h *hist, p history.Process, e, token, rev int64, read ...int64) *hist {
			if !withRevs {
				rev = 0
			}
			return h.Add(p, history.Ok, lockappend.FAppend, lockappend.Completion{Element: e, Token: token, Read: list(read), Rev: rev})
		}
		h := newHist(t)
		// A (p0, token 10) reads [] and is paused.
		h.Invoke(0, 1).Acquired(0, 10).Read(0)
		// C (p2, token 12) takes the lock, writes [3].
		h.Invoke(2, 3).Acquired(2, 12).Read(2)
		okRev(h, 2, 3, 12, 5)
		// D (p1, token 14) reads [3]; A resumes and writes [1]; D writes [3 2].
		h.Invoke(1, 2).Acquired(1, 14).Read(1, 3)
		okRev(h, 0, 1, 10, 6)
		okRev(h, 1, 2, 14, 7, 3)
		h.Add(9, history.Invoke, lockappend.FFinalRead, nil)
		h.Add(9, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: []int64{3, 2}})
		lu := parseHist(t, pair(t, h.Events)).LostUpdates()
		if lu.Lost != 1 || lu.Elements[0].Element != 1 {
			t.Fatalf("revs %v: lost %+v", withRevs, lu.Elements)
		}
		w := lu.Elements[0].OverwrittenBy
		if w == nil || w.Element != 2 || w.Process != 1 || w.Token != 14 || w.Stale {
			t.Errorf("revs %v: overwritten by %+v, want D (element 2, process 1, token 14, not stale)", withRevs, w)
		}
	}
}
