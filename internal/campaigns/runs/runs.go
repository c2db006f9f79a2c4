// Package runs is a run of this binary from its typed spec: the spec's
// names looked up in the binary's parts (the built-in tables and a Go API
// user's targets), its configuration checked and its client program
// built (Parts.Config), the Engine its runs share, its progress line, its
// printed verdict, and a stored run repeated (Parts.Rerun).
package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/experiment"
	"github.com/fencecheck/fencecheck/internal/verdicts/rerun"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Builtin are the built-in targets (tables.Targets).
var Builtin = tables.Targets

// Omitted names the built-in targets this binary was built without
// (tables.Omitted: the Kubernetes ones under -tags nokubernetes).
var Omitted = tables.Omitted

// DefaultReruns is how many times rerun repeats a run by default.
const DefaultReruns = rerun.Runs

// Parts are the lock services, resources and workloads a binary knows:
// Targets the built-in ones (tables.Targets) and a Go API user's; the
// resources and workloads are tables'. Extra says that Targets holds a
// user's recipes, which only this binary knows (its worker image then
// holds this binary).
type Parts struct {
	Targets []targets.Target
	Extra   bool
}

// ReplayFile makes the run replay the experiment file's schedule, as a
// rerun replays a stored run's: each step's fault must be one of the run's
// --nemesis (which its checks of what the run can have covered), else exit
// 254 naming the step's line.
func ReplayFile(cfg *harness.Config, ef *experiment.File) error {
	var names []string
	for _, f := range cfg.Faults {
		names = append(names, f.Name())
	}
	for i, st := range ef.Schedule {
		fs, err := nemesis.Parse(st.Fault)
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", cmdline.ErrUsage, ef.Errorf(ef.StepLines[i], experiment.ScheduleKey, "step %d: %v", i+1, err))
		case len(fs) != 1 || !slices.Contains(names, fs[0].Name()):
			return fmt.Errorf("%w: %w", cmdline.ErrUsage, ef.Errorf(ef.StepLines[i], experiment.ScheduleKey, "step %d: %s is not one of the run's nemesis (%s): the run checks and draws from those", i+1, st.Fault, cfg.Nemesis))
		}
	}
	cfg.Replay = &harness.Replay{Of: ef.Name, Steps: ef.Schedule}
	return nil
}

// How is a run's resources and fencing in words ("fencing token",
// "postgres fencing token, audit log", "8 keys, linearizable reads").
func How(cfg harness.Config) string {
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

// Choices are the lists of names the knobs' helps refer to
// (spec.Knob.Choices), from the tables.
func (p Parts) Choices() map[string]string {
	return map[string]string{
		"targets": p.TargetNames(), "versions": p.VersionNames(), "recipes": p.RecipeNames(),
		"workloads": WorkloadNames(), "resources": ResourceNames(), "faults": nemesis.Names(),
		"image runners": p.ImageRunnerNames(), "attachers": p.targetsThat(func(t targets.Target) bool { _, ok := t.(targets.Attacher); return ok }),
	}
}

// TargetOf is sp's target at its version.
func (p Parts) TargetOf(sp spec.Spec) (targets.Target, error) {
	t, err := p.LookupTarget(sp.Target)
	if err != nil {
		return nil, err
	}
	return targets.WithVersion(t, sp.Version)
}

// Config is the configuration of sp: its names looked up in the tables,
// defaults filled in (harness.Config.Defaults) and validated.
func (p Parts) Config(sp spec.Spec, stderr io.Writer) (harness.Config, error) {
	t, err := p.TargetOf(sp)
	if err != nil {
		return harness.Config{}, err
	}
	return p.ConfigOn(t, sp, stderr)
}

// ConfigOn is Config with sp's target given (a matrix cell's, a sweep's).
func (p Parts) ConfigOn(t targets.Target, sp spec.Spec, stderr io.Writer) (harness.Config, error) {
	cfg, err := p.Checked(t, sp, stderr)
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

// Checked is ConfigOn without the client program's build step:
// what matrix --list checks, building nothing.
func (p Parts) Checked(t targets.Target, sp spec.Spec, stderr io.Writer) (harness.Config, error) {
	faults, err := nemesis.Parse(sp.Nemesis)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	w, err := LookupWorkload(sp.Workload)
	if err != nil {
		return harness.Config{}, err
	}
	if len(sp.Resource) == 0 {
		sp.Resource = []string{tables.Resources[0].Name()}
	}
	rs, err := tables.LookupResources(strings.Join(sp.Resource, ","))
	if err != nil {
		return harness.Config{}, err
	}
	var audit resources.AuditLogger
	if sp.AuditLog {
		if audit = auditLogger(); audit == nil {
			return harness.Config{}, fmt.Errorf("%w: no resource can keep an audit log", targets.ErrBadConfig)
		}
	}
	workerBin, err := p.WorkerBinary(stderr)
	if err != nil {
		return harness.Config{}, err
	}
	prog, err := clientProgram(sp, w)
	if err != nil {
		return harness.Config{}, err
	}
	if ref := sp.Image["target"]; ref != "" {
		if err := harness.CheckImage(t, ref); err != nil {
			return harness.Config{}, fmt.Errorf("%w (only %s can)", err, p.ImageRunnerNames())
		}
	}
	cfg := harness.Config{
		Spec: sp, Target: t, Workload: w, Resources: rs, LockStore: tables.Resources[0], Audit: audit,
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
			return nil, fmt.Errorf("%w: --client-cmd and --client-image go with --client-dir", cmdline.ErrUsage)
		}
		return nil, nil
	}
	if w.Name() != tables.Workloads[0].Name() {
		return nil, fmt.Errorf("%w: a client program runs the %s workload, not %s", targets.ErrBadConfig, tables.Workloads[0].Name(), w.Name())
	}
	prog, err := clientproto.Load(sp.ClientDir, sp.ClientCmd, sp.ClientImage)
	if err != nil {
		return nil, err
	}
	return &prog, nil
}

// progress draws the one-line status on a terminal (rewritten in place), or
// a line every 5 seconds elsewhere (CI logs).
type Progress struct {
	w        io.Writer
	tty      bool
	quiet    bool
	last     time.Time
	drawn    bool
	lastLine string
}

func NewProgress(w io.Writer, quiet bool) *Progress {
	p := &Progress{w: w, quiet: quiet}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *Progress) clear() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *Progress) Stage(format string, args ...any) {
	if p.quiet {
		return
	}
	p.clear()
	fmt.Fprintf(p.w, "fencecheck: %s\n", fmt.Sprintf(format, args...))
}

func (p *Progress) Update(s harness.Status) {
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

func (p *Progress) Done() { p.clear() }

// NotWritten prints the verdict of a run whose results could not be
// written (a full disk), and says so: exit 1 when it lost updates (found
// is found, and a nightly job must see it), else the harness failure.
func NotWritten(stdout io.Writer, cfg harness.Config, out *harness.Outcome, err error) (int, error) {
	PrintSummary(stdout, cfg, out)
	fmt.Fprintf(stdout, "  NOT WRITTEN      results.json, report.html and junit.xml: %v\n", out.NotWritten)
	if out.Results.Valid() == checkers.Invalid {
		return cmdline.ExitInvalid, nil
	}
	return 0, err
}

func PrintSummary(w io.Writer, cfg harness.Config, out *harness.Outcome) {
	r := out.Results
	verdict := strings.ToUpper(r.Valid().String())
	fmt.Fprintf(w, "\n%s  %s %s, %s, nemesis %s (seed %d)\n", verdict, cfg.Target.Name(), cfg.Workload.Name(), How(cfg), cfg.Nemesis, cfg.Seed)
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

// RerunExit is rerun's exit code: 1 if a re-run was invalid (it
// reproduced: what it found stands, whatever else happened), else 255 if
// the harness failed on one, else 2 if one was unknown or the series was
// interrupted, else 0 (every re-run valid).
func RerunExit(invalid, unknown, failed int, interrupted bool) int {
	switch {
	case invalid > 0:
		return cmdline.ExitInvalid
	case failed > 0:
		return cmdline.ExitHarness
	case unknown > 0 || interrupted:
		return cmdline.ExitUnknown
	}
	return cmdline.ExitValid
}

// Rerun repeats the stored run in o.Dir o.Runs times with its
// configuration, seed and recorded fault schedule (RerunConfig), printing
// each re-run's verdict and directory on stdout, then how many were
// invalid, with progress on ui. It returns RerunExit's code; a bad stored
// run is an error that wraps cmdline.ErrUsage or targets.ErrBadConfig.
func (p Parts) Rerun(ctx context.Context, o RerunOptions, ui *Progress, stdout, stderr io.Writer) (int, error) {
	runs := &o.Runs
	cfg, err := p.RerunConfig(ctx, o.Dir, o.Results, o.Given, o.Client, stderr)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stderr, "fencecheck: rerun of %s: %d runs, seed %d, %d recorded faults replayed\n", cfg.Replay.Of, *runs, cfg.Seed, len(cfg.Replay.Steps))
	for i, s := range cfg.Replay.Steps {
		fmt.Fprintf(stderr, "fencecheck:   %d. %s\n", i+1, s)
	}

	cfg.Stage, cfg.Progress = ui.Stage, ui.Update
	var invalid, unknown, failed, done int
	var eng Engine
	defer eng.Close()
	for i := 0; i < *runs && ctx.Err() == nil; i++ {
		ui.Stage("[%d/%d] %s %s, %s, nemesis %s (replayed), seed %d", i+1, *runs, cfg.Target.Name(), cfg.Workload.Name(), How(cfg), cfg.Nemesis, cfg.Seed)
		out, err := eng.Run(ctx, cfg)
		ui.Done()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, targets.ErrBadConfig) {
				return 0, err
			}
			failed++
			fmt.Fprintf(stdout, "run %d  error    harness failed: %v\n", i+1, err)
			continue
		}
		done++
		r := out.Results
		switch r.Valid() {
		case checkers.Invalid:
			invalid++
		case checkers.Unknown:
			unknown++
		}
		lost := "-"
		if r.Result != nil {
			if sum := r.Result.Summary(); sum.Updates {
				lost = fmt.Sprintf("%d of %d", sum.Lost, sum.Acknowledged)
			}
		}
		fmt.Fprintf(stdout, "run %d  %-7s  lost %-9s  %s\n", i+1, r.Valid(), lost, out.Run.Dir)
	}
	fmt.Fprintf(stdout, "reproduced %d of %d (invalid)", invalid, *runs)
	if n := *runs - done - failed; n > 0 {
		fmt.Fprintf(stdout, "; %d not run (interrupted)", n)
	}
	fmt.Fprintln(stdout)
	return RerunExit(invalid, unknown, failed, ctx.Err() != nil), nil
}

// RerunOptions are a rerun's: the stored run, how many times, where the
// re-runs go, the servers and credentials given again (rerun.Attach) and
// the client program's directory given again.
type RerunOptions struct {
	Dir     string
	Runs    int
	Results string
	Given   spec.Spec
	Client  ClientOpts
}

// RerunConfig is the configuration of a rerun of the run in dir: the Spec
// its test.json records (checked by rerun.RunArgs: a run that can be
// repeated), with the servers and credentials of given, the rerun's own
// flags, in place of the stored ones (rerun.Attach), built as run builds
// its flags', stored under results as NAME-rerun, with its recorded
// schedule to replay. A dir that is not a run, or names a target,
// resource, workload or fault this binary lacks, or an attached run
// without its servers and credentials given again, is bad input (exit
// 254).
func (p Parts) RerunConfig(ctx context.Context, dir, results string, given spec.Spec, co ClientOpts, stderr io.Writer) (harness.Config, error) {
	run, err := store.Open(dir)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	if real, err := filepath.EvalSymlinks(run.Dir); err == nil {
		run.Dir = real // results/latest: the run it points at now
	}
	// test.json read as run -f reads it (experiment.File.Spec: rerun.Spec
	// and rerun.Attach), the rerun's flags for the command line's.
	f, err := experiment.Read(run.Path(store.TestFile), experiment.Stored)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	test := f.Test
	sp, err := f.Spec(given, func(string) bool { return false })
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	events, err := history.ReadFileContext(ctx, run.HistoryPath())
	if err != nil {
		_, err = cmdline.ReadFailed(ctx, run.HistoryPath(), err)
		return harness.Config{}, err
	}
	steps, err := nemesis.Recorded(events)
	if err != nil {
		return harness.Config{}, cmdline.InputError{Err: fmt.Errorf("%s: %w", run.HistoryPath(), err)}
	}
	for _, s := range steps {
		if _, err := nemesis.Parse(s.Fault); err != nil {
			return harness.Config{}, fmt.Errorf("%w: %s: the recorded fault %q: %w", cmdline.ErrUsage, run.HistoryPath(), s.Fault, err)
		}
	}
	name := test.Name
	if !strings.HasSuffix(name, "-rerun") {
		name += "-rerun"
	}
	sp.Results, sp.Name = results, name
	switch {
	case test.ClientPath != "" && co.Dir == "":
		return harness.Config{}, fmt.Errorf("%w: %s ran the client program in %s: give its directory again (--client-dir DIR): a rerun never runs a program, or its build step, from a directory test.json names", cmdline.ErrUsage, run.Dir, test.ClientPath)
	case test.ClientPath == "" && co.Dir != "":
		return harness.Config{}, fmt.Errorf("%w: --client-dir: %s ran no client program", cmdline.ErrUsage, run.Dir)
	}
	sp.ClientDir = co.Dir
	if sp.ClientCmd != "" || sp.ClientImage != "" {
		// Recorded with the run: they run only inside its containers,
		// and go with the directory given again.
		fmt.Fprintf(stderr, "fencecheck: the client program starts as the run's did:%s\n", ClientRecorded(sp))
	}
	cfg, err := p.Config(sp, stderr)
	if err != nil {
		from := "test.json"
		if len(given.AttachFlags()) > 0 {
			from = "test.json with " + strings.Join(given.AttachFlags(), ", ")
		}
		return harness.Config{}, fmt.Errorf("%s: %s: %w", run.Dir, from, err)
	}
	if err := checkClientFiles(&cfg, test.ClientFiles, co); err != nil {
		return harness.Config{}, err
	}
	cfg.Replay = &harness.Replay{Of: run.Dir, RunID: test.RunID, Steps: steps}
	return cfg, nil
}

// ClientRecorded is the client program's command and image test.json
// recorded (--client-cmd, --client-image), as flags quoted for a shell,
// filtered for the terminal (test.json is anybody's file).
func ClientRecorded(sp spec.Spec) string {
	var s string
	if sp.ClientCmd != "" {
		s += " --client-cmd " + rerun.Quote(sp.ClientCmd)
	}
	if sp.ClientImage != "" {
		s += " --client-image " + rerun.Quote(sp.ClientImage)
	}
	return safetext.Message(s)
}

// ClientOpts are rerun's client program flags: the directory given again,
// and whether files changed since the run may run.
type ClientOpts struct {
	Dir       string
	ChangedOK bool
}

// checkClientFiles compares the client directory's files (after its
// build step) with those the run recorded: a change is refused (exit
// 254, naming the first changed file) unless co.ChangedOK, which says so
// on stderr. The digest is kept for the rerun's test.json.
func checkClientFiles(cfg *harness.Config, was *store.ClientDigest, co ClientOpts) error {
	if cfg.ClientProgram == nil {
		return nil
	}
	now, err := cfg.ClientProgram.Digest()
	if err != nil {
		return err
	}
	cfg.ClientDigest = &now
	if was == nil || was.Hash == now.Hash {
		return nil
	}
	changed := clientproto.FirstChange(*was, now)
	if co.ChangedOK {
		cfg.Log.Warn("the client directory's files changed since the run (--client-changed-ok)", "dir", co.Dir, "first", changed)
		return nil
	}
	return fmt.Errorf("%w: --client-dir %s: its files changed since the run (first: %s); give --client-changed-ok to rerun it as it is now", cmdline.ErrUsage, co.Dir, changed)
}

// TargetNames lists the targets --target can name.
func (p Parts) TargetNames() string { return tables.Names(p.Targets) }

// ImageRunnerNames lists the targets that run from a user's image
// (--image target=REF).
func (p Parts) ImageRunnerNames() string {
	return p.targetsThat(func(t targets.Target) bool { _, ok := t.(targets.ImageRunner); return ok })
}

// AttacherNames lists the targets that run on existing servers
// (--endpoints).
func (p Parts) AttacherNames() string {
	return p.targetsThat(func(t targets.Target) bool { _, ok := t.(targets.Attacher); return ok })
}

// targetsThat lists the targets that have a capability (one of the
// targets' optional interfaces: targets.ImageRunner, targets.Attacher),
// in table order: a help that names them follows the table.
func (p Parts) targetsThat(has func(targets.Target) bool) string {
	var ns []string
	for _, t := range p.Targets {
		if has(t) {
			ns = append(ns, t.Name())
		}
	}
	return strings.Join(ns, ", ")
}

// VersionNames lists the versions of each target that has several
// ("etcd: 3.6.16, ...; consul: ..."), for the flags' help.
func (p Parts) VersionNames() string {
	var parts []string
	for _, t := range p.Targets {
		if vt, ok := t.(targets.Versioned); ok {
			parts = append(parts, t.Name()+": "+strings.Join(vt.Versions(), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// RecipeNames lists the recipes of each target that has several ("etcd:
// mutex, lock-rpc; ..."), for the flags' help.
func (p Parts) RecipeNames() string {
	var parts []string
	for _, t := range p.Targets {
		if rt, ok := t.(targets.Reciper); ok {
			parts = append(parts, t.Name()+": "+strings.Join(rt.Recipes(), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// ResourceNames lists the resources --resource can name.
func ResourceNames() string { return tables.Names(tables.Resources) }

// WorkloadNames lists the workloads --workload can name.
func WorkloadNames() string { return tables.Names(tables.Workloads) }

// LookupTarget is the target named name, or an error (wrapping
// targets.ErrBadConfig) that lists the valid names.
func (p Parts) LookupTarget(name string) (targets.Target, error) {
	return tables.LookupTarget(p.Targets, name)
}

// LookupResource is the resource named name (as LookupTarget).
func LookupResource(name string) (resources.Resource, error) {
	return tables.Lookup(tables.Resources, "resource", name)
}

// LookupWorkload is the workload named name (as LookupTarget).
func LookupWorkload(name string) (workloads.Workload, error) {
	return tables.Lookup(tables.Workloads, "workload", name)
}

// Catalog finds a run's parts by name (the worker's, when the worker
// image holds fencecheck itself).
func (p Parts) Catalog() worker.Catalog {
	return worker.Catalog{Target: p.LookupTarget, Workload: LookupWorkload, Resource: LookupResource}
}

// auditLogger is the resource that keeps --audit-log: the first of the
// table that can.
func auditLogger() resources.AuditLogger {
	for _, r := range tables.Resources {
		if a, ok := r.(resources.AuditLogger); ok {
			return a
		}
	}
	return nil
}

// fallbackNote is said once per process.
var fallbackNote sync.Once

// WorkerBinary is the binary the worker image is built from
// (harness.FindWorkerBinary): fencecheck-worker beside this binary, or this
// binary itself, which then says once on stderr why and how to get the
// smaller one. With a Go API user's recipes it is always this binary: only
// it knows them.
func (p Parts) WorkerBinary(stderr io.Writer) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: cannot find my own binary for the worker image: %w", harness.ErrHarness, err)
	}
	if p.Extra {
		return self, nil
	}
	bin, beside := harness.FindWorkerBinary(self)
	if !beside {
		fallbackNote.Do(func() {
			fmt.Fprintf(stderr, "fencecheck: no %s beside %s: the worker image holds fencecheck itself "+
				"(make build builds both; or go install github.com/fencecheck/fencecheck/cmd/%s)\n",
				harness.WorkerBinaryName, self, harness.WorkerBinaryName)
		})
	}
	return bin, nil
}

// Engine is the Docker Engine a command's runs share: the harness is
// handed it (harness.Config.Engine) and connects to none itself. It
// connects at the first get, which a command calls when a run is about to
// start, after its arguments are checked: a command that refuses its
// arguments, or has nothing to run, never calls Docker. It keeps the
// connection for the runs after, and the command closes it when it
// returns. A connection that failed is tried again at the next get, as
// each run connected on its own before the harness was handed its engine.
// Runs of one command come one after another: it is not safe for
// concurrent use.
type Engine struct{ eng runtime.Engine }

// get returns the command's engine, connecting first if it is not
// connected; an error wraps harness.ErrHarness (exit 255), as the
// harness's own connection did.
func (c *Engine) Get(ctx context.Context) (runtime.Engine, error) {
	if c.eng == nil {
		eng, err := docker.Connect(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		c.eng = eng
	}
	return c.eng, nil
}

// run is harness.Run of cfg on the command's engine (harness.RunOn): a
// failed connection is the run's harness failure, or its interruption
// when ctx ended (Ctrl-C).
func (c *Engine) Run(ctx context.Context, cfg harness.Config) (*harness.Outcome, error) {
	return harness.RunOn(ctx, c.Get, cfg)
}

// close closes the engine if it was connected.
func (c *Engine) Close() {
	if c.eng != nil {
		c.eng.Close()
		c.eng = nil
	}
}

// Matrix is the progress of a matrix's or a sweep's runs on p, its lines
// about a cell on log.
func (p *Progress) Matrix(log io.Writer) matrix.Progress {
	return matrix.Progress{Stage: p.Stage, Update: p.Update, Done: p.Done, Log: log}
}
