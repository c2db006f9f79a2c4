package nemesis

import (
	"context"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"math/rand/v2"
	"strings"
	"time"
)

// Clock-skew scopes.
const (
	ClockServer = "server"
	ClockClient = "client"
	ClockWall   = "wall"
)

// ClockSkew skews a clock for one to two leases, then restores it.
//
// server: the wall clock of one random server process jumps forward by two
// to four TTLs (more than a lease), by patching the process's vDSO; the
// machine's clock is not touched. Servers that time leases on the monotonic
// clock (etcd) do not notice; servers that expire keys by the wall clock
// (Redis) expire every lease at once.
//
// client: a random client's lease clock jumps ahead or behind by two to four
// TTLs. Behind, the client believes its lease has more time left than it
// has, and its lease check passes when it should not; ahead, it gives up
// leases it still holds. Only fencecheck's own lease estimate moves: what a
// client library reads of the clock does not.
//
// wall: the wall clock of the next lock holder's whole process (every
// process of its container: the worker and any client program it runs)
// jumps ahead or behind by two to four TTLs, or by the offset given
// (clock-skew:wall:+1h), as a step of its machine's clock does, by the same
// vDSO patch; its monotonic clock does not move. A client library that
// times leases on the wall clock sees the jump; one that times them on the
// monotonic clock (Go's time.Since, client-go's leader election) does not.
//
// server and wall record, at recovery, the offset the process's own log
// stamps showed against the engine's (observed_offset: Env.ObservedClock).
type ClockSkew struct {
	Scope  string
	Offset time.Duration // wall: the jump; 0 a random one
}

// Name is "clock-skew:SCOPE", with the offset of a fixed wall jump.
func (f ClockSkew) Name() string {
	if f.Scope == ClockWall && f.Offset != 0 {
		sign := "+"
		if f.Offset < 0 {
			sign = ""
		}
		return "clock-skew:" + ClockWall + ":" + sign + f.Offset.String()
	}
	return "clock-skew:" + f.Scope
}

// MaxClockJump bounds clock-skew:wall's offset.
const MaxClockJump = 24 * time.Hour

// parseClockSkew is clock-skew's constructor: a scope, and for wall an
// optional signed offset (clock-skew:wall:+1h, clock-skew:wall:-90s).
func parseClockSkew(param string) (Fault, error) {
	scope, offset, hasOffset := strings.Cut(param, ":")
	if scope == "" {
		scope = ClockClient
	}
	switch scope {
	case ClockClient, ClockServer:
		if hasOffset {
			return nil, fmt.Errorf("clock-skew:%s takes no offset (clock-skew:wall:+1h does)", scope)
		}
		return ClockSkew{Scope: scope}, nil
	case ClockWall:
		if !hasOffset {
			return ClockSkew{Scope: ClockWall}, nil
		}
		d, err := time.ParseDuration(offset)
		if err != nil || d == 0 || d.Abs() > MaxClockJump || d%time.Microsecond != 0 {
			return nil, fmt.Errorf("clock-skew:wall:%s: the offset must be a non-zero duration of at most %s either way, to the microsecond (+1h, -90s)", offset, MaxClockJump)
		}
		return ClockSkew{Scope: ClockWall, Offset: d}, nil
	}
	return nil, fmt.Errorf("scope %q: valid: %s", scope, strings.Join(clockScopes, ", "))
}

// Applies checks the scope's precondition (Precondition): :server and :wall
// need a way to skew a process's clock (Shape.ProcessClock); a client's
// lease clock can always be skewed.
func (f ClockSkew) Applies(s Shape) error {
	if f.Scope == ClockServer {
		if err := ownServers(s); err != nil {
			return err
		}
	}
	if f.Scope != ClockClient && s.ProcessClock != nil {
		return cannotApply("a process's clock cannot be skewed here: %w", s.ProcessClock)
	}
	return nil
}

// ClockSkewRecord is what clock-skew records: the offset it set and, for a
// server's process, the offset its own log showed at recovery, or why it
// could not be seen.
type ClockSkewRecord struct {
	Offset         history.Duration  `json:"offset"`
	ObservedOffset *history.Duration `json:"observed_offset,omitempty"`
	Unobserved     string            `json:"unobserved,omitempty"`
}

// Inject skews one clock.
func (f ClockSkew) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	offset := between(r, 2*env.TTL(), 4*env.TTL()).Round(time.Second)
	hold := between(r, env.Lease(), 2*env.Lease())
	var node string
	var aim *history.Aim
	var err error
	switch f.Scope {
	case ClockServer, ClockWall:
		if f.Scope == ClockWall {
			if r.IntN(2) == 0 {
				offset = -offset
			}
			if f.Offset != 0 {
				offset = f.Offset
			}
		}
		node, aim, err = onProcess(ctx, env, r, f.Scope == ClockServer, func(n string) error { return env.SkewProcessClock(ctx, n, offset) })
	default:
		clients := env.Clients()
		node = clients[r.IntN(len(clients))]
		if r.IntN(2) == 0 {
			offset = -offset
		}
		err = env.SkewClientClock(ctx, node, offset)
	}
	if err != nil {
		return nil, err
	}
	skew := env.SkewProcessClock
	if f.Scope == ClockClient {
		skew = env.SkewClientClock
	}
	since := time.Now()
	rec := &ClockSkewRecord{Offset: history.Duration(offset)}
	return &Injection{
		Nodes: []string{node}, Hold: hold, Holder: aim, Record: rec,
		Recover: func(ctx context.Context) error {
			if f.Scope != ClockClient {
				// The offset the process showed, from its own log's
				// stamps, before its clock is true again.
				if seen, err := env.ObservedClock(ctx, node, since); err != nil {
					rec.Unobserved = err.Error()
				} else {
					observed := history.Ms(seen.Offset)
					rec.ObservedOffset = &observed
				}
			}
			return skew(ctx, node, 0)
		},
	}, nil
}

// onProcess sets the clock of a random server's process (server) or of the
// next lock holder's (taken at its failpoint, and let go on once set has
// run), and returns the node and, for a holder, what the fault records of
// it.
func onProcess(ctx context.Context, env Env, r *rand.Rand, server bool, set func(node string) error) (string, *history.Aim, error) {
	if server {
		servers := env.Servers()
		node := servers[r.IntN(len(servers))]
		return node, nil, set(node)
	}
	h, err := env.NextHolder(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := set(h.Node); err != nil {
		h.Proceed()
		return "", nil, err
	}
	return h.Node, h.aim(), nil
}

func (ClockSkew) holderVerb() string { return "given its skewed clock" }

// tellRecord says which clock jumped and by how much, and the jump its log
// stamps showed: "n1's wall clock jumped +6s (observed +6.001s)".
func (f ClockSkew) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[ClockSkewRecord](v)
	if rec.Offset == 0 {
		return nil, err
	}
	clock := "wall clock"
	if f.Scope == ClockClient {
		clock = "lease clock"
	}
	s := fmt.Sprintf("%s's %s jumped %s", subject(v), clock, signedSpan(rec.Offset.D()))
	switch {
	case rec.ObservedOffset != nil:
		// To the millisecond: how far the observed jump is from the
		// set one is the point.
		o := rec.ObservedOffset.D().Round(time.Millisecond)
		s += " (observed " + plus(o, o.String()) + ")"
	case rec.Unobserved != "":
		s += " (unobserved: " + rec.Unobserved + ")"
	}
	return []string{s}, err
}
