package targets

import (
	"context"
	"fmt"
	"time"
)

// PollReady is the readiness loop of every target and resource: it calls
// probe, and again every interval until probe returns nil, and returns nil
// then. When ctx ends first it returns an error "WHAT not ready: "
// wrapping probe's last error made before ctx ended (or the first, if
// every probe ended with it), so that a cluster that never became ready
// says why. probe gets ctx and should bound each of its own requests.
func PollReady(ctx context.Context, what string, every time.Duration, probe func(context.Context) error) error {
	t := time.NewTimer(every)
	defer t.Stop()
	var last error
	for {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		// A probe that ctx's end cut short says less ("context deadline
		// exceeded") than the reason before it (a refused password): keep
		// that one.
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", what, last)
		case <-t.C:
			t.Reset(every)
		}
	}
}
