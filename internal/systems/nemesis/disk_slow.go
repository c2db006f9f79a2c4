package nemesis

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"math/rand/v2"
	"strings"
	"time"
)

// DiskSlow makes fsync slow on servers' disks (or the resource's: :resource)
// for 1-3 leases: a disk that stalls on flushes (a busy shared volume, a
// cloud disk at its IOPS limit) holds up every write a server makes durable
// before it answers. Each fsync on the nodes' lazy disks (Disks.SlowSync)
// takes Delay longer; Delay 0 picks 0.5-2 TTLs at random.
//
// The record holds the delay and, at recovery, the fsyncs the disks held
// (slowed_syncs): none means the nodes made nothing durable during the hold,
// and the fault had no effect.
type DiskSlow struct {
	Scope string
	Delay time.Duration
}

// Name is "disk-slow:SCOPE", with ":D" for a fixed delay.
func (f DiskSlow) Name() string {
	if f.Delay == 0 {
		return "disk-slow:" + f.Scope
	}
	return "disk-slow:" + f.Scope + ":" + f.Delay.String()
}

// MaxSyncDelay bounds disk-slow's delay.
const MaxSyncDelay = time.Minute

// parseDiskSlow is disk-slow's constructor: a server scope (one by
// default) and an optional delay (disk-slow:leader:500ms).
func parseDiskSlow(param string) (Fault, error) {
	scope, delay, hasDelay := strings.Cut(param, ":")
	if scope == "" {
		scope = ScopeOne
	}
	if err := checkServerScope(scope, "", "then :D, as in disk-slow:leader:500ms"); err != nil {
		return nil, err
	}
	if !hasDelay {
		return DiskSlow{Scope: scope}, nil
	}
	d, err := time.ParseDuration(delay)
	if err != nil || d <= 0 || d > MaxSyncDelay {
		return nil, fmt.Errorf("disk-slow:%s:%s: the delay is a duration in (0, %s], as in 500ms", scope, delay, MaxSyncDelay)
	}
	return DiskSlow{Scope: scope, Delay: d}, nil
}

// Applies checks the scope's precondition, and that the run can have lazy
// disks under the nodes' data directories.
func (f DiskSlow) Applies(s Shape) error {
	if err := scopeApplies(f.Scope, s); err != nil {
		return err
	}
	base, _ := splitTier(f.Scope)
	return needDisk(s, base == ScopeResource)
}

// NeedsDisk: the nodes' data is on lazy disks.
func (DiskSlow) NeedsDisk() bool { return true }

// DiskSlowRecord is what disk-slow records: the delay it adds to every
// fsync and, at recovery, how many fsyncs its disks held.
type DiskSlowRecord struct {
	Delay       history.Duration `json:"delay"`
	SlowedSyncs *int64           `json:"slowed_syncs,omitempty"`
}

// Inject slows the fsyncs of the scope's nodes.
func (f DiskSlow) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	nodes, err := pickServers(ctx, env, r, f.Scope)
	if err != nil {
		return nil, err
	}
	delay := f.Delay
	if delay == 0 {
		delay = between(r, env.TTL()/2, 2*env.TTL())
	}
	before := map[string]int64{}
	var slowed []string
	heal := func(ctx context.Context) error {
		var errs []error
		for _, n := range slowed {
			errs = append(errs, env.SlowSync(ctx, n, 0))
		}
		return errors.Join(errs...)
	}
	for _, n := range nodes {
		st, err := env.DiskStats(ctx, n)
		if err == nil {
			slowed = append(slowed, n)
			err = env.SlowSync(ctx, n, delay)
		}
		if err != nil {
			return inPart(slowed, &DiskSlowRecord{Delay: history.Ms(delay)}, heal, fmt.Errorf("disk-slow: %s: %w", n, err))
		}
		before[n] = st.Slowed
	}
	hold := between(r, env.Lease(), 3*env.Lease())
	rec := &DiskSlowRecord{Delay: history.Ms(delay)}
	return &Injection{
		Nodes: nodes, Hold: hold, Record: rec,
		Recover: func(ctx context.Context) error {
			// Lifted first; an fsync held now was counted when it
			// began to wait, and returns when its delay ends.
			err := heal(ctx)
			var n int64
			for _, node := range nodes {
				if st, serr := env.DiskStats(ctx, node); serr == nil {
					n += st.Slowed - before[node]
				} else {
					err = errors.Join(err, serr)
				}
			}
			rec.SlowedSyncs = &n
			return err
		},
	}, nil
}

// tellRecord says how much longer each fsync took, and how many it slowed.
func (DiskSlow) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[DiskSlowRecord](v)
	var out []string
	if rec.Delay != 0 {
		s := "every fsync took " + span(rec.Delay.D()) + " longer"
		if rec.SlowedSyncs != nil {
			s += fmt.Sprintf(" (%d %s slowed)", *rec.SlowedSyncs, plural(*rec.SlowedSyncs, "fsync"))
		}
		out = append(out, s)
	}
	return out, err
}
