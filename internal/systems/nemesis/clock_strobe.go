package nemesis

import (
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// ClockStrobe flips a process's wall clock back and forth, as Jepsen's
// strobe does: every Period the offset goes from 0 to Delta or back, for
// 1-2 leases, then the clock is true again. A process that reads the wall
// clock twice may see time run backwards, or leap. The jumps patch the
// process's vDSO (clock-skew:server's path); the monotonic clock is not
// touched.
//
// server: one random server process. wall: the next lock holder's whole
// process (every process of its container), taken at its failpoint.
//
// Delta is 2-4 TTLs at random and Period 50-200 ms, both recorded, with the
// number of flips made (flips).
type ClockStrobe struct{ Scope string }

// Name is "clock-strobe:SCOPE".
func (f ClockStrobe) Name() string { return "clock-strobe:" + f.Scope }

var strobeScopes = []string{ClockServer, ClockWall}

// parseClockStrobe is clock-strobe's constructor: server (the default) or
// wall.
func parseClockStrobe(scope string) (Fault, error) {
	if scope == "" {
		scope = ClockServer
	}
	if scope != ClockServer && scope != ClockWall {
		return nil, fmt.Errorf("scope %q: valid: %s", scope, strings.Join(strobeScopes, ", "))
	}
	return ClockStrobe{Scope: scope}, nil
}

// Applies checks the precondition (Precondition): a way to patch a
// process's clock (Shape.ProcessClock).
func (f ClockStrobe) Applies(s Shape) error {
	if f.Scope == ClockServer {
		if err := ownServers(s); err != nil {
			return err
		}
	}
	if s.ProcessClock != nil {
		return cannotApply("a process's clock cannot be strobed here: %w", s.ProcessClock)
	}
	return nil
}

// ClockStrobeRecord is what clock-strobe records: how far the clock jumps
// and how often and, at recovery, how many times it flipped, or why the
// strobe stopped.
type ClockStrobeRecord struct {
	Delta       history.Duration `json:"delta"`
	Period      history.Duration `json:"period"`
	Flips       *int             `json:"flips,omitempty"`
	StrobeError string           `json:"strobe_error,omitempty"`
}

// Inject starts the strobe.
func (f ClockStrobe) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	delta := between(r, 2*env.TTL(), 4*env.TTL()).Round(time.Second)
	period := between(r, 50*time.Millisecond, 200*time.Millisecond).Round(time.Millisecond)
	hold := between(r, env.Lease(), 2*env.Lease())
	rec := &ClockStrobeRecord{Delta: history.Duration(delta), Period: history.Duration(period)}
	node, aim, err := onProcess(ctx, env, r, f.Scope == ClockServer, func(n string) error { return env.SkewProcessClock(ctx, n, delta) })
	if err != nil {
		return nil, fmt.Errorf("clock-strobe: %w", err)
	}
	sctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	flips := 1
	var failed error
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		ahead := true
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
			off := delta
			if ahead {
				off = 0
			}
			if err := env.SkewProcessClock(sctx, node, off); err != nil {
				if sctx.Err() == nil {
					failed = err
				}
				return
			}
			ahead = !ahead
			flips++
		}
	}()
	return &Injection{
		Nodes: []string{node}, Hold: hold, Holder: aim, Record: rec,
		Recover: func(ctx context.Context) error {
			stop()
			wg.Wait()
			rec.Flips = &flips
			if failed != nil {
				rec.StrobeError = failed.Error()
			}
			return env.SkewProcessClock(ctx, node, 0)
		},
	}, nil
}

func (ClockStrobe) holderVerb() string { return "given its flipping clock" }

// tellRecord says how the wall clock flipped, and how often it did.
func (ClockStrobe) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[ClockStrobeRecord](v)
	var out []string
	if rec.Delta != 0 || rec.Period != 0 {
		s := fmt.Sprintf("%s's wall clock flipped between true and %s every %s", subject(v), signedSpan(rec.Delta.D()), span(rec.Period.D()))
		if rec.Flips != nil {
			s += fmt.Sprintf(" (%d %s)", *rec.Flips, plural(*rec.Flips, "flip"))
		}
		out = append(out, s)
	}
	if rec.StrobeError != "" {
		out = append(out, "the strobe failed: "+rec.StrobeError)
	}
	return out, err
}
