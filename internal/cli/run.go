package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/matrix"
	"github.com/fencecheck/fencecheck/internal/runs"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/targets"
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
	return exitCode(out.Results.Valid()), nil
}

// runConfig parses run's flags into a validated configuration (errors wrap
// errUsage or targets.ErrBadConfig: exit 254) and --quiet; with --scenario
// it returns instead the scenario to play, and no configuration. Flag
// errors and usage go to flagOut, the configuration's log to stderr.
func runConfig(args []string, flagOut, stderr io.Writer) (harness.Config, bool, func(ctx context.Context, stdout io.Writer) (int, error), error) {
	fs := verbFlags("run", flagOut, "Exit 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 harness failure.")
	scen := fs.String("scenario", "", "instead of a generated run, play a named regression scenario: "+scenarioNames()+" (with --target, --version, --fencing, --ttl, --nodes, --results)")
	o := addRunFlags(fs, nil)
	file := fs.String("f", "", fileHelp)
	if err := parseVerb(fs, args); err != nil {
		return harness.Config{}, false, nil, err
	}
	if fs.NArg() > 0 {
		return harness.Config{}, false, nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	ef, sp, err := runFile(fs, *file, o.sp)
	if err != nil {
		return harness.Config{}, false, nil, err
	}
	o.sp = sp
	if *scen != "" {
		if len(o.sp.Endpoints) > 0 {
			return harness.Config{}, false, nil, fmt.Errorf("%w: --scenario plays its story on servers fencecheck starts and acts on; it takes no --endpoints", errUsage)
		}
		t, err := parts.TargetOf(o.sp)
		if err != nil {
			return harness.Config{}, false, nil, err
		}
		return harness.Config{}, *o.quiet, func(ctx context.Context, stdout io.Writer) (int, error) {
			return runScenario(ctx, *scen, t, o.sp.Fencing, o, stdout, stderr)
		}, nil
	}
	if o.sp.Seed == 0 {
		o.sp.Seed = rand.Uint64()%1_000_000 + 1
	}
	cfg, err := parts.Config(o.sp, stderr)
	if err == nil && ef != nil && ef.Schedule != nil {
		err = runs.ReplayFile(&cfg, ef)
	}
	return cfg, *o.quiet, nil, ef.Locate(err)
}

// runFlags are the flags of one run: the knobs of spec.Knobs (all, or
// those a command takes), bound to a Spec, and --quiet.
type runFlags struct {
	sp    spec.Spec
	quiet *bool
}

// addRunFlags adds the knobs that only accepts (all when nil) to fs, with
// spec.Default's values, and --quiet.
func addRunFlags(fs *flag.FlagSet, only func(spec.Knob) bool) *runFlags {
	o := &runFlags{sp: spec.Default()}
	o.sp.Flags(fs, only, parts.Choices())
	o.quiet = fs.Bool("quiet", false, "no progress line")
	return o
}

// config is the run's configuration from the flags with the target, the
// resources, fencing, faults, seed and name given (a sweep's), defaults
// filled in and validated (errors wrap targets.ErrBadConfig or errUsage:
// exit 254).
func (o *runFlags) config(t targets.Target, resource, fencing, nem string, seed uint64, name string, stderr io.Writer) (harness.Config, error) {
	return o.configFor(t, o.sp.Workload, o.sp.ReadMode, resource, fencing, nem, seed, name, stderr)
}

// configFor is config with the workload and read mode given (a matrix
// cell's) instead of the flags'.
func (o *runFlags) configFor(t targets.Target, workload, readMode, resource, fencing, nem string, seed uint64, name string, stderr io.Writer) (harness.Config, error) {
	return parts.ConfigOn(t, matrix.CellSpec(o.sp, workload, readMode, resource, fencing, nem, seed, name), stderr)
}
