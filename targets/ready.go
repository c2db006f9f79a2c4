package targets

import (
	"context"
	"fmt"
	"time"
)

// PollReady is the readiness loop of every target and resource: it calls
// probe, and again every interval until probe returns nil, and returns nil
// then. When ctx ends first it returns an error "WHAT not ready: "
// wrapping probe's last error, so that a cluster that never became ready
// says why. probe gets ctx and should bound each of its own requests.
func PollReady(ctx context.Context, what string, every time.Duration, probe func(context.Context) error) error {
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		last := probe(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", what, last)
		case <-t.C:
			t.Reset(every)
		}
	}
}
