package election

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Workload is the election workload.
type Workload struct{}

// MaxEntries is the most entries a leadership appends; each appends 1 to
// MaxEntries, drawn by the worker's seeded source.
const MaxEntries = 3

// Name is "election".
func (Workload) Name() string { return "election" }

// Validate checks that the target has an election recipe, that the run
// has one resource (the log), and that its fencing is none or term.
func (Workload) Validate(t targets.Target, rs []resources.Resource, cfg workloads.Config) error {
	if err := (Workload{}).Supports(t); err != nil {
		return err
	}
	if cfg.Recheck {
		return fmt.Errorf("%w: --recheck goes with the lock-append workload", targets.ErrBadConfig)
	}
	if cfg.AuditLog {
		return fmt.Errorf("%w: --audit-log goes with the lock-append workload", targets.ErrBadConfig)
	}
	if len(rs) != 1 {
		return fmt.Errorf("%w: the election workload appends to one log: give one --resource", targets.ErrBadConfig)
	}
	f := cfg.Fencings[rs[0].Name()]
	if f != targets.FencingNone && f != targets.FencingTerm {
		return fmt.Errorf("%w: the election workload fences its log with --fencing term (or none), not %q", targets.ErrBadConfig, f)
	}
	if !resources.Offers(rs[0], f) {
		return fmt.Errorf("%w: resource %s cannot refuse an old term (it has no token fencing)", targets.ErrBadConfig, rs[0].Name())
	}
	return nil
}

// Next is a leadership that appends 1 to MaxEntries entries, with elements
// unique in the run (n*MaxEntries + i).
func (Workload) Next(r *rand.Rand, _ workloads.Config, n int64) (string, any) {
	k := 1 + r.IntN(MaxEntries)
	inv := Invoke{Elements: make([]int64, k)}
	for i := range inv.Elements {
		inv.Elements[i] = n*MaxEntries + int64(i)
	}
	return FLead, inv
}

// Execute runs one leadership (see Lead).
func (Workload) Execute(ctx context.Context, c workloads.Clients, cfg workloads.Config, f string, value json.RawMessage, env workloads.Env) (history.Type, any) {
	var inv Invoke
	if f != FLead || json.Unmarshal(value, &inv) != nil {
		return history.Fail, Completion{Reason: "bad-op", Error: fmt.Sprintf("cannot run %s %s", f, value)}
	}
	return Lead(ctx, c, cfg, inv.Elements, env)
}

// Unknown is the invocation's elements and the reason.
func (Workload) Unknown(invoke json.RawMessage, reason string) any {
	var inv Invoke
	_ = json.Unmarshal(invoke, &inv)
	return Completion{Elements: inv.Elements, Reason: reason}
}

// FinalReads read the log.
func (Workload) FinalReads(c workloads.Clients) []workloads.FinalRead {
	if len(c.Resources) == 0 {
		return nil
	}
	r := c.Resources[0]
	return []workloads.FinalRead{{F: la.FFinalRead, Read: func(ctx context.Context) (any, error) {
		st, err := r.Store.Read(ctx, resources.Access{Fencing: targets.FencingNone})
		v := la.ReadValue{Value: st.List}
		if v.Value == nil {
			v.Value = []int64{}
		}
		return v, err
	}}}
}

// Check runs the election checkers (see Check).
func (Workload) Check(events []history.Event, opts checkers.Options) store.WorkloadResult {
	return Check(events, opts)
}

// Decode reads an election result.
func (Workload) Decode(raw []byte) (store.WorkloadResult, error) {
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Outcome is what an election run's result counts: the forks of the log,
// the acknowledged entries lost and the entries of old terms the log
// refused.
type Outcome struct {
	Forks, Lost, Refused int
}

// OutcomeOf is the outcome of res; false when res holds no election result.
func OutcomeOf(res *store.Results) (Outcome, bool) {
	r, ok := res.Result.(*Result)
	if !ok || r == nil {
		return Outcome{}, false
	}
	return Outcome{Forks: r.Forks, Lost: r.LostUpdates.Lost, Refused: r.FenceRejections}, true
}

// Summary writes the leaderships, the lost entries, the forks, the refused
// entries and the checkers' verdicts.
func (Workload) Summary(b io.Writer, res *store.Results, workers int) {
	r, ok := res.Result.(*Result)
	if !ok {
		return
	}
	st := r.Checkers.Stats
	fmt.Fprintf(b, "  leaderships      %d\n", r.Leaderships)
	fmt.Fprintf(b, "  entries          %d ok, %d fail, %d info\n", st.Ok, st.Fail, st.Info)
	if st.Fail > 0 {
		fmt.Fprintf(b, "  failed, by why   %s\n", checkers.FailReasonsText(st.FailReasons))
	}
	lu := r.LostUpdates
	fmt.Fprintf(b, "  lost entries     %d of %d acknowledged", lu.Lost, lu.Acknowledged)
	if r.Checkers.LostUpdates.Valid == checkers.Unknown {
		fmt.Fprintf(b, " (unknown: %s)", r.Checkers.LostUpdates.Message)
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "  forked log       %d (a deposed leader's entry accepted after or beside a newer term's)\n", r.Forks)
	if f := r.Checkers.ForkedLog.Forks; len(f) > 0 {
		fmt.Fprintf(b, "                   first: %s's entry %d.%d %s %s's entry %d.%d\n",
			f[0].Stale.Leader.Worker(workers), f[0].Stale.Term, f[0].Stale.Seq, map[string]string{ForkAfter: "after", ForkBranch: "beside"}[f[0].Kind],
			f[0].Newer.Leader.Worker(workers), f[0].Newer.Term, f[0].Newer.Seq)
	}
	if r.FirstLostUpdateNS != nil {
		fmt.Fprintf(b, "  first lost at    %.1fs\n", time.Duration(*r.FirstLostUpdateNS).Seconds())
	}
	fmt.Fprintf(b, "  refused entries  %d (old terms the log refused)\n", r.FenceRejections)
	fmt.Fprintf(b, "  split brain      %d (leaderships that went on after another client was elected)\n", r.SplitBrain)
	c := r.Checkers
	fmt.Fprintf(b, "  checkers         linearizable %s, lost-updates %s, terms %s, forked-log %s, stats %s\n",
		c.Linearizable.Valid, c.LostUpdates.Valid, c.Terms.Valid, c.ForkedLog.Valid, c.Stats.Valid)
}

// Fencings are none and term (workloads.Fenced).
func (Workload) Fencings() []targets.Fencing {
	return []targets.Fencing{targets.FencingNone, targets.FencingTerm}
}

// Supports says whether t has an election recipe (workloads.Targeted).
func (Workload) Supports(t targets.Target) error {
	if _, ok := t.(targets.Electing); !ok {
		return fmt.Errorf("%w: target %s has no leader-election recipe for the election workload", targets.ErrBadConfig, t.Name())
	}
	return nil
}
