package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/harness"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	cfg, quiet, scenario, err := runConfig(args, stderr, stderr)
	if err != nil {
		return 0, err
	}
	if scenario != nil {
		return scenario(ctx, stdout)
	}
	ui := runs.NewProgress(stderr, quiet)
	cfg.Stage = ui.Stage
	cfg.Progress = ui.Update
	ui.Stage("%s %s, %s, nemesis %s, %d clients, %d nodes, TTL %s, %s, seed %d",
		cfg.Target.Name(), cfg.Workload.Name(), runs.How(cfg), cfg.Nemesis, cfg.Concurrency, cfg.Nodes, cfg.TTL, cfg.TimeLimit, cfg.Seed)
	var eng runs.Engine
	defer eng.Close()
	out, err := eng.Run(ctx, cfg)
	ui.Done()
	if err != nil {
		if errors.Is(err, harness.ErrInterrupted) {
			return exitUnknown, err
		}
		if out != nil && errors.Is(err, harness.ErrNotWritten) {
			return runs.NotWritten(stdout, cfg, out, err)
		}
		return 0, err
	}
	runs.PrintSummary(stdout, cfg, out)
	return out.Results.Valid().ExitCode(), nil
}

// runConfig parses run's flags into a validated configuration (errors wrap
// errUsage or targets.ErrBadConfig: exit 254) and --quiet; with --scenario
// it returns instead the scenario to play, and no configuration. Flag
// errors and usage go to flagOut, the configuration's log to stderr.
func runConfig(args []string, flagOut, stderr io.Writer) (harness.Config, bool, func(ctx context.Context, stdout io.Writer) (int, error), error) {
	fs := verbFlags("run", flagOut, "Exit 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 harness failure.")
	scen := fs.String("scenario", "", "instead of a generated run, play a named regression scenario: "+runs.ScenarioNames()+" (with --target, --version, --fencing, --ttl, --nodes, --results)")
	o := parts.AddFlags(fs, nil)
	file := fs.String("f", "", runs.FileHelp)
	if err := parseVerb(fs, args); err != nil {
		return harness.Config{}, false, nil, err
	}
	if fs.NArg() > 0 {
		return harness.Config{}, false, nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	ef, err := o.RunFile(fs, *file)
	if err != nil {
		return harness.Config{}, false, nil, err
	}
	if *scen != "" {
		if len(o.Spec.Endpoints) > 0 {
			return harness.Config{}, false, nil, fmt.Errorf("%w: --scenario plays its story on servers fencecheck starts and acts on; it takes no --endpoints", errUsage)
		}
		t, err := parts.TargetOf(o.Spec)
		if err != nil {
			return harness.Config{}, false, nil, err
		}
		return harness.Config{}, *o.Quiet, func(ctx context.Context, stdout io.Writer) (int, error) {
			return parts.PlayScenario(ctx, *scen, t, o.Spec.Fencing, o, stdout, stderr)
		}, nil
	}
	if o.Spec.Seed == 0 {
		o.Spec.Seed = rand.Uint64()%1_000_000 + 1
	}
	cfg, err := parts.Config(o.Spec, stderr)
	if err == nil && ef != nil && ef.Schedule != nil {
		err = runs.ReplayFile(&cfg, ef)
	}
	return cfg, *o.Quiet, nil, ef.Locate(err)
}
