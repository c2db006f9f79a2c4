package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/harness"
)

func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("sweep", stderr, sweepUsage)
	target := fs.String("target", "etcd", "lock service under test: "+targetNames())
	pause := fs.String("pause", "0.25..3", "holder pauses in TTLs: a range A..B (split by --steps) or a list 0.5,0.9,1,2")
	steps := fs.Int("steps", 12, "points of a --pause range, both ends included")
	nruns := fs.Int("runs", 5, "runs per point, with seeds --seed, --seed+1, ...")
	var fencingList listFlag
	fs.Var(&fencingList, "fencing", "fencing modes, each its own line of the chart (default none,token)")
	resource := fs.String("resource", runs.DefaultResource().Name(), "what the lock protects, as run's --resource")
	seed := fs.Uint64("seed", 1, "seed of each point's first run (the same seeds at every point)")
	redraw := fs.String("redraw", "", "run nothing: redraw DIR/sweep.svg and print the table from DIR/sweep.json (after a change of the chart)")
	o := parts.AddFlags(fs, func(k spec.Knob) bool {
		switch k.Flag {
		case "target", "fencing", "resource", "nemesis", "seed", "name":
			return false // the sweep's own
		}
		return true
	})
	// The sweep's --margin is a list (each margin its own series), in TTLs
	// or as durations; run's single duration flag gives way to it.
	var marginSpec stringFlag
	mf := fs.Lookup("margin")
	mf.Value, mf.DefValue = &marginSpec, ""
	mf.Usage = "client safety margins, comma-separated, each a TTL multiple (0.25) or a duration (500ms), each its own series (default TTL/4)"
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *redraw != "" {
		if len(set) > 1 {
			return 0, fmt.Errorf("%w: --redraw takes no other flag", errUsage)
		}
		return matrix.RedrawSweep(*redraw, stdout)
	}
	for _, n := range []string{"time-limit", "nemesis-interval"} {
		if set[n] {
			return 0, fmt.Errorf("%w: --%s: the sweep sets it for each run (one pause a run)", errUsage, n)
		}
	}
	if o.Spec.Workload != "lock-append" {
		return 0, fmt.Errorf("%w: the sweep runs the lock-append workload only, not %q", errUsage, o.Spec.Workload)
	}
	if *nruns < 1 || *nruns > 100 {
		return 0, fmt.Errorf("%w: --runs %d: between 1 and 100", errUsage, *nruns)
	}
	if *seed == 0 || *seed > math.MaxUint64-uint64(*nruns) {
		return 0, fmt.Errorf("%w: --seed %d: between 1 and 2^64-1-runs", errUsage, *seed)
	}
	t, err := lookupTarget(*target)
	if err != nil {
		return 0, err
	}
	pauses, err := matrix.SweepPauses(*pause, *steps)
	if err != nil {
		return 0, err
	}
	if len(fencingList) == 0 {
		fencingList = listFlag{"none", "token"}
	}
	if !set["results"] {
		o.Spec.Results = filepath.Join(o.Spec.Results, "sweep-"+t.Name())
	}
	results, err := filepath.Abs(o.Spec.Results)
	if err != nil {
		return 0, fmt.Errorf("%w: --results: %w", errUsage, err)
	}
	o.Spec.Results = results

	ui := runs.NewProgress(stderr, *o.Quiet)
	var eng runs.Engine
	defer eng.Close()
	return matrix.RunSweep(ctx, matrix.Sweep{
		Engine: eng.Get,
		Target: t, Fencings: fencingList, Pauses: pauses, Margins: marginSpec.s, Runs: *nruns, Seed: *seed,
		Results: results, OpTimeoutGiven: o.Spec.OpTimeout != 0, Args: spec.Redact(fs, args),
		Configure: func(fencing, nem string, seed uint64, name string) (harness.Config, error) {
			return o.Config(t, *resource, fencing, nem, seed, name, stderr)
		},
	}, ui.Matrix(stderr), stdout)
}

// stringFlag is a string flag whose value may be left unset ("").
type stringFlag struct{ s string }

func (f *stringFlag) String() string     { return f.s }
func (f *stringFlag) Set(s string) error { f.s = s; return nil }

// sweepUsage is sweep -h's details.
const sweepUsage = `Pauses one lock holder per run for M TTLs (pause-holder:xM), M over --pause,
each point --runs times per fencing mode (and margin), and draws the fraction
of runs that lost an update against M: sweep.svg and sweep.json in --results
(default ./results/sweep-TARGET), the table on stdout. Exit 0 when no fenced
run lost an update, 1 when one did, 2 when a fenced run could not be judged
or the sweep was interrupted, 254 bad arguments, 255 harness failure.
Each run lasts 2s + the pause + 1.5s (--time-limit and --nemesis-interval
are the sweep's to set).`
