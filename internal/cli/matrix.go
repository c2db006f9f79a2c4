package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/targets"
)

// matrixOpts are matrix's flags, parsed (matrixFlags).
type matrixOpts struct {
	o           *runs.Flags       // the knobs matrix takes as run does
	locate      func(error) error // matrix -f's File.Locate (nil-safe)
	axes        matrix.Axes
	seed        uint64
	runs        int
	strict      bool
	shard       matrix.Shard
	list        bool
	images      bool
	baselineDir string
	args        []string // as given, secrets redacted (matrix.json's args)
}

func cmdMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	m, err := matrixFlags(args, stderr)
	if err != nil {
		return 0, err
	}
	ui := runs.NewProgress(stderr, *m.o.Quiet)
	var eng runs.Engine
	defer eng.Close()
	return matrix.Command{
		Cells: func() ([]matrix.Job, []string, error) {
			all, skipped, err := matrixCells(m.o, m.axes, m.seed, m.runs, m.strict, !m.list && !m.images, stderr)
			return all, skipped, m.locate(err)
		},
		Shard: m.shard, List: m.list, Images: m.images, Strict: m.strict, Args: m.args,
		Results: m.o.Spec.Results, BaselineDir: m.baselineDir,
	}.Run(ctx, ui.Matrix(stderr), eng.Get, stdout)
}

// matrixFlags parses matrix's flags and checks them (errors wrap errUsage
// or targets.ErrBadConfig: exit 254), with the axes' defaults filled in.
func matrixFlags(args []string, stderr io.Writer) (*matrixOpts, error) {
	fs := verbFlags("matrix", stderr, matrixUsage)
	var targetList, fencingList, versionList listFlag
	fs.Var(&targetList, "target", "systems under test, comma-separated or repeated (default the targets the --client-dir programs' client.json names, else etcd); NAME=TARGET runs TARGET under the name NAME in matrix.json and across nights: "+targetNames())
	fs.Var(&versionList, "version", "server versions of each target that has versions, comma-separated or repeated (default its default; "+parts.VersionNames()+"); targets with one version run it once")
	fs.Var(&fencingList, "fencing", "fencing modes, comma-separated or repeated (default none,token,cas)")
	var nems, resourceList multiFlag
	fs.Var(&resourceList, "resource", "one cell's resources, comma-separated as run's --resource; repeat the flag for more cells (default lock-store): "+runs.ResourceNames())
	fs.Var(&nems, "nemesis", "one cell's faults, comma-separated as run's --nemesis (kill,partition is one cell with both); repeat the flag for more cells (default pause-holder)")
	nruns := fs.Int("runs", 1, "runs per cell, with seeds --seed, --seed+1, ...")
	seed := fs.Uint64("seed", 1, "seed of each cell's first run (fixed, so that nightly runs are comparable; 0: pick one and record it)")
	strict := fs.Bool("strict", false, "every cell must be valid, unfenced ones too")
	shardFlag := fs.String("shard", "1/1", "run only shard I of N: cells I, I+N, I+2N, ... of the matrix (the same split on every machine); fencecheck merge joins the shards' results directories")
	var cellFlag multiFlag
	fs.Var(&cellFlag, "cell", "run only these cells: their numbers as --list prints them, comma-separated or repeated (re-run a failing cell; fencecheck merge puts it in place of its copy in a night's results); not with --shard")
	list := fs.Bool("list", false, "print the cells (of --shard) and exit, running nothing")
	imageKinds := fs.Bool("images", false, "print the kinds of fencecheck's images the cells (of --shard) use, one a line (base, etcd, worker, ...), and exit, running nothing: what images build and images save take for a CI cache of exactly these")
	baselineDir := fs.String("baseline", "", "compare each cell with this matrix's results directory, or with the newest night of a root of nights: exit 1 if a cell regressed (a must-be-valid cell valid there and invalid now, an unfenced cell that lost updates there and none now)")
	o, knobLists := addMatrixRunFlags(fs)
	file := fs.String("f", "", runs.FileHelp+"; a knob matrix varies may be a list, a cell each")
	if err := parseVerb(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	ef, err := o.MatrixFile(fs, *file, isList)
	if err != nil {
		return nil, err
	}
	var workloadList []string
	for _, w := range spec.SplitList(o.Spec.Workload) {
		if _, err := lookupWorkload(w); err != nil {
			return nil, err
		}
		workloadList = append(workloadList, w)
	}
	if len(workloadList) == 0 {
		return nil, fmt.Errorf("%w: --workload: empty list", errUsage)
	}
	if *nruns < 1 || *nruns > 100 {
		return nil, fmt.Errorf("%w: --runs %d: between 1 and 100", errUsage, *nruns)
	}
	if len(nems) == 0 {
		nems = multiFlag{"pause-holder"}
	}
	if len(targetList) == 0 {
		targetList = clientTargets(knobLists)
	}
	if len(resourceList) == 0 {
		resourceList = multiFlag{runs.DefaultResource().Name()}
	}
	if len(fencingList) == 0 {
		fencingList = listFlag{"none", "token", "cas"}
	}
	if *seed == 0 {
		*seed = rand.Uint64()%1_000_000 + 1
	}
	if *seed > math.MaxUint64-uint64(*nruns-1) {
		return nil, fmt.Errorf("%w: --seed %d with --runs %d: the seeds %d, %d, ... would wrap past 2^64-1", errUsage, *seed, *nruns, *seed, *seed+1)
	}
	sh, err := matrix.ParseShard(*shardFlag)
	if err != nil {
		return nil, err
	}
	if len(cellFlag) > 0 {
		if sh.N > 1 {
			return nil, fmt.Errorf("%w: --cell and --shard %s: give one", errUsage, sh)
		}
		if sh, err = matrix.ParseCells(cellFlag); err != nil {
			return nil, err
		}
	}
	if *list && *imageKinds {
		return nil, fmt.Errorf("%w: --list and --images: give one", errUsage)
	}
	return &matrixOpts{
		o: o, locate: ef.Locate, seed: *seed, runs: *nruns, strict: *strict, shard: sh, list: *list, images: *imageKinds, baselineDir: *baselineDir, args: spec.Redact(fs, args),
		axes: matrix.Axes{
			Targets: targetList, Versions: versionList, Workloads: workloadList, Resources: resourceList, Fencings: fencingList,
			ReadModes: spec.SplitList(o.Spec.ReadMode), Nemeses: nems, Knobs: knobAxes(knobLists),
		},
	}, nil
}

// clientTargets is matrix's default --target (runs.ClientTargets): the
// targets that the client programs of the --client-dir axis name.
func clientTargets(lists []*knobList) listFlag {
	var dirs []string
	for _, l := range lists {
		if l.Knob.Flag == "client-dir" {
			dirs = append(dirs, l.Values...)
		}
	}
	return runs.ClientTargets(dirs)
}

// matrixCells are the matrix's cells (matrix.Cells) from the flags o and
// the axes, each cell's configuration made as run makes its own; without
// build (matrix --list, which runs nothing) no client program's build
// step runs.
func matrixCells(o *runs.Flags, ax matrix.Axes, seed uint64, nruns int, strict, build bool, stderr io.Writer) ([]matrix.Job, []string, error) {
	config := parts.Checked
	if build {
		config = parts.ConfigOn
	}
	return matrix.Cells(matrix.Plan{
		Base: o.Spec, Axes: ax, Seed: seed, Runs: nruns, Strict: strict,
		Target: lookupTarget,
		Config: func(t targets.Target, sp spec.Spec) (harness.Config, error) { return config(t, sp, stderr) },
	})
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

// listFlag is a comma-separated list flag that may also be repeated; the
// values add up.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	items := spec.SplitList(s)
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

// matrixUsage is matrix -h's details.
const matrixUsage = `Runs every combination of --target, --resource, --nemesis and --fencing,
one run after another, into one results directory (its index.html lists them
all; matrix.json sums them up). Each cell takes its target's profile (TTL,
lock-delay, nemesis interval, time limit) unless a flag sets it. Fenced cells
must be valid: exit 1 if one is invalid, 2 if one is unknown, 255 if the
harness failed on a cell (the other cells still run), 0 otherwise. A cell
whose configuration cannot run (a client program whose grants carry no
token, in a token cell: at once when its client.json says "tokens": false,
else at the workers' setup) is "refused": it changes nothing, unless
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
run's flag does.`
