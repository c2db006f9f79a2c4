package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/internal/verdicts/sweep"
	"github.com/fencecheck/fencecheck/targets"
)

// Sweep is a sweep of pauses: one lock holder paused a run for M TTLs, M
// over Pauses, each point Runs times (seeds Seed, Seed+1, ...) per fencing
// mode and safety margin, into Results. Its values are checked where the
// command line typed them; Configure makes (and validates) a run's
// configuration.
type Sweep struct {
	Target   targets.Target
	Fencings []string  // each its own series; at least one
	Pauses   []float64 // TTL multiples (sweep.ParsePauses)
	Margins  string    // sweep.ParseMargins's list; "" for the runs' own margin
	Runs     int
	Seed     uint64
	// Results is the sweep's directory, an absolute path: the runs go
	// under it, sweep.json and sweep.svg at its root.
	Results string
	// OpTimeoutGiven is whether the user set the operations' timeout:
	// unset, each run's is long enough for its pause.
	OpTimeoutGiven bool
	// Args are the command line's arguments (secrets redacted), kept in
	// sweep.json.
	Args []string
	// Configure is the configuration of one run: the flags' spec with this
	// fencing mode, faults, seed and name, checked; its errors wrap
	// targets.ErrBadConfig or cmdline.ErrUsage (bad input).
	Configure func(fencing, nemesis string, seed uint64, name string) (harness.Config, error)
	// Engine returns the engine each run goes on (harness.RunOn), as
	// Run's engine does for a matrix's cells: called just before each
	// run, its error is the run's harness failure. Required.
	Engine func(context.Context) (runtime.Engine, error)
}

// SweepPauses are the pauses of --pause spec (a range A..B split into
// steps points, or a list), in TTLs, each at most the nemesis's longest
// (nemesis.MaxTTLMultiple); a bad spec is an error that wraps
// cmdline.ErrUsage.
func SweepPauses(spec string, steps int) ([]float64, error) {
	pauses, err := sweep.ParsePauses(spec, steps, nemesis.MaxTTLMultiple)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	return pauses, nil
}

// RunSweep plans every run of s (each validated before the first starts:
// a bad one is an error that wraps cmdline.ErrUsage or
// targets.ErrBadConfig), runs them one after another until ctx ends,
// writes sweep.json and sweep.svg after each, and prints the table and
// the files' paths on stdout. It returns the sweep's exit code
// (sweep.Summary.ExitCodeFor); when ctx ended first, with
// harness.ErrInterrupted.
func RunSweep(ctx context.Context, s Sweep, ui Progress, stdout io.Writer) (int, error) {
	sum, plan, err := planSweep(s)
	if err != nil {
		return 0, err
	}
	sum.Args = s.Args
	pauses := s.Pauses
	ui.Stage("sweep %s: %d pauses from %s to %s TTL (TTL %s), fencing %s, %d margin(s), %d run(s) a point: %d runs",
		s.Target.Name(), len(pauses), sweep.Format(pauses[0]), sweep.Format(pauses[len(pauses)-1]),
		time.Duration(sum.TTLMS)*time.Millisecond, strings.Join(s.Fencings, ","), len(sum.Points)/len(pauses)/len(s.Fencings), s.Runs, len(plan))
	done, err := runSweep(ctx, plan, sum, s.Results, ui, s.Engine)
	if err != nil {
		return 0, err
	}
	interrupted := ctx.Err() != nil
	if err := writeSweep(s.Results, sum, interrupted); err != nil {
		return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	fmt.Fprintln(stdout)
	sum.WriteTable(stdout)
	fmt.Fprintf(stdout, "  %d runs, %.1f s a run\n  summary  %s\n  chart    %s\n", done, sum.SecondsPerRun,
		filepath.Join(s.Results, sweep.File), filepath.Join(s.Results, sweep.Chart))
	if interrupted {
		return sum.ExitCode, harness.ErrInterrupted
	}
	return sum.ExitCode, nil
}

// A sweep run pauses one holder: the first pause comes SweepInterval after
// the start, and the time limit ends SweepTail after the longest it can
// end, sooner than a second pause could begin (another SweepInterval after
// the first one's end).
const (
	SweepInterval = 2 * time.Second
	SweepTail     = 1500 * time.Millisecond
)

// SweepRun is one planned run of a sweep.
type SweepRun struct {
	point int // index in the summary's points
	seed  uint64
	cfg   harness.Config
	retry int // how many runs of this one were not measured before it
}

// SweepRetries is how many more runs, each with the next seed, a planned
// run gets when its pause was not measured (it missed the critical section
// or the time limit cut it short, as a loaded machine can make it): such a
// run is listed and not counted, and without another the point has no data.
const SweepRetries = 2

// runSweep runs the plan's runs one after another until ctx ends, adds
// each run's trial to its point of sum, and writes sweep.json and the
// chart after each; a run whose pause was not measured is run again with
// the next seed up to SweepRetries times. It returns how many runs gave a
// trial. Its error (a file not written) wraps harness.ErrHarness.
func runSweep(ctx context.Context, plan []SweepRun, sum *sweep.Summary, results string, ui Progress, engine func(context.Context) (runtime.Engine, error)) (int, error) {
	stderr := ui.Log
	var spent time.Duration
	done := 0
	for i := 0; i < len(plan); i++ {
		r := plan[i]
		if ctx.Err() != nil {
			break
		}
		p := &sum.Points[r.point]
		r.cfg.Progress = ui.Update
		begun := time.Now()
		out, err := harness.RunOn(ctx, engine, r.cfg)
		ui.Done()
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
			if last.MissedWhy != "" && last.Verdict != "error" && r.retry < SweepRetries && ctx.Err() == nil {
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
func planSweep(s Sweep) (*sweep.Summary, []SweepRun, error) {
	t, fencings, pauses, runs, seed := s.Target, s.Fencings, s.Pauses, s.Runs, s.Seed
	base, err := s.Configure(fencings[0], "pause-holder", seed, "sweep")
	if err != nil {
		return nil, nil, err
	}
	margins := []time.Duration{base.Margin}
	if s.Margins != "" {
		if margins, err = sweep.ParseMargins(s.Margins, base.TTL); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
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
	var plan []SweepRun
	for r := range runs {
		for _, x := range pauses {
			for _, m := range margins {
				for _, f := range fencings {
					name := fmt.Sprintf("sweep-%s-x%s-%s", t.Name(), sweep.Format(x), f)
					if len(margins) > 1 {
						name += "-m" + sweep.Format(float64(m)/float64(base.TTL))
					}
					cfg, err := s.Configure(f, "pause-holder:x"+sweep.Format(x), seed+uint64(r), store.SafeName(name))
					if err != nil {
						return nil, nil, fmt.Errorf("fencing %s: %w", f, err)
					}
					pauseFor := time.Duration(x * float64(cfg.TTL))
					cfg.Margin = m
					cfg.NemesisInterval = SweepInterval
					cfg.TimeLimit = SweepInterval + pauseFor + SweepTail
					if !s.OpTimeoutGiven {
						// Long enough for an acquire, the work, this pause and
						// two requests, however long the pause.
						cfg.OpTimeout = max(cfg.OpTimeout, cfg.AcquireTimeout+cfg.Work+pauseFor+2*cfg.RPCTimeout+2*time.Second)
					}
					if err := cfg.Validate(); err != nil {
						return nil, nil, err
					}
					plan = append(plan, SweepRun{point: index[fmt.Sprint(m, f, x)], seed: seed + uint64(r), cfg: cfg})
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

// RedrawSweep reads a sweep's sweep.json, derives each trial's timing from
// its run's history and each point's figures from its trials again,
// rewrites sweep.json and sweep.svg, and prints the table.
func RedrawSweep(dir string, stdout io.Writer) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, sweep.File))
	if err != nil {
		return 0, fmt.Errorf("%w: --redraw: %w", cmdline.ErrUsage, err)
	}
	var sum sweep.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		return 0, fmt.Errorf("%w: --redraw: %s: %w", cmdline.ErrUsage, sweep.File, err)
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
				return 0, fmt.Errorf("%w: --redraw: %w", cmdline.ErrUsage, err)
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
