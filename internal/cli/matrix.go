package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/clientproto"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/internal/trends"
	"github.com/fencecheck/fencecheck/internal/workloads"
	"github.com/fencecheck/fencecheck/targets"
)

// MatrixFile is the matrix's summary, at the root of its results directory.
const MatrixFile = trends.MatrixFile

// matrixCell is one cell of matrix.json; matrixSummary is matrix.json
// (trends owns the file's type: the writer's and every reader's).
type (
	matrixCell    = trends.MatrixCell
	matrixSummary = trends.Matrix
)

// matrixRun is a cell to run: its matrix.json record and its run's
// configuration.
type matrixRun struct {
	matrixCell
	cfg harness.Config
}

func cmdMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("matrix", stderr)
	var targetList, fencingList, versionList listFlag
	fs.Var(&targetList, "target", "systems under test, comma-separated or repeated (default etcd); NAME=TARGET runs TARGET under the name NAME in matrix.json and across nights: "+targetNames())
	fs.Var(&versionList, "version", "server versions of each target that has versions, comma-separated or repeated (default its default; "+versionNames()+"); targets with one version run it once")
	fs.Var(&fencingList, "fencing", "fencing modes, comma-separated or repeated (default none,token,cas)")
	var nems, resourceList multiFlag
	fs.Var(&resourceList, "resource", "one cell's resources, comma-separated as run's --resource; repeat the flag for more cells (default lock-store): "+resourceNames())
	fs.Var(&nems, "nemesis", "one cell's faults, comma-separated as run's --nemesis (kill,partition is one cell with both); repeat the flag for more cells (default pause-holder)")
	runs := fs.Int("runs", 1, "runs per cell, with seeds --seed, --seed+1, ...")
	seed := fs.Uint64("seed", 1, "seed of each cell's first run (fixed, so that nightly runs are comparable; 0: pick one and record it)")
	strict := fs.Bool("strict", false, "every cell must be valid, unfenced ones too")
	shardFlag := fs.String("shard", "1/1", "run only shard I of N: cells I, I+N, I+2N, ... of the matrix (the same split on every machine); `fencecheck merge` joins the shards' results directories")
	list := fs.Bool("list", false, "print the cells (of --shard) and exit, running nothing")
	baselineDir := fs.String("baseline", "", "compare each cell with this matrix's results directory, or with the newest night of a root of nights: exit 1 if a cell regressed (a must-be-valid cell valid there and invalid now, an unfenced cell that lost updates there and none now)")
	o, knobLists := addMatrixRunFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fencecheck matrix [flags]

Runs every combination of --target, --resource, --nemesis and --fencing,
one run after another, into one results directory (its index.html lists them
all; matrix.json sums them up). Each cell takes its target's profile (TTL,
lock-delay, nemesis interval, time limit) unless a flag sets it. Fenced cells
must be valid: exit 1 if one is invalid, 2 if one is unknown, 255 if the
harness failed on a cell (the other cells still run), 0 otherwise. A cell
whose configuration turns out not to run (a client program whose grants
carry no token, in a token cell) is "refused": it changes nothing, unless
every cell was (254). Unfenced
cells are reported, not judged (--strict judges them too). With --baseline
DIR each cell is then compared with the same cell of DIR's matrix: a
regression exits 1 (see fencecheck trends). Every cell is checked before the
first starts: bad arguments, or a --baseline without a matrix, exit 254 at
once.

--workload lock-append,register adds register cells: for them the read mode
(--read-mode, comma-separated; default every read mode of the target) takes
the place of the fencing mode, and a cell must be valid when the target
promises linearizable reads in its mode (etcd linearizable, consul
consistent); the other modes are reported. --workload election adds
election cells: they take --fencing none and term (term is election's, token
and cas lock-append's); each workload's other modes are skipped, and said so.

Every other knob that a matrix can vary takes a comma-separated list too
(--ttl 1s,2s,4s, --concurrency 2,5, --side-writer=false,true): the cells are
multiplied by each list of more than one value, each cell named and recorded
(matrix.json's axes) by its values; a knob of one workload (--locks, --keys)
multiplies that workload's cells only. A single value sets every cell, as
run's flag does.

`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	var workloadList []string
	for _, w := range splitList(o.sp.Workload) {
		if _, err := lookupWorkload(w); err != nil {
			return 0, err
		}
		workloadList = append(workloadList, w)
	}
	if len(workloadList) == 0 {
		return 0, fmt.Errorf("%w: --workload: empty list", errUsage)
	}
	readModes := splitList(o.sp.ReadMode)
	if *runs < 1 || *runs > 100 {
		return 0, fmt.Errorf("%w: --runs %d: between 1 and 100", errUsage, *runs)
	}
	if len(nems) == 0 {
		nems = multiFlag{"pause-holder"}
	}
	if len(targetList) == 0 {
		targetList = listFlag{"etcd"}
	}
	if len(resourceList) == 0 {
		resourceList = multiFlag{resourceTable[0].Name()}
	}
	if len(fencingList) == 0 {
		fencingList = listFlag{"none", "token", "cas"}
	}
	if *seed == 0 {
		*seed = rand.Uint64()%1_000_000 + 1
	}
	if *seed > math.MaxUint64-uint64(*runs-1) {
		return 0, fmt.Errorf("%w: --seed %d with --runs %d: the seeds %d, %d, ... would wrap past 2^64-1", errUsage, *seed, *runs, *seed, *seed+1)
	}
	sh, err := parseShard(*shardFlag)
	if err != nil {
		return 0, err
	}
	var baseline *trends.Night
	if *baselineDir != "" {
		b, err := trends.Baseline(*baselineDir)
		if err != nil {
			return 0, fmt.Errorf("%w: --baseline: %w", errUsage, err)
		}
		baseline = &b
	}
	all, skipped, err := matrixCells(o, matrixAxes{
		targets: targetList, versions: versionList, workloads: workloadList, resources: resourceList, fencings: fencingList, readModes: readModes, nemeses: nems,
		knobs: knobAxes(knobLists),
	}, *seed, *runs, *strict, stderr)
	if err != nil {
		return 0, err
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "fencecheck: skipped: %s\n", s)
	}
	judged := false
	var cells []matrixRun
	for i, c := range all {
		judged = judged || c.MustBeValid
		c.Cell = i
		if sh.has(i) {
			cells = append(cells, c)
		}
	}
	if !judged {
		return 0, fmt.Errorf("%w: no cell would be judged (unfenced cells, and register cells in a read mode the target does not promise linearizable, are reported, not judged): add a fenced mode (--fencing none,token) or --strict", errUsage)
	}
	if *list {
		for _, c := range cells {
			judge := "reported"
			if c.MustBeValid {
				judge = "must be valid"
			}
			axes := "" // a last column when the cell has axes
			if c.Axes != nil {
				axes = "\t" + c.AxesText()
			}
			fmt.Fprintf(stdout, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s%s\n", c.Cell, targetWords(c.matrixCell), c.WorkloadName(), c.Resource, c.Nemesis, c.Mode(), c.Seed, judge, axes)
		}
		return exitValid, nil
	}
	results, err := filepath.Abs(o.sp.Results)
	if err != nil {
		return 0, fmt.Errorf("%w: --results: %w", errUsage, err)
	}

	sum := matrixSummary{Started: time.Now().UTC(), Args: spec.Redact(args), Strict: *strict, Cells: records(cells), TotalCells: len(all)}
	if sh.N > 1 {
		sum.Shard = sh.String()
		fmt.Fprintf(stderr, "fencecheck: shard %s: %d of the matrix's %d cells\n", sh, len(cells), len(all))
		if len(cells) == 0 {
			if err := writeMatrix(results, sum); err != nil {
				return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
			}
			fmt.Fprintf(stdout, "shard %s has no cell (the matrix has %d)\n", sh, len(all))
			return exitValid, nil
		}
	}
	ui := newProgress(stderr, *o.quiet)
	for i := range cells {
		c := &cells[i]
		if ctx.Err() != nil {
			c.Verdict = "not run"
		} else {
			ui.stage("[%d/%d] %s %s, resource %s, nemesis %s, %s%s, seed %d", i+1, len(cells), targetWords(c.matrixCell), c.WorkloadName(), c.Resource, c.Nemesis, modeWords(c.matrixCell), axisWords(c.matrixCell), c.Seed)
			c.cfg.Stage = ui.stage
			c.cfg.Progress = ui.update
			out, err := harness.Run(ctx, c.cfg)
			ui.done()
			switch {
			case err != nil && ctx.Err() != nil:
				c.Verdict, c.Error = "not run", "interrupted during set-up: "+err.Error()
			case errors.Is(err, targets.ErrBadConfig):
				// Found once the run began (a client program that says
				// its grants carry no token): the cell cannot run, and
				// the harness did not fail.
				c.Verdict, c.Error = trends.Refused, err.Error()
				fmt.Fprintf(stderr, "fencecheck: [%d/%d] refused: %v\n", i+1, len(cells), err)
			case err != nil:
				c.Verdict, c.Error = "error", err.Error()
				fmt.Fprintf(stderr, "fencecheck: [%d/%d] harness failed: %v\n", i+1, len(cells), err)
			default:
				c.fill(out)
				c.Run, _ = filepath.Rel(results, c.RunDir)
				fmt.Fprintf(stderr, "fencecheck: [%d/%d] %s: %d of %d lost, %d fence rejections, %s\n",
					i+1, len(cells), strings.ToUpper(c.Verdict), c.Lost, c.Acknowledged, c.FenceRejections, c.RunDir)
			}
		}
		// After every cell, so that a matrix killed half-way leaves what it
		// found; the last write is the whole matrix.
		sum.Cells = records(cells)
		sum.ExitCode = matrixExit(sum.Cells, ctx.Err() != nil)
		if err := writeMatrix(results, sum); err != nil {
			return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		if err := writeMatrixJUnit(results, sum.Cells); err != nil {
			return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
	}
	printMatrix(stdout, sum.Cells, sum.ExitCode)
	if baseline != nil {
		code, err := compareBaseline(stdout, results, *baselineDir, *baseline, &sum)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		sum.ExitCode = code
	}
	fmt.Fprintf(stdout, "  summary  %s\n  junit    %s\n  index    %s\n", filepath.Join(results, MatrixFile), filepath.Join(results, MatrixJUnitFile), filepath.Join(results, "index.html"))
	return sum.ExitCode, nil
}

// matrixKnob says which knobs matrix takes as run does: all but those it
// takes as lists of its own (matrixOwn) and the other knobs it varies
// (isListAxis).
func matrixKnob(k spec.Knob) bool { return !matrixOwn(k) && !isListAxis(k) }

// matrixOwn says which knobs matrix has flags of its own for: the axes
// target, version, fencing, resource and nemesis, its own seed and the
// cells' names.
func matrixOwn(k spec.Knob) bool {
	switch k.Flag {
	case "target", "version", "fencing", "resource", "nemesis", "seed", "name":
		return true
	}
	return false
}

// matrixAxes are the values of each axis of a matrix.
type matrixAxes struct {
	targets, workloads, resources, fencings, nemeses []string
	// versions are the versions of each versioned target (none: its
	// default); a target with one version runs it once.
	versions []string
	// readModes are the register cells' read modes (none: every read mode
	// of each target).
	readModes []string
	// knobs are the lists of the other knobs (--ttl 1s,2s): a knob of one
	// value sets every cell as run's flag would; one of more multiplies
	// the cells of the workloads it applies to, each cell recording its
	// values (MatrixCell.Axes).
	knobs []knobAxis
}

// matrixCells builds and validates every cell: any bad one fails them all,
// before anything starts. A fencing mode that a cell's resource does not
// offer (the proxy's cas) skips that cell, and says so; so does a read mode
// a target lacks, or a target with no key-value store, for register cells,
// and a fault that cannot apply to a target and resource (a partition of one
// Redis server: nemesis.ErrCannotApply), unless no cell of that --nemesis
// can run at all (then it is a bad argument).
func matrixCells(o *runFlags, ax matrixAxes, seed uint64, runs int, strict bool, stderr io.Writer) (cells []matrixRun, skipped []string, err error) {
	if ref := o.sp.Image["target"]; ref != "" && (len(ax.targets) > 1 || len(ax.versions) > 1) {
		// One image is one build of one server: a target or version axis
		// would run it under names it is not.
		return nil, nil, fmt.Errorf("%w: --image target=%s runs one server build: give one --target and at most one --version", targets.ErrBadConfig, ref)
	}
	// A knob of one value sets every cell (as run's flag), unrecorded:
	// the cells are those of a matrix without the flag's list.
	base := *o
	var vary []knobAxis
	for _, a := range ax.knobs {
		switch len(a.values) {
		case 0:
		case 1:
			if err := a.knob.Value(&base.sp).Set(a.values[0]); err != nil {
				return nil, nil, fmt.Errorf("%w: --%s %q: %w", errUsage, a.knob.Flag, a.values[0], err)
			}
		default:
			vary = append(vary, a)
		}
	}
	o = &base
	var errs []error
	seen := map[string]bool{}    // one line per distinct problem
	ran := map[string]bool{}     // a --nemesis value with a cell
	cannot := map[string]error{} // why a --nemesis value's faults could not apply
	names := map[string]string{} // a cell's target name (its label, or the target's) -> the spec that gave it
	type targetVersion struct {
		t              targets.Target
		label, version string
	}
	// Every (target, version): a version applies to the targets that have
	// it (the others skip it, and say so); one that no target has is an
	// error.
	var tvs []targetVersion
	had := map[string]bool{}     // versions some target has
	lacked := map[string]error{} // the first target's error for the others
	for _, spec := range ax.targets {
		label, tn, named := strings.Cut(spec, "=")
		if !named {
			label, tn = "", spec
		} else if label == "" || nameSafe(label) != label {
			return nil, nil, fmt.Errorf("%w: --target %q: NAME=TARGET wants a name of letters, digits, '.', '-' and '_'", errUsage, spec)
		}
		t, err := lookupTarget(tn)
		if err != nil {
			return nil, nil, err
		}
		if label == t.Name() {
			label = ""
		}
		// Cells are known across nights by their target's name: two specs
		// of one name would make one cell of two targets.
		name := cmp.Or(label, t.Name())
		if prev, dup := names[name]; dup {
			return nil, nil, fmt.Errorf("%w: --target %q and %q both name cells %q", errUsage, prev, spec, name)
		}
		names[name] = spec
		vt, ok := t.(targets.Versioned)
		if !ok || len(ax.versions) == 0 {
			tvs = append(tvs, targetVersion{t, label, ""})
			continue
		}
		for _, v := range ax.versions {
			tv, err := targets.WithVersion(t, v)
			if err != nil {
				if lacked[v] == nil {
					lacked[v] = err
				}
				skipped = append(skipped, fmt.Sprintf("%s --version %s: it has %s", t.Name(), v, strings.Join(vt.Versions(), ", ")))
				continue
			}
			had[v] = true
			tvs = append(tvs, targetVersion{tv, label, v})
		}
	}
	for _, v := range ax.versions {
		if !had[v] && lacked[v] != nil {
			return nil, nil, lacked[v]
		}
	}
	for _, tv := range tvs {
		t, label, version := tv.t, tv.label, tv.version
		tname := t.Name() // the cell's name's first part
		if version != "" {
			tname += "-" + version
		}
		for _, wn := range ax.workloads {
			combos := axisCombos(vary, wn)
			for ri, rspec := range ax.resources {
				rs, err := lookupResources(rspec)
				if err != nil {
					return nil, nil, err
				}
				if wn != "lock-append" && (o.sp.AuditLog || o.sp.SideWriter) {
					// The audit log and the side writer are lock-append's.
					if ri == 0 {
						skipped = append(skipped, fmt.Sprintf("%s %s: --audit-log and --side-writer go with lock-append cells only", t.Name(), wn))
					}
					continue
				}
				if wn == "register" {
					// Registers live in the target's own store: one set of
					// cells, whatever the resource axis.
					if ri > 0 {
						continue
					}
					rspec = resourceTable[0].Name()
				}
				if err := workloadSupports(wn, t); err != nil {
					if ri == 0 {
						skipped = append(skipped, fmt.Sprintf("%s %s: %s", t.Name(), wn, strings.TrimPrefix(err.Error(), targets.ErrBadConfig.Error()+": ")))
					}
					continue
				}
				if wn == "election" {
					if len(rs) != 1 {
						skipped = append(skipped, fmt.Sprintf("%s election, resource %s: the election workload appends to one log", t.Name(), rspec))
						continue
					}
				}
				for _, nem := range ax.nemeses {
					var points []matrixCell // the cells of this (target, workload, resource, nemesis), but the seed
					if wn == "register" {
						modes, why := registerModes(t, ax.readModes)
						if why != "" {
							skipped = append(skipped, fmt.Sprintf("%s register, nemesis %s: %s", t.Name(), nem, why))
						}
						for _, m := range modes {
							points = append(points, matrixCell{Workload: wn, ReadMode: m, Fencing: string(targets.FencingNone),
								MustBeValid: strict || targets.PromisesLinearizable(t, m)})
						}
					} else {
						for _, fn := range ax.fencings {
							f, err := targets.ParseFencing(fn)
							if err != nil {
								return nil, nil, err
							}
							if fs := workloadFencings(wn); fs != nil && !slices.Contains(fs, f) {
								if !seen["fencing "+wn+string(f)] {
									seen["fencing "+wn+string(f)] = true
									skipped = append(skipped, fmt.Sprintf("%s cells, fencing %s: the %s workload fences with %s", wn, f, wn, fencingWords(fs)))
								}
								continue
							}
							if r := lacking(rs, f); r != nil {
								skipped = append(skipped, fmt.Sprintf("%s, resource %s, nemesis %s, fencing %s: %s has no %s fencing (it has %s)",
									t.Name(), rspec, nem, f, r.Name(), f, resources.FencingNames(r)))
								continue
							}
							points = append(points, matrixCell{Workload: wn, Fencing: string(f), MustBeValid: strict || f != targets.FencingNone})
						}
					}
					for _, p := range points {
						for _, combo := range combos {
							co, suffix := *o, "" // the cell's flags, its name's end
							var axes map[string]string
							for _, a := range combo {
								if err := a.knob.Value(&co.sp).Set(a.value); err != nil {
									return nil, nil, fmt.Errorf("%w: --%s %q: %w", errUsage, a.knob.Flag, a.value, err)
								}
								if axes == nil {
									axes = map[string]string{}
								}
								axes[a.knob.Flag] = a.value
								suffix += "-" + a.knob.Flag + "-" + a.value
							}
							words := matrixCell{Axes: axes}.AxesText()
							if why := clientElsewhere(co.sp.ClientDir, t.Name()); why != "" {
								why = fmt.Sprintf("%s, %s: %s", tname, words, why)
								if !seen[why] {
									seen[why] = true
									skipped = append(skipped, why)
								}
								continue
							}
							if wn != "lock-append" && (co.sp.AuditLog || co.sp.SideWriter) {
								// The audit log and the side writer are lock-append's.
								why := fmt.Sprintf("%s %s, %s: --audit-log and --side-writer go with lock-append cells only", t.Name(), wn, cmp.Or(words, "side-writer=true"))
								if !seen[why] {
									seen[why] = true
									skipped = append(skipped, why)
								}
								continue
							}
							for r := 0; r < runs; r++ {
								name := nameSafe(fmt.Sprintf("%s-%s-%s-%s", tname, nem, rspec, p.Mode()))
								if rspec == resourceTable[0].Name() {
									name = nameSafe(fmt.Sprintf("%s-%s-%s", tname, nem, p.Mode()))
								}
								if wn != "lock-append" {
									name = nameSafe(fmt.Sprintf("%s-%s-%s", tname, wn, strings.TrimPrefix(name, tname+"-")))
								}
								name = nameSafe(name + suffix)
								cfg, err := co.configFor(t, wn, p.ReadMode, rspec, p.Fencing, nem, seed+uint64(r), name, stderr) // parses nem too
								if errors.Is(err, nemesis.ErrCannotApply) {
									why := fmt.Sprintf("%s, resource %s, nemesis %s: %s", tname, rspec, nem,
										strings.TrimPrefix(err.Error(), targets.ErrBadConfig.Error()+": "))
									if words != "" {
										why = fmt.Sprintf("%s, resource %s, nemesis %s, %s: %s", tname, rspec, nem, words,
											strings.TrimPrefix(err.Error(), targets.ErrBadConfig.Error()+": "))
									}
									if !seen[why] {
										seen[why] = true
										skipped = append(skipped, why)
									}
									if cannot[nem] == nil {
										cannot[nem] = err
									}
									break
								}
								if err != nil {
									if !seen[err.Error()] {
										seen[err.Error()] = true
										where := tname
										if wn != "lock-append" {
											where += " " + wn
										}
										if rspec != resourceTable[0].Name() {
											where += " " + rspec
										}
										if words != "" {
											where += " " + words
										}
										errs = append(errs, fmt.Errorf("%s (nemesis %s, %s): %w", where, nem, modeWords(p), err))
									}
									break
								}
								c := matrixRun{p, cfg}
								c.Label, c.Target, c.Version, c.Resource, c.Nemesis, c.Seed, c.Axes = label, t.Name(), version, rspec, nem, cfg.Seed, axes
								cells = append(cells, c)
								ran[nem] = true
							}
						}
					}
				}
			}
		}
	}
	for _, nem := range ax.nemeses {
		if !ran[nem] && cannot[nem] != nil {
			errs = append(errs, cannot[nem])
		}
	}
	if len(errs) > 0 {
		// Each wraps targets.ErrBadConfig or errUsage: exit 254.
		return nil, nil, errors.Join(errs...)
	}
	return cells, skipped, nil
}

// workloadFencings are the fencing modes the workload takes (nil: any the
// resource offers; the register workload's cells have read modes instead).
func workloadFencings(name string) []targets.Fencing {
	w, err := lookupWorkload(name)
	if err != nil {
		return nil
	}
	if f, ok := w.(workloads.Fenced); ok {
		return f.Fencings()
	}
	return nil
}

// workloadSupports is nil when the workload can run on t
// (workloads.Targeted), else why not.
func workloadSupports(name string, t targets.Target) error {
	w, err := lookupWorkload(name)
	if err != nil {
		return err
	}
	if tw, ok := w.(workloads.Targeted); ok {
		return tw.Supports(t)
	}
	return nil
}

// fencingWords is "none, token or cas".
func fencingWords(fs []targets.Fencing) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// registerModes are the read modes of t's register cells: want, or every
// read mode of t when want is empty; why says what was left out (modes t
// lacks, or all when t has no key-value store).
func registerModes(t targets.Target, want []string) (modes []string, why string) {
	rm, ok := t.(targets.ReadModer)
	if !ok {
		return nil, "the target has no key-value store for registers"
	}
	if len(want) == 0 {
		return rm.ReadModes(), ""
	}
	var lacks []string
	for _, m := range want {
		if slices.Contains(rm.ReadModes(), m) {
			modes = append(modes, m)
		} else {
			lacks = append(lacks, m)
		}
	}
	if len(lacks) > 0 {
		why = fmt.Sprintf("no read mode %s (it has %s)", strings.Join(lacks, ", "), strings.Join(rm.ReadModes(), ", "))
	}
	return modes, why
}

// targetWords is the cell's target as tables print it: with its name when
// the matrix gave it one (NAME=TARGET) and its version when the matrix has
// a version axis ("prod=etcd 3.4.3").
func targetWords(c matrixCell) string {
	t := c.Target
	if c.Label != "" {
		t = c.Label + "=" + c.Target
	}
	if c.Version != "" {
		t += " " + c.Version
	}
	return t
}

// axisWords is ", " and the cell's axes ("ttl=1s"), or "" when it has none.
func axisWords(c matrixCell) string {
	if len(c.Axes) == 0 {
		return ""
	}
	return ", " + c.AxesText()
}

// modeWords is the cell's mode in words: "fencing token", "linearizable
// reads".
func modeWords(c matrixCell) string {
	if c.WorkloadName() == "register" {
		return c.ReadMode + " reads"
	}
	return "fencing " + c.Fencing
}

// records are the cells' matrix.json records.
func records(cells []matrixRun) []matrixCell {
	out := make([]matrixCell, len(cells))
	for i, c := range cells {
		out[i] = c.matrixCell
	}
	return out
}

// lacking returns the first resource of rs that does not offer f, if any.
func lacking(rs []resources.Resource, f targets.Fencing) resources.Resource {
	for _, r := range rs {
		if !resources.Offers(r, f) {
			return r
		}
	}
	return nil
}

// fill records a finished run in its cell.
func (c *matrixRun) fill(out *harness.Outcome) {
	r := out.Results
	// An interrupted run that found nothing is unknown already; one that
	// found a lost update stays invalid (harness.MarkInterrupted).
	c.Verdict = r.Valid().String()
	c.RunDir, _ = filepath.Abs(out.Run.Dir)
	c.Elapsed = r.Elapsed
	if r.Result != nil {
		sum := r.Result.Summary()
		c.Acknowledged, c.Lost, c.FenceRejections = sum.Acknowledged, sum.Lost, sum.FenceRejections
		if sum.FirstLostNS != nil {
			s := float64(*sum.FirstLostNS) / 1e9
			c.FirstLostS = &s
		}
		if ops := sum.Ops; ops != nil && !out.Interrupted && !r.Interrupted {
			secs := c.cfg.TimeLimit.Seconds()
			c.OpsOK, c.OpsFail, c.OpsInfo, c.ClientS = &ops.OK, &ops.Fail, &ops.Info, &secs
		}
	}
	if l := r.Liveness; l != nil {
		for _, sum := range []*checkers.LivenessSummary{l.HolderCrash, l.ServerKill} {
			if sum != nil && sum.Count > 0 {
				s, ttls := sum.MedianS, sum.MedianTTLs
				c.RecoveryS, c.RecoveryTTLs = &s, &ttls
				break
			}
		}
	}
}

// matrixExit is the matrix's exit code: 255 if the harness failed on a cell,
// else 1 if a cell that must be valid is invalid, else 2 if one is unknown
// or was not run, or the matrix was interrupted, else 254 if every cell was
// refused (its configuration cannot run), else 0. A refused cell among
// others that ran changes nothing: it tested nothing, and nothing failed.
func matrixExit(cells []matrixCell, interrupted bool) int {
	code := exitValid
	if interrupted {
		code = exitUnknown
	}
	refused := 0
	for _, c := range cells {
		switch {
		case c.Verdict == trends.Error:
			return exitHarness
		case c.Verdict == trends.Refused:
			refused++
		case !c.MustBeValid:
		case c.Verdict == checkers.Invalid.String():
			code = exitInvalid
		case c.Verdict != checkers.Valid.String() && code == exitValid:
			code = exitUnknown
		}
	}
	if refused > 0 && refused == len(cells) && code == exitValid {
		return exitBadArgs
	}
	return code
}

// printMatrix prints one line per cell and the outcome. Its recovery
// column is the cell's median liveness, in seconds and TTLs.
func printMatrix(w io.Writer, cells []matrixCell, code int) {
	withRes, withReg, withWl := false, false, false
	for _, c := range cells {
		withRes = withRes || c.Resource != resourceTable[0].Name()
		withReg = withReg || c.WorkloadName() == "register"
		withWl = withWl || c.WorkloadName() != "lock-append"
	}
	target := func(c matrixCell) string {
		name := targetWords(c)
		if withWl {
			name += " " + c.WorkloadName()
		}
		if withRes {
			name += " " + c.Resource
		}
		if c.Axes != nil {
			name += " " + c.AxesText()
		}
		return name
	}
	head := matrixCell{Target: "target", Workload: "workload", Resource: "resource", Fencing: "fencing"}
	if withReg {
		head.Fencing = "mode"
	}
	width := 16
	for _, c := range cells {
		width = max(width, min(len(target(c)), 64))
	}
	fmt.Fprintf(w, "\n%-*s %-28s %-12s %5s  %-8s %12s %6s %10s %14s\n", width, target(head), "nemesis", head.Fencing, "seed", "verdict", "lost", "fenced", "first lost", "recovery")
	unfenced, lossy, weak := 0, 0, 0
	for _, c := range cells {
		if c.WorkloadName() == "register" {
			verdict := c.Verdict
			if !c.MustBeValid {
				verdict += "*"
				weak++
			}
			fmt.Fprintf(w, "%-*s %-28s %-12s %5d  %-8s %12s %6s %10s %14s\n", width, target(c), c.Nemesis, c.Mode(), c.Seed, verdict, "-", "-", "-", "-")
			continue
		}
		first := "-"
		if c.FirstLostS != nil {
			first = fmt.Sprintf("%.1fs", *c.FirstLostS)
		}
		verdict := c.Verdict
		if !c.MustBeValid {
			verdict += "*"
			unfenced++
			if c.Lost > 0 {
				lossy++
			}
		}
		recovery := "-"
		if c.RecoveryS != nil && c.RecoveryTTLs != nil {
			recovery = fmt.Sprintf("%.1fs %.2fTTL", *c.RecoveryS, *c.RecoveryTTLs)
		}
		fmt.Fprintf(w, "%-*s %-28s %-12s %5d  %-8s %12s %6d %10s %14s\n", width, target(c), c.Nemesis, c.Fencing, c.Seed, verdict,
			fmt.Sprintf("%d/%d", c.Lost, c.Acknowledged), c.FenceRejections, first, recovery)
	}
	if unfenced > 0 {
		fmt.Fprintf(w, "* not judged: unfenced runs show what fencing is for (lost updates in %d of %d)\n", lossy, unfenced)
	}
	if weak > 0 {
		fmt.Fprintf(w, "* not judged: register runs in a read mode the target does not promise linearizable (%d)\n", weak)
	}
	outcome := map[int]string{
		exitValid:   "PASS  every cell that must be valid is",
		exitInvalid: "FAIL  a cell that must be valid is invalid: see its report",
		exitUnknown: "UNKNOWN  a cell that must be valid could not be decided, or the matrix was cut short",
		exitHarness: "ERROR  the harness failed on a cell (see its error in the summary)",
	}[code]
	fmt.Fprintf(w, "%s\n", outcome)
}

// writeMatrix writes matrix.json at the root of the results directory.
func writeMatrix(root string, sum matrixSummary) error {
	b, err := sum.Encode()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, MatrixFile), b, 0o644)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// nameSafe turns a --nemesis value into part of a run name.
func nameSafe(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-") }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// listFlag is a comma-separated list flag that may also be repeated; the
// values add up.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	items := splitList(s)
	if len(items) == 0 {
		return errors.New("empty list")
	}
	*l = append(*l, items...)
	return nil
}

// multiFlag is a flag that may be repeated; each value stays whole.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, " ") }

func (m *multiFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty value")
	}
	*m = append(*m, s)
	return nil
}

var (
	_ flag.Value = (*multiFlag)(nil)
	_ flag.Value = (*listFlag)(nil)
)

// clientElsewhere says why a client directory's program is not run on
// target (its client.json names another target; a variant, redis-everysec
// for redis, is the same service), or "" when it is, or when the directory
// cannot be read (the cell's run then says what is wrong with it).
func clientElsewhere(dir, target string) string {
	if dir == "" {
		return ""
	}
	c, err := clientproto.Load(dir, "", "")
	if err != nil || c.Manifest.Target == "" || c.Manifest.Target == target || strings.HasPrefix(target, c.Manifest.Target+"-") {
		return ""
	}
	return fmt.Sprintf("the client %s is written for %s", c.Name(), c.Manifest.Target)
}
