package checkers

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Holder is a client that believed it held the lock.
type Holder struct {
	Process history.Process `json:"process"`
	Token   int64           `json:"token"`
}

// OverlapWindow is a maximal stretch of time during which two or more
// clients believed they held the lock.
type OverlapWindow struct {
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// Holders are the clients that believed they held the lock at some
	// time in the window, in the order they came in.
	Holders []Holder `json:"holders"`
}

// OverlapResult counts the windows in which clients' beliefs overlapped. It
// is informational and Valid on any history it can read: under pauses
// overlap is expected even when fenced, and fencing is what makes it
// harmless.
type OverlapResult struct {
	Verdict
	Overlaps int             `json:"overlaps"`
	Windows  []OverlapWindow `json:"windows,omitempty"`
}

// checkOverlap finds the windows in which two or more clients believed they
// held the lock. A client believes it holds the lock from its acquired phase
// to its releasing or released phase; without one, to its late result (the
// end of an info operation's critical section), else its completion, else
// the last event of the history. Intervals that only touch do not overlap. It runs in
// O(n log n).
func checkOverlap(h *AppendHistory) OverlapResult {
	type point struct {
		t     int64
		start bool
		who   int
	}
	var holders []Holder
	var points []point
	for i := range h.appends {
		a := &h.appends[i]
		if !a.Acquired {
			continue
		}
		end := h.last
		switch {
		case a.ReleasedAt >= 0:
			end = a.ReleasedAt
		case a.Late != nil:
			end = a.LateAt
		case a.Op.Complete != nil:
			end = a.Op.Complete.Time
		}
		end = max(end, a.AcquiredAt)
		who := len(holders)
		holders = append(holders, Holder{Process: a.Op.Process, Token: a.Token})
		points = append(points, point{a.AcquiredAt, true, who}, point{end, false, who})
	}
	// By time; at equal times ends first, so that a hand-over is no overlap.
	slices.SortStableFunc(points, func(x, y point) int {
		if c := cmp.Compare(x.t, y.t); c != 0 {
			return c
		}
		switch {
		case x.start == y.start:
			return 0
		case !x.start:
			return -1
		}
		return 1
	})

	res := OverlapResult{Verdict: Verdict{Valid: Valid}}
	active := []int{}                // holders now believing
	pos := make([]int, len(holders)) // holder -> index in active
	var open *OverlapWindow
	for _, p := range points {
		if p.start {
			pos[p.who] = len(active)
			active = append(active, p.who)
			switch {
			case open != nil:
				open.Holders = append(open.Holders, holders[p.who])
			case len(active) == 2:
				open = &OverlapWindow{Start: p.t, Holders: []Holder{holders[active[0]], holders[active[1]]}}
			}
			continue
		}
		i, last := pos[p.who], active[len(active)-1]
		active[i], pos[last] = last, i
		active = active[:len(active)-1]
		if open != nil && len(active) < 2 {
			open.End = p.t
			res.Windows = append(res.Windows, *open)
			open = nil
		}
	}
	res.Overlaps = len(res.Windows)
	res.Message = fmt.Sprintf("%d windows in which two or more of %d grants' holders believed they held the lock", res.Overlaps, len(holders))
	return res
}
