// Package register is the register workload: clients read, write and
// compare-and-set integer registers on a few keys of the target's key-value
// store, so that a backend's key-value consistency can be checked under the
// same faults as its locks. The history (its vocabulary: vocabulary.go) is
// checked by a CAS-register model partitioned by key (Check, on
// checkers.CheckRegister); its result is Result.
package register

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
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Workload is the register workload.
type Workload struct{}

// Name is "register".
func (Workload) Name() string { return "register" }

// Validate checks that the target has a key-value store with the read mode,
// and that no resource is fenced (registers take no lock).
func (Workload) Validate(t targets.Target, rs []resources.Resource, cfg workloads.Config) error {
	rm, ok := t.(targets.ReadModer)
	if !ok {
		return fmt.Errorf("%w: target %s has no key-value store for the register workload", targets.ErrBadConfig, t.Name())
	}
	if cfg.Keys < 1 {
		return fmt.Errorf("%w: --keys must be at least 1", targets.ErrBadConfig)
	}
	if !slices.Contains(rm.ReadModes(), cfg.ReadMode) {
		return fmt.Errorf("%w: %s has no read mode %q (valid: %s)", targets.ErrBadConfig, t.Name(),
			cfg.ReadMode, strings.Join(rm.ReadModes(), ", "))
	}
	for name, f := range cfg.Fencings {
		if f != targets.FencingNone {
			return fmt.Errorf("%w: the register workload takes no lock: --fencing %s=%s does not apply (leave --fencing out)", targets.ErrBadConfig, name, f)
		}
	}
	if cfg.Recheck {
		return fmt.Errorf("%w: --recheck goes with the lock-append workload", targets.ErrBadConfig)
	}
	if cfg.AuditLog {
		return fmt.Errorf("%w: --audit-log goes with the lock-append workload", targets.ErrBadConfig)
	}
	if len(rs) > 1 || (len(rs) == 1 && len(rs[0].Nodes()) > 0) {
		return fmt.Errorf("%w: the register workload uses the target's own key-value store; --resource does not apply", targets.ErrBadConfig)
	}
	return nil
}

// valueRange is the range of written values: small, so that compare-and-set
// succeeds often enough to matter (as in Jepsen's register tests).
const valueRange = 5

// Next returns a random operation: a read, a write or a cas on a random key,
// in equal parts.
func (Workload) Next(r *rand.Rand, cfg workloads.Config, _ int64) (string, any) {
	key := fmt.Sprintf("k%d", r.IntN(max(cfg.Keys, 1)))
	n := func() *int64 { v := int64(r.IntN(valueRange)); return &v }
	switch r.IntN(3) {
	case 0:
		return FRead, Value{Key: key}
	case 1:
		return FWrite, Value{Key: key, Value: n()}
	default:
		return FCAS, Value{Key: key, Old: n(), New: n()}
	}
}

// Execute runs one operation on the target's key-value store.
func (Workload) Execute(ctx context.Context, c workloads.Clients, cfg workloads.Config, f string, value json.RawMessage, env workloads.Env) (history.Type, any) {
	var v Value
	if err := json.Unmarshal(value, &v); err != nil {
		return history.Fail, Value{Error: fmt.Sprintf("cannot run %s %s", f, value)}
	}
	kv, ok := c.Lock.(targets.KV)
	if !ok {
		v.Error = "the target's client has no key-value store"
		return history.Fail, v
	}
	return Execute(ctx, kv, cfg, f, v, env)
}

// Execute runs one operation against kv. It never retries. Reads that fail
// are fail (a read has no effect either way); a write or cas whose request
// failed is info (it may have been applied); a cas whose comparison failed is
// fail. The request leaves right after the failpoint (faults aimed at a
// client in the middle of its work land there).
func Execute(ctx context.Context, kv targets.KV, cfg workloads.Config, f string, v Value, env workloads.Env) (history.Type, Value) {
	if env.Report != nil {
		env.Report(PhaseSending, nil)
	}
	if env.Failpoint != nil {
		env.Failpoint(ctx, 0)
	}
	switch f {
	case FRead:
		got, found, err := kv.Get(ctx, v.Key, cfg.ReadMode)
		if err != nil {
			v.Error = err.Error()
			return history.Fail, v
		}
		if found {
			v.Value = &got
		} else {
			v.Absent = true
		}
		return history.Ok, v
	case FWrite:
		if v.Value == nil {
			v.Error = "write without a value"
			return history.Fail, v
		}
		if err := kv.Put(ctx, v.Key, *v.Value); err != nil {
			v.Error = err.Error()
			return history.Info, v
		}
		return history.Ok, v
	case FCAS:
		if v.Old == nil || v.New == nil {
			v.Error = "cas without old and new"
			return history.Fail, v
		}
		ok, err := kv.CAS(ctx, v.Key, *v.Old, *v.New)
		switch {
		case err != nil:
			v.Error = err.Error()
			return history.Info, v
		case !ok:
			return history.Fail, v
		}
		return history.Ok, v
	}
	v.Error = fmt.Sprintf("unknown function %q", f)
	return history.Fail, v
}

// Unknown is the invocation's value with the reason.
func (Workload) Unknown(invoke json.RawMessage, reason string) any {
	var v Value
	_ = json.Unmarshal(invoke, &v)
	v.Error = reason
	return v
}

// FinalReads are none: every read is checked as it happened.
func (Workload) FinalReads(workloads.Clients) []workloads.FinalRead { return nil }

// RunName is "register-READMODE" (workloads.Described).
func (Workload) RunName(cfg workloads.Config) string { return "register-" + cfg.ReadMode }

// Describe is "K keys, MODE reads" (workloads.Described).
func (Workload) Describe(cfg workloads.Config) string {
	return fmt.Sprintf("%d keys, %s reads", cfg.Keys, cfg.ReadMode)
}

// Check runs the register checkers.
func (Workload) Check(events []history.Event, opts checkers.Options) store.WorkloadResult {
	r := Check(events, opts)
	return &r
}

// Decode reads a register result.
func (Workload) Decode(raw []byte) (store.WorkloadResult, error) {
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Summary writes the operations and the linearizability verdict.
func (Workload) Summary(b io.Writer, res *store.Results, workers int) {
	r, ok := res.Result.(*Result)
	if !ok {
		return
	}
	st, lin := r.Checkers.Stats, r.Checkers.Linearizable
	fmt.Fprintf(b, "  operations       %d ok, %d fail, %d info\n", st.Ok, st.Fail, st.Info)
	fmt.Fprintf(b, "  linearizable     %s: %s\n", lin.Valid, lin.Message)
	if lin.Valid == checkers.Invalid {
		fmt.Fprintf(b, "  failing keys     %d (first: %s)\n", lin.FailingKeys, lin.FailingKey)
	}
	fmt.Fprintf(b, "  keys             %d checked of %d, %d operations checked (%d info), in %s\n",
		lin.KeysChecked, lin.Keys, lin.Checked, lin.Info, lin.Elapsed.Round(time.Millisecond))
}
