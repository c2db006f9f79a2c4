package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/clientproto"
	"github.com/fencecheck/fencecheck/internal/workloads"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/rerun"
	"github.com/fencecheck/fencecheck/internal/resources"
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
	out, err := harness.Run(ctx, cfg)
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
	fs := newFlags("run", flagOut)
	target := fs.String("target", "etcd", "lock service under test: "+targetNames())
	fencing := fs.String("fencing", "none", "how writes are fenced at the resource: none, token, cas (as the resource offers), or RESOURCE=MODE,... for each")
	nem := fs.String("nemesis", "pause-holder", "faults, comma-separated: "+nemesis.Names())
	resource := fs.String("resource", resourceTable[0].Name(), "what the lock protects, comma-separated in write order: "+resourceNames())
	seed := fs.Uint64("seed", 0, "random seed of the nemesis (0: pick one and record it)")
	name := fs.String("name", "", "run name (default TARGET-WORKLOAD-FENCING)")
	scen := fs.String("scenario", "", "instead of a generated run, play a named regression scenario: "+scenarioNames()+" (with --target, --version, --fencing, --ttl, --nodes, --results)")
	version := fs.String("version", "", "the target's server version ("+versionNames()+"; default the first)")
	o := addRunFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(flagOut, "Usage: fencecheck run [flags]\n\nRuns a test and checks it. Exit 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 harness failure.\n\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return harness.Config{}, false, nil, err
	}
	if fs.NArg() > 0 {
		return harness.Config{}, false, nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	t, err := lookupTarget(*target)
	if err != nil {
		return harness.Config{}, false, nil, err
	}
	if t, err = targets.WithVersion(t, *version); err != nil {
		return harness.Config{}, false, nil, err
	}
	if *scen != "" {
		return harness.Config{}, *o.quiet, func(ctx context.Context, stdout io.Writer) (int, error) {
			return runScenario(ctx, *scen, t, *fencing, o, stdout, stderr)
		}, nil
	}
	if *seed == 0 {
		*seed = rand.Uint64()%1_000_000 + 1
	}
	cfg, err := o.config(t, *resource, *fencing, *nem, *seed, *name, stderr)
	return cfg, *o.quiet, nil, err
}

// how is a run's resources and fencing in words ("fencing token",
// "postgres fencing token, audit log", "8 keys, linearizable reads").
func how(cfg harness.Config) string {
	if cfg.Workload.Name() == "register" {
		return fmt.Sprintf("%d keys, %s reads", cfg.Keys, cfg.ReadMode)
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

// runFlags are the flags of one run that run and matrix share: everything
// but what a matrix varies (target, fencing, nemesis, seed, name).
type runFlags struct {
	workload                                                           *string
	auditLog, sideWriter                                               *bool
	interval, limit, ttl, work, margin, acquire, rpc, op, check, ready *time.Duration
	lockDelay                                                          optDuration
	conc, nodes, keys                                                  *int
	results, readMode, recipe                                          *string
	quiet                                                              *bool
	clientDir, clientCmd, clientImage                                  *string
	images                                                             imageFlag
	checkMemory                                                        *byteSize
}

func addRunFlags(fs *flag.FlagSet) *runFlags {
	o := &runFlags{images: imageFlag{}}
	o.workload = fs.String("workload", workloadTable[0].Name(), "workload: "+workloadNames())
	o.auditLog = fs.Bool("audit-log", false, "every holder appends \"process P, token T, wrote element E\" to an audit log that checks no token, before its write")
	o.sideWriter = fs.Bool("side-writer", false, "a batch job writes the first resource every 3s without the lock and without a token")
	o.interval = fs.Duration("nemesis-interval", 0, "quiet time between two faults (default the target's profile: 3s; consul 2s)")
	o.limit = fs.Duration("time-limit", 0, "how long clients run operations (default the target's profile: 30s; consul 45s)")
	o.conc = fs.Int("concurrency", 5, "number of lock clients (one container each)")
	o.ttl = fs.Duration("ttl", 0, "lease TTL of the lock (default the target's profile: 2s; consul 10s, its minimum)")
	fs.Var(&o.lockDelay, "lock-delay", "Consul's lock-delay after a lease ends (default the target's profile: 0, the worst case; Consul's own default is 15s; other targets have none)")
	o.nodes = fs.Int("nodes", 0, "number of servers (default: the target's usual cluster: 3; redis 1, redis-sentinel 2, redlock 5)")
	o.results = fs.String("results", "./results", "results directory")
	o.work = fs.Duration("work", 250*time.Millisecond, "time between the lease check and the write")
	o.margin = fs.Duration("margin", 0, "lease time a client wants left before it writes (default TTL/4)")
	o.acquire = fs.Duration("acquire-timeout", 0, "how long a client waits for the lock (default 5 TTL)")
	o.rpc = fs.Duration("rpc-timeout", 0, "a client's limit on each request (default 4 leases: longer than any fault, so a cut-off client's request lands when the network heals)")
	o.op = fs.Duration("op-timeout", 0, "after this an operation is recorded as info (default: enough for acquire, work, the longest pause)")
	o.check = fs.Duration("check-timeout", 60*time.Second, "time limit of the linearizability check (past it: unknown)")
	o.checkMemory = checkMemoryFlag(fs)
	o.keys = fs.Int("keys", 8, "register workload: number of registers")
	o.recipe = fs.String("recipe", "", "the target's lock recipe (etcd: "+etcdRecipeNames()+"; default the first)")
	o.readMode = fs.String("read-mode", "", "register workload: the target's read mode (etcd: linearizable, serializable; default the target's first)")
	o.ready = fs.Duration("ready-timeout", 0, "how long the cluster may take to serve, past it exit 255 (default the target's profile: 30s; zookeeper 90s)")
	o.quiet = fs.Bool("quiet", false, "no progress line")
	o.clientDir = fs.String("client-dir", "", "your own lock client: a directory with client.json and the program, which each worker runs and drives over the client protocol (docs/client-protocol.md)")
	o.clientCmd = fs.String("client-cmd", "", "with --client-dir: the command that starts the program (run with /bin/sh -c in the directory's copy), instead of client.json's")
	o.clientImage = fs.String("client-image", "", "with --client-dir: an image of yours to run the program in (fencecheck adds its worker binary), instead of fencecheck's worker image")
	fs.Var(o.images, "image", "your own image, from the local Docker Engine, as KIND=IMAGE: target=IMAGE runs the servers from it ("+imageRunnerNames()+"; an image with no shell and no iptables will do: faults act from outside)")
	return o
}

// config is the run's configuration, with defaults filled in and validated
// (errors wrap targets.ErrBadConfig or errUsage: exit 254).
func (o *runFlags) config(t targets.Target, resource, fencing, nem string, seed uint64, name string, stderr io.Writer) (harness.Config, error) {
	return o.configFor(t, *o.workload, *o.readMode, resource, fencing, nem, seed, name, stderr)
}

// configFor is config with the workload and read mode given (a matrix
// cell's) instead of the flags'.
func (o *runFlags) configFor(t targets.Target, workload, readMode, resource, fencing, nem string, seed uint64, name string, stderr io.Writer) (harness.Config, error) {
	faults, err := nemesis.Parse(nem)
	if err != nil {
		return harness.Config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	w, err := lookupWorkload(workload)
	if err != nil {
		return harness.Config{}, err
	}
	rs, err := lookupResources(resource)
	if err != nil {
		return harness.Config{}, err
	}
	var audit resources.AuditLogger
	if *o.auditLog {
		if audit = auditLogger(); audit == nil {
			return harness.Config{}, fmt.Errorf("%w: no resource can keep an audit log", targets.ErrBadConfig)
		}
	}
	workerBin, err := workerBinary(stderr)
	if err != nil {
		return harness.Config{}, err
	}
	prog, err := o.clientProgram(w, stderr)
	if err != nil {
		return harness.Config{}, err
	}
	if ref := o.images["target"]; ref != "" {
		if err := harness.CheckImage(t, ref); err != nil {
			return harness.Config{}, fmt.Errorf("%w (only %s can)", err, imageRunnerNames())
		}
	}
	cfg := harness.Config{
		Target: t, Workload: w, Resources: rs, LockStore: resourceTable[0], Fencing: fencing, Audit: audit, SideWriter: *o.sideWriter,
		Nemesis: nem, Faults: faults,
		NemesisInterval: *o.interval, TimeLimit: *o.limit, Concurrency: *o.conc, Nodes: *o.nodes,
		TTL: *o.ttl, LockDelay: o.lockDelay.d, Work: *o.work, Margin: *o.margin, AcquireTimeout: *o.acquire, OpTimeout: *o.op, RPCTimeout: *o.rpc,
		CheckTimeout: *o.check, ReadyTimeout: *o.ready, Keys: *o.keys, ReadMode: readMode, Recipe: *o.recipe, Seed: seed, Results: *o.results, Name: name, WorkerBinary: workerBin, ClientProgram: prog,
		TargetImage: o.images["target"],
		Log:         slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	cfg.CheckMemory = (*uint64)(o.checkMemory)
	cfg.Defaults()
	return cfg, cfg.Validate()
}

// clientProgram is the --client-dir program (nil without the flag), its
// build command run.
func (o *runFlags) clientProgram(w workloads.Workload, stderr io.Writer) (*clientproto.Spec, error) {
	if *o.clientDir == "" {
		if *o.clientCmd != "" || *o.clientImage != "" {
			return nil, fmt.Errorf("%w: --client-cmd and --client-image go with --client-dir", errUsage)
		}
		return nil, nil
	}
	if w.Name() != workloadTable[0].Name() {
		return nil, fmt.Errorf("%w: a client program runs the %s workload, not %s", targets.ErrBadConfig, workloadTable[0].Name(), w.Name())
	}
	spec, err := clientproto.Load(*o.clientDir, *o.clientCmd, *o.clientImage)
	if err != nil {
		return nil, err
	}
	if spec.Manifest.Build != "" {
		fmt.Fprintf(stderr, "fencecheck: building the client: %s\n", spec.Manifest.Build)
		if err := spec.RunBuild(context.Background(), stderr); err != nil {
			return nil, err
		}
	}
	return &spec, nil
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
	fmt.Fprint(w, harness.Summary(cfg.Workload, r))
	fmt.Fprintf(w, "  report           %s\n", out.Run.Path("report.html"))
	if r.Valid() == checkers.Invalid {
		dir, err := filepath.Abs(out.Run.Dir)
		if err != nil {
			dir = out.Run.Dir
		}
		fmt.Fprintf(w, "  reproduce        %s\n", rerun.Command(dir))
		if c := rerun.RunCommand(out.Test); c != "" {
			fmt.Fprintf(w, "  run again        %s\n", c)
		}
	}
}

// optDuration is a duration flag that can be left unset (nil).
type optDuration struct{ d *time.Duration }

func (o *optDuration) String() string {
	if o.d == nil {
		return ""
	}
	return o.d.String()
}

func (o *optDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	o.d = &d
	return nil
}
