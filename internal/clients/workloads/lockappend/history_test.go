package lockappend

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/testkit/histtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Each broken assumption gives unknown with the reason, never a verdict.
func TestBrokenAssumptions(t *testing.T) {
	cases := []struct {
		name  string
		build func(h *histtest.Hist)
		want  string
	}{
		{"completion before its invocation", func(h *histtest.Hist) {
			h.Section(0, 1, 10)
			h.Invoke(1, 2).Acquired(1, 11).Read(1, 1)
			h.Events[len(h.Events)-1].Time = h.Time()
			h.Ok(1, 2, 11, 1)
			// The completion's time goes back before the invocation's.
			h.Events[len(h.Events)-1].Time = h.Events[len(h.Events)-3].Time - 5*histtest.MS
			h.FinalRead(1_000_000, 1, 2)
		}, "completes at"},
		{"an ok append after the final read", func(h *histtest.Hist) {
			h.Section(0, 1, 10)
			h.Invoke(1, 2).Acquired(1, 11).Read(1, 1)
			h.Add(1_000_000, history.Invoke, la.FFinalRead, nil)
			h.WriteSent(1).Released(1).Ok(1, 2, 11, 1)
			h.Add(1_000_000, history.Ok, la.FFinalRead, la.ReadValue{Value: []int64{1, 2}})
		}, "after the final read began"},
		{"a duplicate element", func(h *histtest.Hist) {
			h.Section(0, 1, 10)
			h.Section(1, 1, 11, 1)
			h.FinalRead(1_000_000, 1, 1)
		}, "element 1 is appended twice"},
		{"two operations of a process outstanding at once", func(h *histtest.Hist) {
			h.Section(0, 1, 10)
			h.Section(0, 2, 11, 1)
			// The second invocation's time goes back inside the first.
			for i := range h.Events {
				if h.Events[i].Type == history.Invoke && h.Events[i].F == la.FAppend && h.Events[i].Process == 0 && i > 0 {
					h.Events[i].Time = 2 * histtest.MS
				}
			}
			h.FinalRead(1_000_000, 1, 2)
		}, "two operations outstanding at once"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := histtest.New(t)
			c.build(h)
			err := checkAssumptions(histtest.Pair(t, h.Events))
			if err == nil {
				t.Fatal("no broken assumption found")
			}
			v := checkers.CannotCheck(err)
			if v.Valid != checkers.Unknown {
				t.Fatalf("verdict %s, want unknown", v.Valid)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(v.Message, "breaks an assumption") {
				t.Errorf("error %q, message %q; want %q", err, v.Message, c.want)
			}
		})
	}
}
