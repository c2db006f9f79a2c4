package nemesis

import (
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// PauseHolder freezes the lock holder inside its critical section: it takes
// the next client that reaches its failpoint (lease checked, about to work
// and write), sends SIGSTOP to the client's container (freezing all of it,
// lease keepalives included) while the client waits there, lets it proceed
// (it reads that only once resumed), and holds it for a random time between
// 1.5 and 3 leases (Env.Lease: the TTL, or longer where the target's
// server-side timer or lock-delay is), after which SIGCONT resumes it. The
// lease expires meanwhile; another client can acquire the lock and write,
// and the resumed holder then writes with a stale lease. The pause is in
// place before the holder's write leaves, however slow the machine.
//
// With a TTL multiple (pause-holder:xM, TTLMultiple M > 0) the holder is
// held for exactly M TTLs (Env.TTL, not the lease) from the moment it was
// found at its failpoint, so that a pause can also be shorter than the
// lease: the sweep varies M to find where a pause starts losing updates.
// The time SIGSTOP took is part of the M TTLs, since the holder waited at
// its failpoint meanwhile, its lease running (on a loaded machine the
// engine can take more than half a second); the schedule holds the rest.
// The multiple is recorded in the fault's record (ttl_multiple), with the
// time SIGSTOP took (stop_took).
type PauseHolder struct {
	TTLMultiple float64 // 0: a random hold of 1.5-3 leases
}

// MaxTTLMultiple bounds pause-holder:xM: a pause of 50 TTLs is already far
// past any lease (Consul's 2 TTL + lock-delay included).
const MaxTTLMultiple = 50

// pauseHolderParam is the prefix of pause-holder's TTL multiple parameter.
const pauseHolderParam = "x"

// Name is "pause-holder", or "pause-holder:xM" with a TTL multiple.
func (p PauseHolder) Name() string {
	if p.TTLMultiple == 0 {
		return "pause-holder"
	}
	return "pause-holder:" + pauseHolderParam + strconv.FormatFloat(p.TTLMultiple, 'f', -1, 64)
}

// parsePauseHolder is pause-holder's constructor: no parameter (random
// holds), or xM, M a decimal number in (0, MaxTTLMultiple].
func parsePauseHolder(param string) (Fault, error) {
	if param == "" {
		return PauseHolder{}, nil
	}
	num, ok := strings.CutPrefix(param, pauseHolderParam)
	if !ok {
		return nil, fmt.Errorf("pause-holder takes xM (hold M TTLs, as in pause-holder:x1.25), not %q", param)
	}
	m, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(m) || m <= 0 || m > MaxTTLMultiple {
		return nil, fmt.Errorf("pause-holder:x%s: the TTL multiple must be a number in (0, %d]", num, MaxTTLMultiple)
	}
	return PauseHolder{TTLMultiple: m}, nil
}

// hold is how long the holder stays paused.
func (p PauseHolder) hold(env Env, r *rand.Rand) time.Duration {
	if p.TTLMultiple > 0 {
		return time.Duration(p.TTLMultiple * float64(env.TTL()))
	}
	return time.Duration((1.5 + 1.5*r.Float64()) * float64(env.Lease()))
}

// PauseHolderRecord is what pause-holder records besides its holder: the
// multiple of the TTL it holds (pause-holder:xM; the holder's stop_took is
// then how long its SIGSTOP took, counted in the hold). Delay is only in
// runs of earlier versions, which paused the holder a random time into its
// critical section.
type PauseHolderRecord struct {
	TTLMultiple float64          `json:"ttl_multiple,omitempty"`
	Delay       history.Duration `json:"delay,omitempty"`
}

// Inject waits for the next holder and pauses it.
func (p PauseHolder) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	h, err := env.NextHolder(ctx)
	if err != nil {
		return nil, err
	}
	found := time.Now()
	hold := p.hold(env, r)
	if err := env.Signal(ctx, h.Node, "SIGSTOP"); err != nil {
		// A call that failed (the run's time limit cancelled it, the
		// engine's answer was lost) may have stopped the holder all the
		// same: recorded, and resumed at once by the schedule's heal.
		h.Proceed()
		return inPart([]string{h.Node}, nil, func(context.Context) error { return signalAll(env, []string{h.Node}, "SIGCONT") },
			fmt.Errorf("pause-holder: %w", err))
	}
	rec := &PauseHolderRecord{TTLMultiple: p.TTLMultiple}
	var took *history.Duration
	if p.TTLMultiple > 0 {
		d := time.Since(found)
		hold = max(hold-d, 0)
		took = new(history.Ms(d))
	}
	aim := h.aim()
	aim.StopTook = took
	return &Injection{
		Nodes:  []string{h.Node},
		Holder: aim,
		Record: rec,
		Hold:   hold,
		Recover: func(ctx context.Context) error {
			return env.Signal(ctx, h.Node, "SIGCONT")
		},
	}, nil
}

func (PauseHolder) holderVerb() string { return "frozen" }

// tellRecord says the multiple of the TTL the holder was held, or (runs of
// earlier versions) how far into its critical section it was paused.
func (PauseHolder) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[PauseHolderRecord](v)
	var out []string
	if rec.TTLMultiple > 0 {
		out = append(out, factor(rec.TTLMultiple)+" TTLs")
	}
	if rec.Delay != 0 {
		out = append(out, "paused "+span(rec.Delay.D())+" into its critical section")
	}
	return out, err
}
