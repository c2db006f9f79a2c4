package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/targets/etcd"
	"github.com/fencecheck/fencecheck/targets"
)

// scenario is a named regression scenario (run --scenario): one bug, the
// target and recipe it needs, and the script that plays it.
type scenario struct {
	name, target, recipe, about string
	play                        func(context.Context, harness.DemoConfig, targets.Fencing) (harness.Regression, error)
}

func (s scenario) Name() string { return s.name }

// scenarioTable lists the regression scenarios.
var scenarioTable = []scenario{
	{name: harness.Etcd11456Name, target: "etcd", recipe: etcd.RecipeLockRPC, play: harness.Etcd11456,
		about: "etcd#11456: the lock RPC grants the lock to a waiter whose lease expired while it waited (3.4.3: invalid unfenced; fixed servers: valid)"},
}

func scenarioNames() string { return names(scenarioTable) }

// runScenario plays the scenario named name on target t (run --scenario):
// exit 0 valid, 1 invalid, 2 unknown, as a run. It takes --fencing (one
// mode), --recipe (only the scenario's), --ttl, --nodes and --results; the
// other flags of run do not apply.
func runScenario(ctx context.Context, name string, t targets.Target, fencing string, o *runFlags, stdout, stderr io.Writer) (int, error) {
	sc, err := lookup(scenarioTable, "scenario", name)
	if err != nil {
		return 0, err
	}
	if t.Name() != sc.target {
		return 0, fmt.Errorf("%w: scenario %s runs on target %s, not %s", targets.ErrBadConfig, sc.name, sc.target, t.Name())
	}
	if r := *o.recipe; r != "" && r != sc.recipe {
		return 0, fmt.Errorf("%w: scenario %s runs with --recipe %s, not %s", targets.ErrBadConfig, sc.name, sc.recipe, r)
	}
	f, err := targets.ParseFencing(fencing)
	if err != nil {
		return 0, err
	}
	if strings.Contains(fencing, "=") || f == targets.FencingTerm {
		return 0, fmt.Errorf("%w: scenario %s takes one fencing mode of the lock-store (none, token, cas), not %q", targets.ErrBadConfig, sc.name, fencing)
	}
	nodes := *o.nodes
	if nodes == 0 {
		nodes = targets.DefaultNodes(t)
	}
	if _, err := t.Nodes(nodes); err != nil {
		return 0, err
	}
	ttl := *o.ttl
	if ttl == 0 {
		ttl = 2 * time.Second
	}
	workerBin, err := workerBinary(stderr)
	if err != nil {
		return 0, err
	}
	ui := newProgress(stderr, *o.quiet)
	cfg := harness.DemoConfig{
		Target: t, Resource: resourceTable[0], Nodes: nodes, TTL: ttl, Results: *o.results, WorkerBinary: workerBin,
		Recipe: sc.recipe, TargetImage: o.images["target"], Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Stage: ui.stage, Out: stdout,
	}
	reg, err := sc.play(ctx, cfg, f)
	if err != nil {
		return 0, err
	}
	granted := "refused the waiter whose lease had expired"
	if reg.Granted {
		granted = "GRANTED the lock to the waiter whose lease had expired"
	}
	fmt.Fprintf(stdout, "\n%s  %s %s, fencing %s: the server %s; final value %v\n  report           %s\n",
		strings.ToUpper(reg.Valid.String()), sc.name, t.(interface{ Version() string }).Version(), f, granted, reg.Final, reg.Run.Path("report.html"))
	return exitCode(reg.Valid), nil
}
