package nemesis

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Cpu-throttle's own scope: the lock holder.
const ScopeHolder = "holder"

// CPUThrottle squeezes containers' CPU instead of stopping them: a
// garbage-collection storm or a throttled container is rarely a clean
// stop; the process runs slowly, and its keepalives go out late rather than
// not at all. The container's CPU quota (a CFS quota, through the Engine's
// update API) is set to a few percent of one core for the hold, then lifted.
//
// holder (the default): the next lock holder's container, taken at its
// failpoint (lease checked, about to work and write) like pause-holder, for
// 1.5-3 leases. A server scope (one, leader, minority, majority, all,
// resource; SCOPE@TIER in a tiered target): those servers' containers, for
// 1-3 leases.
//
// Percent 0 picks 1-5 % at random. The record holds the quota (cpus, in
// cores), and at recovery the CPU time the containers used during the hold
// (cpu_used) and that time over the hold (cpu_share, in cores), which shows
// the throttle took: an idle process uses little either way, a busy one is
// held to the quota.
type CPUThrottle struct {
	Scope   string
	Percent float64
}

// Name is "cpu-throttle:SCOPE", with ":N%" for a fixed quota.
func (f CPUThrottle) Name() string {
	if f.Percent == 0 {
		return "cpu-throttle:" + f.Scope
	}
	return "cpu-throttle:" + f.Scope + ":" + strconv.FormatFloat(f.Percent, 'f', -1, 64) + "%"
}

// Bounds of cpu-throttle's quota, in percent of one core: the kernel's
// least quota is 1 ms per 100 ms period.
const (
	MinThrottlePercent = 1
	MaxThrottlePercent = 90
)

// parseCPUThrottle is cpu-throttle's constructor: a scope (holder by
// default) and an optional quota (cpu-throttle:holder:2%).
func parseCPUThrottle(param string) (Fault, error) {
	scope, quota, hasQuota := strings.Cut(param, ":")
	if scope == "" {
		scope = ScopeHolder
	}
	if scope != ScopeHolder {
		if err := checkServerScope(scope, "holder, ", "then :N%, as in cpu-throttle:holder:2%"); err != nil {
			return nil, err
		}
	}
	if !hasQuota {
		return CPUThrottle{Scope: scope}, nil
	}
	num, ok := strings.CutSuffix(quota, "%")
	pct, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || math.IsNaN(pct) || pct < MinThrottlePercent || pct > MaxThrottlePercent {
		return nil, fmt.Errorf("cpu-throttle:%s:%s: the quota is N%% of one core, N in [%d, %d]", scope, quota, MinThrottlePercent, MaxThrottlePercent)
	}
	return CPUThrottle{Scope: scope, Percent: pct}, nil
}

// Applies checks a server scope's precondition (Precondition), as
// pause-server's; the holder can always be throttled.
func (f CPUThrottle) Applies(s Shape) error {
	if f.Scope == ScopeHolder {
		return nil
	}
	return scopeApplies(f.Scope, s)
}

// CPUThrottleRecord is what cpu-throttle records: the quota (cpus, in
// CPUs) and, at recovery, the CPU time its nodes used during the hold and
// that time's share of the quota's wall time per node, or why it could not
// be measured.
type CPUThrottleRecord struct {
	CPUs       float64           `json:"cpus"`
	CPUUsed    *history.Duration `json:"cpu_used,omitempty"`
	CPUShare   *float64          `json:"cpu_share,omitempty"`
	Unmeasured string            `json:"unmeasured,omitempty"`
}

// Inject throttles the holder's container or the scope's servers.
func (f CPUThrottle) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	pct := f.Percent
	if pct == 0 {
		pct = math.Round(1 + 4*r.Float64())
	}
	cpus := pct / 100
	rec := &CPUThrottleRecord{CPUs: cpus}
	var nodes []string
	var hold time.Duration
	var h *Holder
	if f.Scope == ScopeHolder {
		next, err := env.NextHolder(ctx)
		if err != nil {
			return nil, err
		}
		h, nodes = &next, []string{next.Node}
		hold = time.Duration((1.5 + 1.5*r.Float64()) * float64(env.Lease()))
	} else {
		var err error
		if nodes, err = pickServers(ctx, env, r, f.Scope); err != nil {
			return nil, err
		}
		hold = between(r, env.Lease(), 3*env.Lease())
	}
	before := map[string]time.Duration{}
	var limited []string
	for _, n := range nodes {
		used, err := env.CPUTime(ctx, n)
		if err == nil {
			err = env.LimitCPU(ctx, n, cpus)
		}
		if err != nil {
			// A call that failed may have limited it all the same.
			err = errors.Join(err, unlimit(env, append(limited, n)))
			if h != nil {
				h.Proceed()
			}
			return nil, fmt.Errorf("cpu-throttle: %s: %w", n, err)
		}
		before[n] = used
		limited = append(limited, n)
	}
	since := time.Now()
	var aim *history.Aim
	if h != nil {
		aim = h.aim()
	}
	return &Injection{
		Nodes: nodes, Hold: hold, Holder: aim, Record: rec,
		Recover: func(ctx context.Context) error {
			held := time.Since(since)
			var used time.Duration
			var errs []error
			for _, n := range nodes {
				after, err := env.CPUTime(ctx, n)
				errs = append(errs, err)
				used += after - before[n]
			}
			if err := errors.Join(errs...); err != nil {
				rec.Unmeasured = err.Error()
			} else {
				share := math.Round(float64(used)/float64(held)/float64(len(nodes))*1000) / 1000
				cpuUsed := history.Ms(used)
				rec.CPUUsed, rec.CPUShare = &cpuUsed, &share
			}
			return unlimit(env, nodes)
		},
	}, nil
}

// unlimit lifts the CPU cap of every node, with a context of its own.
func unlimit(env Env, nodes []string) error {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, env.LimitCPU(context.Background(), n, 0))
	}
	return errors.Join(errs...)
}

func (CPUThrottle) holderVerb() string { return "throttled" }

// tellRecord says the quota and the CPU the throttled processes used.
func (CPUThrottle) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[CPUThrottleRecord](v)
	var out []string
	if rec.CPUs > 0 {
		out = append(out, fmt.Sprintf("%s's CPU quota cut to %s of a core", subject(v), percent(rec.CPUs)))
	}
	switch {
	case rec.CPUUsed != nil:
		s := "it used " + span(rec.CPUUsed.D()) + " of CPU"
		if rec.CPUShare != nil {
			s += " (" + percent(*rec.CPUShare) + " of a core)"
		}
		out = append(out, s)
	case rec.Unmeasured != "":
		out = append(out, "CPU use unmeasured: "+rec.Unmeasured)
	}
	return out, err
}
