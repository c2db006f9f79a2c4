package lockappend

import (
	"context"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/targets"
)

// askBound bounds one question to the library: an answer that takes
// longer is no answer (a library that asks its servers, cut off).
const askBound = time.Second

// askHeld asks lease's library whether it still holds the lock, within
// askBound: its answer, or no answer (Error), or Unknown for a lease that
// cannot be asked (no targets.Believer).
func askHeld(ctx context.Context, lease targets.Lease) la.Held {
	b, ok := lease.(targets.Believer)
	if !ok {
		return la.Held{Unknown: true}
	}
	actx, cancel := context.WithTimeout(ctx, askBound)
	defer cancel()
	asked := history.KernelMonotonic()
	held, err := b.Held(actx)
	at := history.KernelMonotonic()
	if err != nil {
		return la.Held{Error: err.Error(), AskedMono: asked, AnsweredMono: at}
	}
	return la.Held{Held: held, AskedMono: asked, AnsweredMono: at}
}

// sampleBelief asks lease's library every la.BeliefEvery whether it still
// holds the lock, reporting each answer as a held phase, until stop, which
// returns once the last question has been answered (or given up). A
// library that cannot be asked is reported once, as unknown. The process
// being paused pauses the questions too: its first answer after it
// resumes is the one that counts.
func sampleBelief(ctx context.Context, lease targets.Lease, env workloads.Env) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(la.BeliefEvery)
		defer tick.Stop()
		for {
			h := askHeld(ctx, lease)
			if ctx.Err() != nil {
				return // stopped while asking: the holder is releasing
			}
			env.Report(la.PhaseHeld, h)
			if h.Unknown {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// recheck is the careful holder's question right before its write: it
// reports the answer and says whether to write (told held, or the library
// cannot be asked: a holder that cannot ask writes as before).
func recheck(ctx context.Context, lease targets.Lease, env workloads.Env) (write bool, why string) {
	h := askHeld(ctx, lease)
	h.Recheck = true
	env.Report(la.PhaseHeld, h)
	switch {
	case h.Unknown || h.Held:
		return true, ""
	case h.Error != "":
		return false, "the library did not answer whether it still holds the lock: " + h.Error
	}
	return false, "the library says it no longer holds the lock"
}
