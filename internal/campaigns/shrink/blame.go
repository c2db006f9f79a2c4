package shrink

import (
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Blamed are the indexes in faults (a history's, in order: they are the
// recorded schedule's steps) of the faults the run's stories blame for
// its losses: each aimed at a lock holder (pause-holder, partition-client,
// kill-holder) that was the stale party of a lost update, by its process
// and fencing token. The stale party is the overwriter when its token was
// lower than the lost append's (its stale write erased the update), else
// the lost append's own writer (a newer holder's write erased the stale
// holder's update). In the order of the losses, each once; none when no
// loss names a holder a fault was aimed at.
func Blamed(faults []history.Fault, losses []checkers.LostElement) []int {
	var out []int
	for _, le := range losses {
		p, tok := le.Process, le.Token
		if w := le.OverwrittenBy; w != nil && w.Known && w.Stale {
			p, tok = w.Process, w.Token
		}
		if tok == 0 {
			continue
		}
		for i, f := range faults {
			if f.Holder == nil || f.Holder.Token == nil || f.Holder.Process != p || *f.Holder.Token != tok {
				continue
			}
			if !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	return out
}
