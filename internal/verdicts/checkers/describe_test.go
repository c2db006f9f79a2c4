package checkers

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// A lost element is told with each client's worker name, the stale holder
// named as such whichever of the two writes was the stale one, and no
// token where the grant had none.
func TestDescribeLostElement(t *testing.T) {
	over := func(p history.Process, tok int64, stale bool) *Overwrite {
		return &Overwrite{Element: 99, Known: true, Process: p, Token: tok, Type: history.Ok, Stale: stale}
	}
	for _, c := range []struct {
		e    LostElement
		want string
	}{
		// Process 2 of 5 is w3, process 6 of 5 is w2 again.
		{LostElement{Element: 11, Process: 6, Token: 65, OverwrittenBy: over(2, 25, true)},
			"w3's stale write (token 25) erased w2's acknowledged element 11"},
		// The eraser had the higher token: named, not judged.
		{LostElement{Element: 11, Process: 2, Token: 25, OverwrittenBy: over(1, 65, false)},
			"w2's write (token 65) erased w3's acknowledged element 11"},
		// Tokenless clients: no token, and no claim of staleness.
		{LostElement{Element: 4, Process: 0, OverwrittenBy: over(3, 0, false)},
			"w4's write erased w1's acknowledged element 4"},
		{LostElement{Element: 4, Process: 0, Resource: "postgres", Lock: "lock-2"},
			"w1's acknowledged element 4 in postgres of lock-2 is lost (the final read does not tell which write erased it)"},
		{LostElement{Element: 4, Process: 1, Token: 7, OverwrittenBy: &Overwrite{Known: true, SideWriter: true, Process: history.SideWriter}},
			"the side writer's write (no lock, no token) erased w2's acknowledged element 4"},
		{LostElement{Element: 4, Process: history.SideWriter, SideWriter: true, OverwrittenBy: over(0, 3, false)},
			"w1's write (token 3) erased the side writer's acknowledged element 4 (no lock, no token)"},
		{LostElement{Element: 4, Process: 1, Token: 7, OverwrittenBy: &Overwrite{Known: true, Process: 0, Token: 3, Type: history.Info, Stale: true}},
			"w1's write (token 3), whose outcome the harness never learnt (info), erased w2's acknowledged element 4"},
		// One worker's two processes, told apart in words: process 5 of 5
		// is w1 after an unknown outcome, process 10 after two.
		{LostElement{Element: 2, Process: 0, Token: 4, OverwrittenBy: over(5, 1, true)},
			"w1's stale write (token 1), made after an unknown outcome, erased w1's acknowledged element 2"},
		{LostElement{Element: 2, Process: 10, Token: 4, OverwrittenBy: over(0, 9, false)},
			"w1's write (token 9) erased w1's acknowledged element 2 (appended after 2 unknown outcomes)"},
		{LostElement{Element: 2, Process: 0, Token: 4, OverwrittenBy: &Overwrite{Known: true, Process: 5, Token: 3, Type: history.Info}},
			"w1's write (token 3), made after an unknown outcome, whose outcome the harness never learnt (info), erased w1's acknowledged element 2"},
		// The same process erased its own element: nothing to tell apart.
		{LostElement{Element: 2, Process: 5, Token: 4, OverwrittenBy: over(5, 9, false)},
			"w1's write (token 9) erased w1's acknowledged element 2"},
	} {
		if got := c.e.Describe(5); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func TestFailReasonsText(t *testing.T) {
	got := FailReasonsText(map[string]int{"not-acquired": 9, "lease-short": 12, "": 1, "fenced": 9, "gone": 0})
	if want := "12 lease-short, 9 fenced, 9 not-acquired, 1 without a reason"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
