package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/internal/sweep"
	"github.com/fencecheck/fencecheck/targets"
)

// A sweep run pauses one holder: the first pause comes sweepInterval after
// the start, and the time limit ends sweepTail after the longest it can
// end, sooner than a second pause could begin (another sweepInterval after
// the first one's end).
const (
	sweepInterval = 2 * time.Second
	sweepTail     = 1500 * time.Millisecond
)

// sweepRun is one planned run of a sweep.
type sweepRun struct {
	point int // index in the summary's points
	seed  uint64
	cfg   harness.Config
	retry int // how many runs of this one were not measured before it
}

func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("sweep", stderr, sweepUsage)
	target := fs.String("target", "etcd", "lock service under test: "+targetNames())
	pause := fs.String("pause", "0.25..3", "holder pauses in TTLs: a range A..B (split by --steps) or a list 0.5,0.9,1,2")
	steps := fs.Int("steps", 12, "points of a --pause range, both ends included")
	runs := fs.Int("runs", 5, "runs per point, with seeds --seed, --seed+1, ...")
	var fencingList listFlag
	fs.Var(&fencingList, "fencing", "fencing modes, each its own line of the chart (default none,token)")
	resource := fs.String("resource", resourceTable[0].Name(), "what the lock protects, as run's --resource")
	seed := fs.Uint64("seed", 1, "seed of each point's first run (the same seeds at every point)")
	redraw := fs.String("redraw", "", "run nothing: redraw DIR/sweep.svg and print the table from DIR/sweep.json (after a change of the chart)")
	o := addRunFlags(fs, func(k spec.Knob) bool {
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
		return redrawSweep(*redraw, stdout)
	}
	for _, n := range []string{"time-limit", "nemesis-interval"} {
		if set[n] {
			return 0, fmt.Errorf("%w: --%s: the sweep sets it for each run (one pause a run)", errUsage, n)
		}
	}
	if o.sp.Workload != "lock-append" {
		return 0, fmt.Errorf("%w: the sweep runs the lock-append workload only, not %q", errUsage, o.sp.Workload)
	}
	if *runs < 1 || *runs > 100 {
		return 0, fmt.Errorf("%w: --runs %d: between 1 and 100", errUsage, *runs)
	}
	if *seed == 0 || *seed > math.MaxUint64-uint64(*runs) {
		return 0, fmt.Errorf("%w: --seed %d: between 1 and 2^64-1-runs", errUsage, *seed)
	}
	t, err := lookupTarget(*target)
	if err != nil {
		return 0, err
	}
	pauses, err := sweep.ParsePauses(*pause, *steps, nemesis.MaxTTLMultiple)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errUsage, err)
	}
	if len(fencingList) == 0 {
		fencingList = listFlag{"none", "token"}
	}
	if !set["results"] {
		o.sp.Results = filepath.Join(o.sp.Results, "sweep-"+t.Name())
	}
	results, err := filepath.Abs(o.sp.Results)
	if err != nil {
		return 0, fmt.Errorf("%w: --results: %w", errUsage, err)
	}
	o.sp.Results = results

	sum, plan, err := planSweep(o, t, *resource, fencingList, marginSpec.s, pauses, *runs, *seed, stderr)
	if err != nil {
		return 0, err
	}
	sum.Args = spec.Redact(fs, args)
	ui := newProgress(stderr, *o.quiet)
	ui.stage("sweep %s: %d pauses from %s to %s TTL (TTL %s), fencing %s, %d margin(s), %d run(s) a point: %d runs",
		t.Name(), len(pauses), sweep.Format(pauses[0]), sweep.Format(pauses[len(pauses)-1]),
		time.Duration(sum.TTLMS)*time.Millisecond, strings.Join(fencingList, ","), len(sum.Points)/len(pauses)/len(fencingList), *runs, len(plan))
	done, err := runSweep(ctx, plan, sum, results, ui, stderr)
	if err != nil {
		return 0, err
	}
	interrupted := ctx.Err() != nil
	if err := writeSweep(results, sum, interrupted); err != nil {
		return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	fmt.Fprintln(stdout)
	sum.WriteTable(stdout)
	fmt.Fprintf(stdout, "  %d runs, %.1f s a run\n  summary  %s\n  chart    %s\n", done, sum.SecondsPerRun,
		filepath.Join(results, sweep.File), filepath.Join(results, sweep.Chart))
	if interrupted {
		return sum.ExitCode, errInterrupted
	}
	return sum.ExitCode, nil
}

// sweepRetries is how many more runs, each with the next seed, a planned
// run gets when its pause was not measured (it missed the critical section
// or the time limit cut it short, as a loaded machine can make it): such a
// run is listed and not counted, and without another the point has no data.
const sweepRetries = 2

// runSweep runs the plan's runs one after another until ctx ends, adds
// each run's trial to its point of sum, and writes sweep.json and the
// chart after each; a run whose pause was not measured is run again with
// the next seed up to sweepRetries times. It returns how many runs gave a
// trial. Its error (a file not written) wraps harness.ErrHarness.
func runSweep(ctx context.Context, plan []sweepRun, sum *sweep.Summary, results string, ui *progress, stderr io.Writer) (int, error) {
	var spent time.Duration
	done := 0
	var eng engineConn
	defer eng.close()
	for i := 0; i < len(plan); i++ {
		r := plan[i]
		if ctx.Err() != nil {
			break
		}
		p := &sum.Points[r.point]
		r.cfg.Progress = ui.update
		begun := time.Now()
		out, err := eng.run(ctx, r.cfg)
		ui.done()
		took := time.Since(begun)
		var tr sweep.Trial
		switch {
		case err != nil && ctx.Err() != nil:
			fmt.Fprintf(stderr, "fencecheck: [%d/%d] interrupted: %v\n", i+1, len(plan), err)
		case err != nil:
			tr = sweep.Trial{Seed: r.seed, Verdict: "error", Error: err.Error()}
			fmt.Fprintf(stderr, "fencecheck: [%d/%d] harness failed: %v\n", i+1, len(plan), err)
		default:
			events, herr := history.ReadFile(out.Run.Path(store.HistoryFile))
			if herr != nil {
				fmt.Fprintf(stderr, "fencecheck: [%d/%d] %v\n", i+1, len(plan), herr)
			}
			rel, _ := filepath.Rel(results, out.Run.Dir)
			tr = sweep.NewTrial(r.seed, out.Results, events, rel)
			tr.ElapsedS = math.Round(took.Seconds()*10) / 10
		}
		if tr.Verdict != "" {
			p.Add(tr)
			spent += took
			done++
			last := p.Trials[len(p.Trials)-1]
			fmt.Fprintf(stderr, "fencecheck: [%d/%d] %s\n", i+1, len(plan), describeTrial(*p, last, sum.TTLMS, took))
			if last.MissedWhy != "" && last.Verdict != "error" && r.retry < sweepRetries && ctx.Err() == nil {
				again := r
				again.retry++
				again.seed++
				again.cfg.Seed = again.seed
				plan = slices.Insert(plan, i+1, again)
				fmt.Fprintf(stderr, "fencecheck: [%d/%d] not measured: run again with seed %d\n", i+1, len(plan), again.seed)
			}
		}
		sum.SecondsPerRun = 0
		if done > 0 {
			sum.SecondsPerRun = math.Round(spent.Seconds()/float64(done)*10) / 10
		}
		sum.Elapsed = time.Since(sum.Started).Round(time.Second).String()
		if err := writeSweep(results, sum, ctx.Err() != nil); err != nil {
			return done, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
	}
	return done, nil
}

// planSweep makes the sweep's points and the configuration of each run,
// every one validated before the first starts (a bad one: exit 254). Runs
// go round by round (seed by seed), so that a sweep cut short has measured
// every point as often as it could.
func planSweep(o *runFlags, t targets.Target, resource string, fencings []string, marginSpec string,
	pauses []float64, runs int, seed uint64, stderr io.Writer) (*sweep.Summary, []sweepRun, error) {
	base, err := o.config(t, resource, fencings[0], "pause-holder", seed, "sweep", stderr)
	if err != nil {
		return nil, nil, err
	}
	margins := []time.Duration{base.Margin}
	if marginSpec != "" {
		if margins, err = sweep.ParseMargins(marginSpec, base.TTL); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	lease := targets.MaxLease(t, targets.ClientConfig{TTL: base.TTL, LockDelay: base.LockDelay})
	sum := &sweep.Summary{
		Started: time.Now().UTC(), Target: t.Name(), TTLMS: base.TTL.Milliseconds(), LeaseMS: lease.Milliseconds(),
		WorkMS: base.Work.Milliseconds(), Concurrency: base.Concurrency, Nodes: base.Nodes, Runs: runs, Seed: seed,
	}
	if v, ok := t.(interface{ Version() string }); ok && base.Image["target"] == "" {
		sum.TargetVersion = v.Version() // a user's image reports its own, in each run's test.json
	}
	index := map[string]int{}
	for _, m := range margins {
		for _, f := range fencings {
			fm, err := targets.ParseFencing(f)
			if err != nil {
				return nil, nil, err
			}
			for _, x := range pauses {
				index[fmt.Sprint(m, f, x)] = len(sum.Points)
				sum.Points = append(sum.Points, sweep.Point{Pause: x, PauseMS: time.Duration(x * float64(base.TTL)).Milliseconds(),
					Fencing: f, Fenced: fm != targets.FencingNone, MarginMS: m.Milliseconds(), RunDirs: []string{}, Trials: []sweep.Trial{}})
			}
		}
	}
	var plan []sweepRun
	for r := range runs {
		for _, x := range pauses {
			for _, m := range margins {
				for _, f := range fencings {
					name := fmt.Sprintf("sweep-%s-x%s-%s", t.Name(), sweep.Format(x), f)
					if len(margins) > 1 {
						name += "-m" + sweep.Format(float64(m)/float64(base.TTL))
					}
					cfg, err := o.config(t, resource, f, "pause-holder:x"+sweep.Format(x), seed+uint64(r), store.SafeName(name), stderr)
					if err != nil {
						return nil, nil, fmt.Errorf("fencing %s: %w", f, err)
					}
					pauseFor := time.Duration(x * float64(cfg.TTL))
					cfg.Margin = m
					cfg.NemesisInterval = sweepInterval
					cfg.TimeLimit = sweepInterval + pauseFor + sweepTail
					if o.sp.OpTimeout == 0 {
						// Long enough for an acquire, the work, this pause and
						// two requests, however long the pause.
						cfg.OpTimeout = max(cfg.OpTimeout, cfg.AcquireTimeout+cfg.Work+pauseFor+2*cfg.RPCTimeout+2*time.Second)
					}
					if err := cfg.Validate(); err != nil {
						return nil, nil, err
					}
					plan = append(plan, sweepRun{point: index[fmt.Sprint(m, f, x)], seed: seed + uint64(r), cfg: cfg})
				}
			}
		}
	}
	return sum, plan, nil
}

// describeTrial is a run's progress line.
func describeTrial(p sweep.Point, t sweep.Trial, ttlMS int64, took time.Duration) string {
	head := fmt.Sprintf("pause %s TTL (%s), fencing %s, margin %s TTL, seed %d:", sweep.Format(p.Pause),
		time.Duration(p.PauseMS)*time.Millisecond, p.Fencing, sweep.Format(float64(p.MarginMS)/float64(ttlMS)), t.Seed)
	if t.Verdict == "error" {
		return head + " harness failed: " + t.Error
	}
	left := "?"
	if t.LeftMS != nil {
		left = (time.Duration(*t.LeftMS) * time.Millisecond).String()
	}
	stop := ""
	if t.StopTookMS != nil {
		stop = fmt.Sprintf(" after a SIGSTOP of %s", time.Duration(*t.StopTookMS)*time.Millisecond)
	}
	s := fmt.Sprintf("%s %s, lost %d/%d, window %s%s (%s left at the check), %s, %s", head, strings.ToUpper(t.Verdict), t.Lost, t.Acknowledged,
		time.Duration(t.HeldMS)*time.Millisecond, stop, left, took.Round(100*time.Millisecond), t.Run)
	if t.MissedWhy != "" {
		s += " (not counted: " + t.MissedWhy + ")"
	}
	return s
}

// writeSweep writes sweep.json and sweep.svg at the root of the results
// directory, after the thresholds and the exit code are brought up to date.
func writeSweep(root string, sum *sweep.Summary, interrupted bool) error {
	sum.FindThresholds()
	sum.ExitCode = sum.ExitCodeFor(interrupted)
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	svg, err := report.SweepChart(sum)
	if err != nil {
		return err
	}
	return errors.Join(os.WriteFile(filepath.Join(root, sweep.File), append(b, '\n'), 0o644),
		os.WriteFile(filepath.Join(root, sweep.Chart), svg, 0o644))
}

// redrawSweep reads a sweep's sweep.json, derives each trial's timing from
// its run's history and each point's figures from its trials again,
// rewrites sweep.json and sweep.svg, and prints the table.
func redrawSweep(dir string, stdout io.Writer) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, sweep.File))
	if err != nil {
		return 0, fmt.Errorf("%w: --redraw: %w", errUsage, err)
	}
	var sum sweep.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		return 0, fmt.Errorf("%w: --redraw: %s: %w", errUsage, sweep.File, err)
	}
	for i := range sum.Points {
		p := &sum.Points[i]
		for j := range p.Trials {
			t := &p.Trials[j]
			if t.Run == "" {
				continue
			}
			// The history is the record: the timing is derived again, by
			// this version of the sweep.
			events, err := history.ReadFile(filepath.Join(dir, t.Run, store.HistoryFile))
			if err != nil {
				return 0, fmt.Errorf("%w: --redraw: %w", errUsage, err)
			}
			t.Timing(events)
		}
		p.Recount()
	}
	if err := writeSweep(dir, &sum, false); err != nil {
		return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	sum.WriteTable(stdout)
	fmt.Fprintf(stdout, "  chart    %s\n", filepath.Join(dir, sweep.Chart))
	return sum.ExitCode, nil
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
