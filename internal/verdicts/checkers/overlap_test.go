package checkers

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

func TestCheckOverlap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       *hist
		windows []OverlapWindow
	}{
		{
			name: "hand-over at the same instant",
			h:    newHist(t).Invoke(0, 1).Invoke(1, 2).Acquired(0, 1).Released(0).Same().Acquired(1, 2).Released(1),
		},
		{
			// A (token 10) is paused inside its critical section from
			// its grant (2 ms) to its release (9 ms); B holds from 5 ms
			// to 7 ms.
			name: "paused holder",
			h: newHist(t).Invoke(0, 1).Acquired(0, 10).Read(0).
				Invoke(1, 2).Acquired(1, 12).Read(1).Released(1).Ok(1, 2, 12).
				Released(0).Ok(0, 1, 10),
			windows: []OverlapWindow{{Start: 5 * ms, End: 7 * ms, Holders: []Holder{{0, 10}, {1, 12}}}},
		},
		{
			// A timed out (info at 3 ms) and never reported again: it
			// believes it holds until its completion. C's info at 8 ms is
			// followed by a late result at 9 ms, which ends its belief.
			name: "info ends",
			h: newHist(t).Invoke(0, 1).Acquired(0, 10).Info(0, 1).
				Invoke(1, 2).Acquired(1, 11).Invoke(2, 3).Acquired(2, 12).Info(2, 3).
				Late(2, history.Ok, lockappend.Completion{Element: 3}).Released(1).Ok(1, 2, 11),
			windows: []OverlapWindow{{Start: 7 * ms, End: 9 * ms, Holders: []Holder{{1, 11}, {2, 12}}}},
		},
		{
			// A never completes: it believes until the history ends.
			name: "holder until the end",
			h: newHist(t).Invoke(0, 1).Acquired(0, 10).
				Section(1, 2, 11).Section(2, 3, 12, 2),
			windows: []OverlapWindow{
				{Start: 4 * ms, End: 7 * ms, Holders: []Holder{{0, 10}, {1, 11}}},
				{Start: 10 * ms, End: 13 * ms, Holders: []Holder{{0, 10}, {2, 12}}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parseHist(t, pair(t, tc.h.Events)).Overlap()
			if r.Valid != Valid {
				t.Errorf("overlap is %s, want always valid", r.Valid)
			}
			if r.Overlaps != len(tc.windows) {
				t.Fatalf("%d overlaps %+v, want %d", r.Overlaps, r.Windows, len(tc.windows))
			}
			for i, w := range tc.windows {
				g := r.Windows[i]
				if g.Start != w.Start || g.End != w.End || !equalHolders(g.Holders, w.Holders) {
					t.Errorf("window %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func equalHolders(a, b []Holder) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
