package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/store"
	"github.com/fencecheck/fencecheck/targets"
	"github.com/fencecheck/fencecheck/workloads/lockappend"
	"github.com/fencecheck/fencecheck/workloads/register"
)

// WorkloadConfig is every workload's configuration; each workload reads its
// own part.
type WorkloadConfig struct {
	LockAppend lockappend.Config `json:"lock_append"`
	Register   register.Config   `json:"register"`
}

// WorkerEnv is what a worker gives an operation besides its client: where
// phases go, and its lease clock's offset (clock-skew:client).
type WorkerEnv struct {
	Report lockappend.Reporter
	Skew   func() time.Duration
}

// Workload is one row of the workload table: how the generator makes
// operations, how a worker runs them, and how the history is checked.
type Workload struct {
	Name string
	// Validate checks that the target can run the workload.
	Validate func(t targets.Target, cfg WorkloadConfig) error
	// Next returns the next invocation (f and value); n is a run-wide
	// counter, unique per call.
	Next func(r *rand.Rand, cfg WorkloadConfig, n int64) (string, any)
	// Execute runs one operation in a worker.
	Execute func(ctx context.Context, c targets.Client, cfg WorkloadConfig, f string, value json.RawMessage, env WorkerEnv) (history.Type, any)
	// Unknown is the value of the info completion the harness records when
	// an operation times out: the invocation's value and the reason.
	Unknown func(invoke json.RawMessage, reason string) any
	// FinalRead, when not nil, is how the harness reads the final state
	// after healing, recorded as FinalReadF with the value it returns.
	FinalRead  func(ctx context.Context, c targets.Client) (any, error)
	FinalReadF string
	// Check checks a history.
	Check func(run *store.Run, events []history.Event, timeout time.Duration) *store.Results
}

// workloadTable lists every workload --workload can name.
var workloadTable = []Workload{
	{
		Name:     "lock-append",
		Validate: func(targets.Target, WorkloadConfig) error { return nil },
		Next: func(_ *rand.Rand, _ WorkloadConfig, n int64) (string, any) {
			return lockappend.FAppend, lockappend.Invoke{Element: n}
		},
		Execute: func(ctx context.Context, c targets.Client, cfg WorkloadConfig, f string, value json.RawMessage, env WorkerEnv) (history.Type, any) {
			var inv lockappend.Invoke
			if f != lockappend.FAppend || json.Unmarshal(value, &inv) != nil {
				return history.Fail, lockappend.Completion{Reason: "bad-op", Error: fmt.Sprintf("cannot run %s %s", f, value)}
			}
			return lockappend.Execute(ctx, c, cfg.LockAppend, inv.Element, env.Report, env.Skew)
		},
		Unknown: func(invoke json.RawMessage, reason string) any {
			var inv lockappend.Invoke
			_ = json.Unmarshal(invoke, &inv)
			return lockappend.Completion{Element: inv.Element, Reason: reason}
		},
		FinalRead: func(ctx context.Context, c targets.Client) (any, error) {
			list, err := c.Read(ctx)
			return lockappend.ReadValue{Value: list}, err
		},
		FinalReadF: lockappend.FFinalRead,
		Check:      checkLockAppend,
	},
	{
		Name: "register",
		Validate: func(t targets.Target, cfg WorkloadConfig) error {
			rm, ok := t.(targets.ReadModer)
			if !ok {
				return fmt.Errorf("%w: target %s has no key-value store for the register workload", targets.ErrBadConfig, t.Name())
			}
			if cfg.Register.Keys < 1 {
				return fmt.Errorf("%w: --keys must be at least 1", targets.ErrBadConfig)
			}
			if !slices.Contains(rm.ReadModes(), cfg.Register.ReadMode) {
				return fmt.Errorf("%w: %s has no read mode %q (valid: %s)", targets.ErrBadConfig, t.Name(),
					cfg.Register.ReadMode, strings.Join(rm.ReadModes(), ", "))
			}
			return nil
		},
		Next: func(r *rand.Rand, cfg WorkloadConfig, _ int64) (string, any) {
			return register.Next(r, cfg.Register)
		},
		Execute: func(ctx context.Context, c targets.Client, cfg WorkloadConfig, f string, value json.RawMessage, env WorkerEnv) (history.Type, any) {
			var v register.Value
			if err := json.Unmarshal(value, &v); err != nil {
				return history.Fail, register.Value{Error: fmt.Sprintf("cannot run %s %s", f, value)}
			}
			kv, ok := c.(targets.KV)
			if !ok {
				v.Error = "the target's client has no key-value store"
				return history.Fail, v
			}
			return register.Execute(ctx, kv, cfg.Register, f, v, env.Report)
		},
		Unknown: func(invoke json.RawMessage, reason string) any {
			var v register.Value
			_ = json.Unmarshal(invoke, &v)
			v.Error = reason
			return v
		},
		Check: checkRegister,
	},
}

// WorkloadNames lists the valid --workload values.
func WorkloadNames() string {
	names := make([]string, len(workloadTable))
	for i, w := range workloadTable {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}

// lookupWorkload returns the workload named name.
func lookupWorkload(name string) (*Workload, error) {
	for i := range workloadTable {
		if workloadTable[i].Name == name {
			return &workloadTable[i], nil
		}
	}
	return nil, fmt.Errorf("%w: unknown workload %q (valid: %s)", targets.ErrBadConfig, name, WorkloadNames())
}
