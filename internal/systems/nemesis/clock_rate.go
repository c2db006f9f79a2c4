package nemesis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// ClockRate makes a clock run fast or slow, for three to five leases, then
// true again: both the wall and the monotonic clock of a process run Rate
// times as fast as true time (a vDSO patch, like clock-skew:server's; the
// machine's clock is not touched), continuing from what they read, so that
// every timeout, ticker and lease the process times stretches (slow) or
// shrinks (fast). Leases are only safe if the clocks that time them run at
// the same rate: client-go's leader election says it tolerates clock skew
// but not skew rate.
//
// client: the next lock holder's whole process (every process of its
// container), taken at its failpoint (lease checked, about to work and
// write) and let go on at once. A slow holder renews late and believes its
// lease lasts longer than the service does; a fast one gives up early.
//
// server: one random server process.
//
// Recovery makes the wall clock true again (it jumps back to the true
// time); the monotonic clock runs at the true rate from where it is, since
// going back would break the process's timers.
//
// Rate 0 picks one at random: slow 0.25-0.75 or fast 1.5-4, to two
// decimals. The rate is recorded in the fault's record (rate), and at
// recovery the rate the process showed (observed_rate, from the wall-clock
// stamps of its log lines against the engine's: Env.ObservedClock).
type ClockRate struct {
	Scope string
	Rate  float64
}

// MinClockRate and MaxClockRate bound clock-rate's factor (the vDSO patch
// takes [0.01, 100]).
const (
	MinClockRate = 0.01
	MaxClockRate = 100
)

// clockRateParam is the prefix of clock-rate's factor.
const clockRateParam = "x"

// Name is "clock-rate:SCOPE", with ":xR" for a fixed rate.
func (f ClockRate) Name() string {
	if f.Rate == 0 {
		return "clock-rate:" + f.Scope
	}
	return "clock-rate:" + f.Scope + ":" + clockRateParam + strconv.FormatFloat(f.Rate, 'f', -1, 64)
}

// parseClockRate is clock-rate's constructor: a scope (client by default)
// and an optional factor (clock-rate:client:x0.5).
func parseClockRate(param string) (Fault, error) {
	scope, factor, hasFactor := strings.Cut(param, ":")
	if scope == "" {
		scope = ClockClient
	}
	if scope != ClockClient && scope != ClockServer {
		return nil, fmt.Errorf("scope %q: valid: %s (then :xR, as in clock-rate:client:x0.5)", scope, strings.Join(rateScopes, ", "))
	}
	if !hasFactor {
		return ClockRate{Scope: scope}, nil
	}
	num, ok := strings.CutPrefix(factor, clockRateParam)
	rate, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || math.IsNaN(rate) || rate < MinClockRate || rate > MaxClockRate || rate == 1 {
		return nil, fmt.Errorf("clock-rate:%s:%s: the factor is xR, R in [%g, %g] and not 1 (x0.5: half speed; x2: twice)", scope, factor, float64(MinClockRate), float64(MaxClockRate))
	}
	return ClockRate{Scope: scope, Rate: rate}, nil
}

// Applies checks the precondition (Precondition): a way to patch a
// process's clocks (Shape.ProcessClock).
func (f ClockRate) Applies(s Shape) error {
	if f.Scope == ClockServer {
		if err := ownServers(s); err != nil {
			return err
		}
	}
	if s.ProcessClock != nil {
		return cannotApply("a process's clock rate cannot be changed here: %w", s.ProcessClock)
	}
	return nil
}

// ClockRateRecord is what clock-rate records: the rate it set and, at
// recovery, the rate the process's own log showed (over how many stamped
// lines), or why it could not be seen.
type ClockRateRecord struct {
	Rate          float64  `json:"rate"`
	ObservedRate  *float64 `json:"observed_rate,omitempty"`
	ObservedLines int      `json:"observed_lines,omitempty"`
	Unobserved    string   `json:"unobserved,omitempty"`
}

// Inject changes one process's clock rate.
func (f ClockRate) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	rate := f.Rate
	if rate == 0 {
		if r.IntN(2) == 0 {
			rate = 0.25 + 0.5*r.Float64()
		} else {
			rate = 1.5 + 2.5*r.Float64()
		}
		rate = math.Round(rate*100) / 100
	}
	hold := between(r, 3*env.Lease(), 5*env.Lease())
	rec := &ClockRateRecord{Rate: rate}
	node, aim, err := onProcess(ctx, env, r, f.Scope == ClockServer, func(n string) error { return env.RateProcessClock(ctx, n, rate) })
	if err != nil {
		return nil, fmt.Errorf("clock-rate: %w", err)
	}
	since := time.Now()
	return &Injection{
		Nodes: []string{node}, Hold: hold, Holder: aim, Record: rec,
		Recover: func(ctx context.Context) error {
			// The rate the process showed, from its own log's stamps,
			// before its clock is true again.
			seen, err := env.ObservedClock(ctx, node, since)
			switch {
			case err != nil:
				rec.Unobserved = err.Error()
			case seen.Rate == 0:
				rec.Unobserved = "its log's stamped lines span less than 0.5s"
			default:
				observed := math.Round(seen.Rate*1000) / 1000
				rec.ObservedRate, rec.ObservedLines = &observed, seen.Lines
			}
			return env.RateProcessClock(ctx, node, 1)
		},
	}, nil
}

func (ClockRate) holderVerb() string { return "given its fast or slow clock" }

// tellRecord says the rate the clock ran at, and the rate its log stamps
// showed: "w2's clock ran at 1.5x (observed 1.49x over 40 log lines)".
func (ClockRate) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[ClockRateRecord](v)
	if rec.Rate == 0 {
		return nil, err
	}
	s := fmt.Sprintf("%s's clock ran at %sx", subject(v), factor(rec.Rate))
	switch {
	case rec.ObservedRate != nil && rec.ObservedLines > 0:
		s += fmt.Sprintf(" (observed %sx over %d log lines)", factor(*rec.ObservedRate), rec.ObservedLines)
	case rec.ObservedRate != nil:
		s += fmt.Sprintf(" (observed %sx)", factor(*rec.ObservedRate))
	case rec.Unobserved != "":
		s += " (unobserved: " + rec.Unobserved + ")"
	}
	return []string{s}, err
}
