package runs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/fencecheck/fencecheck/internal/campaigns/scenarios"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/targets"
)

// scenario is a named regression scenario (run --scenario): one line of
// scenarios.Regressions.
type scenario struct{ scenarios.Scenario }

func (s scenario) Name() string { return s.Scenario.Name }

// scenarioTable lists the regression scenarios.
var scenarioTable = func() []scenario {
	var t []scenario
	for _, s := range scenarios.Regressions {
		t = append(t, scenario{s})
	}
	return t
}()

// ScenarioNames lists the regression scenarios run --scenario plays.
func ScenarioNames() string { return tables.Names(scenarioTable) }

// PlayScenario plays the scenario named name on target t (run --scenario):
// exit 0 valid, 1 invalid, 2 unknown, as a run. It takes --fencing (one
// mode), --recipe (only the scenario's), --ttl, --lock-delay and
// --ready-timeout (the target's profile's when not given), --nodes and
// --results; the other flags of run do not apply.
func (p Parts) PlayScenario(ctx context.Context, name string, t targets.Target, fencing string, o *Flags, stdout, stderr io.Writer) (int, error) {
	sc, err := tables.Lookup(scenarioTable, "scenario", name)
	if err != nil {
		return 0, err
	}
	if t.Name() != sc.Target {
		return 0, fmt.Errorf("%w: scenario %s runs on target %s, not %s", targets.ErrBadConfig, sc.Scenario.Name, sc.Target, t.Name())
	}
	if r := o.Spec.Recipe; r != "" && r != sc.Recipe {
		return 0, fmt.Errorf("%w: scenario %s runs with --recipe %s, not %s", targets.ErrBadConfig, sc.Scenario.Name, sc.Recipe, r)
	}
	f, err := targets.ParseFencing(fencing)
	if err != nil {
		return 0, err
	}
	if strings.Contains(fencing, "=") || f == targets.FencingTerm {
		return 0, fmt.Errorf("%w: scenario %s takes one fencing mode of the lock-store (none, token, cas), not %q", targets.ErrBadConfig, sc.Scenario.Name, fencing)
	}
	nodes := o.Spec.Nodes
	if nodes == 0 {
		nodes = targets.DefaultNodes(t)
	}
	if _, err := t.Nodes(nodes); err != nil {
		return 0, err
	}
	workerBin, err := p.WorkerBinary(stderr)
	if err != nil {
		return 0, err
	}
	var eng Engine
	defer eng.Close()
	e, err := eng.Get(ctx)
	if err != nil {
		return 0, err
	}
	ui := NewProgress(stderr, *o.Quiet)
	cfg := scenarios.Config{
		Engine: e,
		Target: t, Resource: tables.Resources[0], Nodes: nodes, TTL: o.Spec.TTL, LockDelay: o.Spec.LockDelay, ReadyTimeout: o.Spec.ReadyTimeout, Results: o.Spec.Results, WorkerBinary: workerBin,
		Recipe: sc.Recipe, TargetImage: o.Spec.Image["target"], Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Stage: ui.Stage, Out: stdout,
	}
	reg, err := sc.Play(ctx, cfg, f)
	if err != nil {
		return 0, err
	}
	granted := "refused the waiter whose lease had expired"
	if reg.Granted {
		granted = "GRANTED the lock to the waiter whose lease had expired"
	}
	fmt.Fprintf(stdout, "\n%s  %s %s, fencing %s: the server %s; final value %v\n  report           %s\n",
		strings.ToUpper(reg.Valid.String()), sc.Scenario.Name, t.(interface{ Version() string }).Version(), f, granted, reg.Final, reg.Run.Path("report.html"))
	return reg.Valid.ExitCode(), nil
}
