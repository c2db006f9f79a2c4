package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/clientproto"
	"github.com/fencecheck/fencecheck/internal/experiment"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/matrix"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/rerun"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/workloads"
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
	ui := newProgress(stderr, quiet)
	cfg.Stage = ui.stage
	cfg.Progress = ui.update
	ui.stage("%s %s, %s, nemesis %s, %d clients, %d nodes, TTL %s, %s, seed %d",
		cfg.Target.Name(), cfg.Workload.Name(), how(cfg), cfg.Nemesis, cfg.Concurrency, cfg.Nodes, cfg.TTL, cfg.TimeLimit, cfg.Seed)
	var eng engineConn
	defer eng.close()
	out, err := eng.run(ctx, cfg)
	ui.done()
	if err != nil {
		if errors.Is(err, harness.ErrInterrupted) {
			return exitUnknown, err
		}
		if out != nil && errors.Is(err, harness.ErrNotWritten) {
			return notWritten(stdout, cfg, out, err)
		}
		return 0, err
	}
	printSummary(stdout, cfg, out)
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
		t, err := targetOf(o.sp)
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
	cfg, err := configOf(o.sp, stderr)
	if err == nil && ef != nil && ef.Schedule != nil {
		err = replayFile(&cfg, ef)
	}
	return cfg, *o.quiet, nil, ef.Locate(err)
}

// replayFile makes the run replay the experiment file's schedule, as a
// rerun replays a stored run's: each step's fault must be one of the run's
// --nemesis (which its checks of what the run can have covered), else exit
// 254 naming the step's line.
func replayFile(cfg *harness.Config, ef *experiment.File) error {
	var names []string
	for _, f := range cfg.Faults {
		names = append(names, f.Name())
	}
	for i, st := range ef.Schedule {
		fs, err := nemesis.Parse(st.Fault)
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", errUsage, ef.Errorf(ef.StepLines[i], experiment.ScheduleKey, "step %d: %v", i+1, err))
		case len(fs) != 1 || !slices.Contains(names, fs[0].Name()):
			return fmt.Errorf("%w: %w", errUsage, ef.Errorf(ef.StepLines[i], experiment.ScheduleKey, "step %d: %s is not one of the run's nemesis (%s): the run checks and draws from those", i+1, st.Fault, cfg.Nemesis))
		}
	}
	cfg.Replay = &harness.Replay{Of: ef.Name, Steps: ef.Schedule}
	return nil
}

// how is a run's resources and fencing in words ("fencing token",
// "postgres fencing token, audit log", "8 keys, linearizable reads").
func how(cfg harness.Config) string {
	if d, ok := cfg.Workload.(workloads.Described); ok {
		return d.Describe(cfg.WorkloadConfig())
	}
	var parts []string
	if len(cfg.Resources) != 1 || cfg.Resources[0].Name() != cfg.LockStore.Name() {
		var rs []string
		for _, r := range cfg.Resources {
			rs = append(rs, r.Name())
		}
		parts = append(parts, "resource "+strings.Join(rs, ","))
	}
	parts = append(parts, "fencing "+resources.DescribeFencings(cfg.Resources, cfg.Fencings))
	if cfg.Audit != nil {
		parts = append(parts, "audit log")
	}
	if cfg.SideWriter {
		parts = append(parts, "side writer")
	}
	return strings.Join(parts, ", ")
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
	o.sp.Flags(fs, only, knobChoices())
	o.quiet = fs.Bool("quiet", false, "no progress line")
	return o
}

// knobChoices are the lists of names the knobs' helps refer to
// (spec.Knob.Choices), from the tables.
func knobChoices() map[string]string {
	return map[string]string{
		"targets": targetNames(), "versions": versionNames(), "recipes": recipeNames(),
		"workloads": workloadNames(), "resources": resourceNames(), "faults": nemesis.Names(),
		"image runners": imageRunnerNames(), "attachers": targetsThat[targets.Attacher](),
	}
}

// targetOf is sp's target at its version.
func targetOf(sp spec.Spec) (targets.Target, error) {
	t, err := lookupTarget(sp.Target)
	if err != nil {
		return nil, err
	}
	return targets.WithVersion(t, sp.Version)
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
	return configOn(t, matrix.CellSpec(o.sp, workload, readMode, resource, fencing, nem, seed, name), stderr)
}

// configOf is the configuration of sp: its names looked up in the tables,
// defaults filled in (harness.Config.Defaults) and validated.
func configOf(sp spec.Spec, stderr io.Writer) (harness.Config, error) {
	t, err := targetOf(sp)
	if err != nil {
		return harness.Config{}, err
	}
	return configOn(t, sp, stderr)
}

// configOn is configOf with sp's target given (a matrix cell's, a sweep's).
func configOn(t targets.Target, sp spec.Spec, stderr io.Writer) (harness.Config, error) {
	cfg, err := checkedConfig(t, sp, stderr)
	if err != nil {
		return cfg, err
	}
	// The client's build step runs once everything else is checked: a
	// configuration refused is refused at once, not after a compile.
	if cfg.ClientProgram != nil {
		if err := cfg.ClientProgram.BuildOnce(stderr); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// checkedConfig is configOn without the client program's build step:
// what matrix --list checks, building nothing.
func checkedConfig(t targets.Target, sp spec.Spec, stderr io.Writer) (harness.Config, error) {
	faults, err := nemesis.Parse(sp.Nemesis)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	w, err := lookupWorkload(sp.Workload)
	if err != nil {
		return harness.Config{}, err
	}
	if len(sp.Resource) == 0 {
		sp.Resource = []string{resourceTable[0].Name()}
	}
	rs, err := lookupResources(strings.Join(sp.Resource, ","))
	if err != nil {
		return harness.Config{}, err
	}
	var audit resources.AuditLogger
	if sp.AuditLog {
		if audit = auditLogger(); audit == nil {
			return harness.Config{}, fmt.Errorf("%w: no resource can keep an audit log", targets.ErrBadConfig)
		}
	}
	workerBin, err := workerBinary(stderr)
	if err != nil {
		return harness.Config{}, err
	}
	prog, err := clientProgram(sp, w)
	if err != nil {
		return harness.Config{}, err
	}
	if ref := sp.Image["target"]; ref != "" {
		if err := harness.CheckImage(t, ref); err != nil {
			return harness.Config{}, fmt.Errorf("%w (only %s can)", err, imageRunnerNames())
		}
	}
	cfg := harness.Config{
		Spec: sp, Target: t, Workload: w, Resources: rs, LockStore: resourceTable[0], Audit: audit,
		Faults: faults, WorkerBinary: workerBin, ClientProgram: prog,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	cfg.Defaults()
	return cfg, cfg.Validate()
}

// clientProgram is the --client-dir program (nil without the flag), its
// client.json read; configOn runs its build step once the configuration
// is checked.
func clientProgram(sp spec.Spec, w workloads.Workload) (*clientproto.ProgramDir, error) {
	if sp.ClientDir == "" {
		if sp.ClientCmd != "" || sp.ClientImage != "" {
			return nil, fmt.Errorf("%w: --client-cmd and --client-image go with --client-dir", errUsage)
		}
		return nil, nil
	}
	if w.Name() != workloadTable[0].Name() {
		return nil, fmt.Errorf("%w: a client program runs the %s workload, not %s", targets.ErrBadConfig, workloadTable[0].Name(), w.Name())
	}
	prog, err := clientproto.Load(sp.ClientDir, sp.ClientCmd, sp.ClientImage)
	if err != nil {
		return nil, err
	}
	return &prog, nil
}

// progress draws the one-line status on a terminal (rewritten in place), or
// a line every 5 seconds elsewhere (CI logs).
type progress struct {
	w        io.Writer
	tty      bool
	quiet    bool
	last     time.Time
	drawn    bool
	lastLine string
}

func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{w: w, quiet: quiet}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) clear() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) stage(format string, args ...any) {
	if p.quiet {
		return
	}
	p.clear()
	fmt.Fprintf(p.w, "fencecheck: %s\n", fmt.Sprintf(format, args...))
}

func (p *progress) update(s harness.Status) {
	if p.quiet {
		return
	}
	fault := "none"
	if s.Fault != "" {
		fault = s.Fault
	}
	line := fmt.Sprintf("%s %5.1fs/%s  ops ok %d fail %d info %d  fault: %s",
		s.Stage, s.Elapsed.Seconds(), s.Limit, s.Ok, s.Fail, s.Info, fault)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
		return
	}
	if time.Since(p.last) >= 5*time.Second && line != p.lastLine {
		fmt.Fprintln(p.w, line)
		p.last, p.lastLine = time.Now(), line
	}
}

func (p *progress) done() { p.clear() }

// notWritten prints the verdict of a run whose results could not be
// written (a full disk), and says so: exit 1 when it lost updates (found
// is found, and a nightly job must see it), else the harness failure.
func notWritten(stdout io.Writer, cfg harness.Config, out *harness.Outcome, err error) (int, error) {
	printSummary(stdout, cfg, out)
	fmt.Fprintf(stdout, "  NOT WRITTEN      results.json, report.html and junit.xml: %v\n", out.NotWritten)
	if out.Results.Valid() == checkers.Invalid {
		return exitInvalid, nil
	}
	return 0, err
}

func printSummary(w io.Writer, cfg harness.Config, out *harness.Outcome) {
	r := out.Results
	verdict := strings.ToUpper(r.Valid().String())
	fmt.Fprintf(w, "\n%s  %s %s, %s, nemesis %s (seed %d)\n", verdict, cfg.Target.Name(), cfg.Workload.Name(), how(cfg), cfg.Nemesis, cfg.Seed)
	if out.Interrupted {
		fmt.Fprintf(w, "  interrupted      the run was cut short (Ctrl-C)\n")
	}
	fmt.Fprint(w, harness.Summary(cfg.Workload, r, cfg.Concurrency))
	fmt.Fprintf(w, "  report           %s\n", out.Run.Path("report.html"))
	if r.Valid() == checkers.Invalid {
		dir, err := filepath.Abs(out.Run.Dir)
		if err != nil {
			dir = out.Run.Dir
		}
		fmt.Fprintf(w, "  reproduce        %s\n", rerun.Command(dir, out.Test))
		if c := rerun.RunCommand(out.Test); c != "" {
			fmt.Fprintf(w, "  run again        %s\n", c)
		}
	}
}
