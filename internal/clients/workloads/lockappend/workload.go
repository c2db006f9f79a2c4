// Package lockappend is the seed workload, lock-append: each client repeats
// a critical section that acquires a lock, reads a list from every resource
// of the run, checks its lease, works, and writes each list back with its
// own unique element appended, carrying its fencing token. A stale lock
// holder's write can replace a list that already holds another client's
// acknowledged element: a lost update.
//
// Its history vocabulary is history/lockappend; its checker is Check
// (check.go: the shared checkers of package checkers, run per lock and per
// resource, composed into Result), and its report page is package view
// (lockappend/view, paired with it in package views).
package lockappend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Workload is lock-append.
type Workload struct{}

// Name is "lock-append".
func (Workload) Name() string { return "lock-append" }

// Validate checks that every resource offers its fencing mode, and that
// several locks (--locks) go with what keeps them apart: no audit log (one
// log for every lock) and no resource whose token fencing keeps one
// highest token for all it stores (resources.OneFence: tokens of two locks
// are not ordered).
func (Workload) Validate(_ targets.Target, rs []resources.Resource, cfg workloads.Config) error {
	if len(rs) == 0 {
		return fmt.Errorf("%w: lock-append needs a resource", targets.ErrBadConfig)
	}
	if cfg.Locks > cfg.Concurrency && cfg.Concurrency > 0 {
		return fmt.Errorf("%w: --locks %d: more locks than --concurrency %d clients, some would have none", targets.ErrBadConfig, cfg.Locks, cfg.Concurrency)
	}
	if cfg.Locks > 1 && cfg.AuditLog {
		return fmt.Errorf("%w: --locks %d with --audit-log: the audit log is one for every lock; run one lock", targets.ErrBadConfig, cfg.Locks)
	}
	for _, r := range rs {
		if of, ok := r.(resources.OneFence); ok && of.OneFence() && cfg.Locks > 1 && cfg.Fencings[r.Name()] == targets.FencingToken {
			return fmt.Errorf("%w: --locks %d: resource %s keeps one highest token for every lock, and tokens of two locks are not ordered: fence it with none, or run one lock", targets.ErrBadConfig, cfg.Locks, r.Name())
		}
	}
	for _, r := range rs {
		f, ok := cfg.Fencings[r.Name()]
		if !ok {
			return fmt.Errorf("%w: no fencing mode for resource %s", targets.ErrBadConfig, r.Name())
		}
		if f == targets.FencingTerm {
			return fmt.Errorf("%w: --fencing term is the election workload's; lock-append fences with token (a lock's fencing token)", targets.ErrBadConfig)
		}
		if !resources.Offers(r, f) {
			return fmt.Errorf("%w: resource %s has no fencing %q (valid: %s)", targets.ErrBadConfig, r.Name(), f, resources.FencingNames(r))
		}
	}
	return nil
}

// Next is an append of element n on the client's lock.
func (Workload) Next(_ *rand.Rand, cfg workloads.Config, n int64) (string, any) {
	return la.FAppend, la.Invoke{Element: n, Lock: cfg.Lock}
}

// Execute runs one critical section (see Execute).
func (Workload) Execute(ctx context.Context, c workloads.Clients, cfg workloads.Config, f string, value json.RawMessage, env workloads.Env) (history.Type, any) {
	var inv la.Invoke
	if f != la.FAppend || json.Unmarshal(value, &inv) != nil {
		return history.Fail, la.Completion{Reason: "bad-op", Error: fmt.Sprintf("cannot run %s %s", f, value)}
	}
	if inv.Lock != cfg.Lock {
		return history.Fail, la.Completion{Element: inv.Element, Reason: "bad-op", Error: fmt.Sprintf("an append on lock %d sent to a client of lock %d", inv.Lock, cfg.Lock)}
	}
	return Execute(ctx, c, cfg, inv.Element, env)
}

// Unknown is the element and the reason.
func (Workload) Unknown(invoke json.RawMessage, reason string) any {
	var inv la.Invoke
	_ = json.Unmarshal(invoke, &inv)
	return la.Completion{Element: inv.Element, Reason: reason}
}

// FinalReads read each resource's list of c's lock and, with an audit log,
// the log.
func (Workload) FinalReads(c workloads.Clients) []workloads.FinalRead {
	var out []workloads.FinalRead
	multi := len(c.Resources) > 1
	for _, r := range c.Resources {
		out = append(out, workloads.FinalRead{F: la.FFinalRead, Read: func(ctx context.Context) (any, error) {
			st, err := r.Store.Read(ctx, resources.Access{Fencing: targets.FencingNone})
			v := la.ReadValue{Value: st.List, Lock: c.OfLock}
			if multi {
				v.Resource = r.Name
			}
			if v.Value == nil {
				v.Value = []int64{}
			}
			return v, err
		}})
	}
	if c.Audit != nil {
		out = append(out, workloads.FinalRead{F: la.FAuditRead, Read: func(ctx context.Context) (any, error) {
			es, err := c.Audit.Entries(ctx)
			v := la.AuditValue{Entries: make([]la.AuditEntry, len(es))}
			for i, e := range es {
				v.Entries[i] = la.AuditEntry{Process: history.Process(e.Process), Token: e.Token, Element: e.Element}
			}
			return v, err
		}})
	}
	return out
}

// Check runs the lock-append checkers.
func (Workload) Check(events []history.Event, opts checkers.Options) store.WorkloadResult {
	r := Check(events, opts)
	return &r
}

// Decode reads a lock-append result.
func (Workload) Decode(raw []byte) (store.WorkloadResult, error) {
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Summary writes the operations (the failed ones by reason), the lost
// updates, the fence rejections (the first three refused writes, one a
// line), each client named by its worker of workers (as the report names
// them), and the verdict of every checker that ran.
func (Workload) Summary(b io.Writer, res *store.Results, workers int) {
	r, ok := res.Result.(*Result)
	if !ok {
		return
	}
	st := r.Checkers.Stats
	fmt.Fprintf(b, "  operations       %d ok, %d fail, %d info\n", st.Ok, st.Fail, st.Info)
	if st.Fail > 0 {
		fmt.Fprintf(b, "  failed, by why   %s\n", checkers.FailReasonsText(st.FailReasons))
	}
	lu := r.LostUpdates
	pct := 0.0
	if lu.Acknowledged > 0 {
		pct = 100 * float64(lu.Lost) / float64(lu.Acknowledged)
	}
	fmt.Fprintf(b, "  lost updates     %d of %d acknowledged (%.1f%%)", lu.Lost, lu.Acknowledged, pct)
	if r.Checkers.LostUpdates.Valid == checkers.Unknown {
		fmt.Fprintf(b, " (unknown: %s)", r.Checkers.LostUpdates.Message)
	}
	fmt.Fprintln(b)
	for i, e := range lu.Elements {
		if i == 3 {
			fmt.Fprintf(b, "                   ... %d more in the report\n", len(lu.Elements)-3)
			break
		}
		fmt.Fprintf(b, "                   %s\n", e.Describe(workers))
	}
	if r.FirstLostUpdateNS != nil {
		fmt.Fprintf(b, "  first lost at    %.1fs\n", time.Duration(*r.FirstLostUpdateNS).Seconds())
	}
	fmt.Fprintf(b, "  fence rejections %d\n", r.FenceRejections)
	if rej := r.Checkers.Stats.Rejected; len(rej) > 0 {
		shown := rej[:min(len(rej), 3)]
		for _, x := range shown {
			fmt.Fprintf(b, "                   %s's write of element %d%s refused at %.2fs\n",
				x.Process.Worker(workers), x.Element, checkers.TokenPhrase(x.Token), time.Duration(x.At).Seconds())
		}
		if more := r.FenceRejections - len(shown); more > 0 {
			fmt.Fprintf(b, "                   ... %d more in the report\n", more)
		}
	}
	for _, name := range sortedNames(r.Locks) {
		x := r.Locks[name]
		fmt.Fprintf(b, "  %-16s %s: %d of %d acknowledged lost, %d fence rejections\n", name, x.Valid,
			x.LostUpdates.Lost, x.LostUpdates.Acknowledged, x.FenceRejections)
	}
	for _, name := range sortedNames(r.Resources) {
		x := r.Resources[name]
		fmt.Fprintf(b, "  resource %-8s %s: %d of %d acknowledged lost, %d fence rejections\n", name, x.Valid,
			x.LostUpdates.Lost, x.LostUpdates.Acknowledged, x.FenceRejections)
	}
	if p := r.PartialUpdates; p != nil {
		fmt.Fprintf(b, "  partial updates  %d (writes refused by one resource and acknowledged by another)\n", p.Count)
		for i, e := range p.Elements {
			if i == 3 {
				fmt.Fprintf(b, "                   ... %d more in the report\n", len(p.Elements)-3)
				break
			}
			fmt.Fprintf(b, "                   %s's element %d%s: refused by %s, acknowledged by %s\n",
				e.Process.Worker(workers), e.Element, checkers.TokenPhrase(e.Token), strings.Join(e.RefusedBy, ","), strings.Join(e.AcceptedBy, ","))
		}
	}
	if a := r.AuditLog; a != nil {
		fmt.Fprintf(b, "  audit log        %d entries, %d of them for writes that fencing refused\n", a.Entries, a.RefusedButLogged)
	}
	if st := r.Checkers.Stats; st.SideWrites > 0 {
		fmt.Fprintf(b, "  side writer      %d batches, without the lock or a token\n", st.SideWrites)
	}
	fmt.Fprintf(b, "  overlaps         %d (windows where two clients believed they held the lock)\n", r.Overlaps)
	c := r.Checkers
	fmt.Fprintf(b, "  checkers         linearizable %s, lost-updates %s, token-monotonic %s, overlap %s, stats %s\n",
		c.Linearizable.Valid, c.LostUpdates.Valid, c.TokenMonotonic.Valid, c.Overlap.Valid, c.Stats.Valid)
}

// sortedNames are the keys of m, sorted.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SideWork is how long the side writer's batch works between its read and
// its write: long enough for clients' acknowledged appends to land in
// between, which its write then erases.
const SideWork = time.Second

// SideWrite is one batch of the side writer: it reads the first resource
// with no lock, works SideWork, and writes the list back with element
// appended, unfenced. Fail: the read failed (nothing written); info: the
// write's outcome is unknown; ok: acknowledged.
func (Workload) SideWrite(ctx context.Context, c workloads.Clients, element int64) (history.Type, any) {
	done := la.Completion{Element: element}
	r := c.Resources[0]
	unfenced := resources.Access{Fencing: targets.FencingNone}
	st, err := r.Store.Read(ctx, unfenced)
	if err != nil {
		done.Reason, done.Error = la.ReasonReadFailed, err.Error()
		return history.Fail, done
	}
	done.Read = st.List
	if done.Read == nil {
		done.Read = []int64{}
	}
	select {
	case <-time.After(SideWork):
	case <-ctx.Done():
		done.Reason, done.Error = "cancelled", ctx.Err().Error()
		return history.Fail, done
	}
	written := append(append(make([]int64, 0, len(done.Read)+1), done.Read...), element)
	rev, err := r.Store.Write(ctx, unfenced, st, written)
	if err != nil {
		done.Reason, done.Error = "write-unknown", err.Error()
		return history.Info, done
	}
	done.Rev = rev
	return history.Ok, done
}

// Fencings are none, token and cas: every mode but the election
// workload's term (workloads.Fenced).
func (Workload) Fencings() []targets.Fencing {
	return []targets.Fencing{targets.FencingNone, targets.FencingToken, targets.FencingCAS}
}
