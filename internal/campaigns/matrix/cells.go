package matrix

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Axes are the values of each axis of a matrix.
type Axes struct {
	Targets, Workloads, Resources, Fencings, Nemeses []string
	// Versions are the versions of each versioned target (none: its
	// default); a target with one version runs it once.
	Versions []string
	// ReadModes are the register cells' read modes (none: every read mode
	// of each target).
	ReadModes []string
	// Knobs are the lists of the other knobs (--ttl 1s,2s): a knob of one
	// value sets every cell as run's flag would; one of more multiplies
	// the cells of the workloads it applies to, each cell recording its
	// values (MatrixCell.Axes).
	Knobs []KnobAxis
}

// KnobAxis is a knob a matrix varies (spec.Knob.Axis) that is not one of
// its own axes: each of its values, as the knob's String writes it after
// its Set ("1000ms" is "1s").
type KnobAxis struct {
	Knob   spec.Knob
	Values []string
}

// Plan is a matrix to expand into cells: the knobs every cell shares, the
// axes, the seeds and the runs of each cell, and how a cell's target is
// found and its configuration made.
type Plan struct {
	Base   spec.Spec
	Axes   Axes
	Seed   uint64 // each cell's first run's; run r has Seed+r
	Runs   int
	Strict bool // every cell must be valid, unfenced ones too
	// Target is the target --target names (a Go API user's recipes
	// among them).
	Target func(name string) (targets.Target, error)
	// Config is a cell's configuration: sp (CellSpec) on t, its names
	// looked up, defaults filled in and validated (errors wrap
	// targets.ErrBadConfig or the usage error: exit 254).
	Config func(t targets.Target, sp spec.Spec) (harness.Config, error)
}

// CellSpec is the spec of one cell (or one point of a sweep): sp with the
// workload, read mode, resources (comma-separated), fencing, faults, seed
// and run name given.
func CellSpec(sp spec.Spec, workload, readMode, resource, fencing, nem string, seed uint64, name string) spec.Spec {
	sp.Workload, sp.ReadMode, sp.Fencing, sp.Nemesis, sp.Seed, sp.Name = workload, readMode, fencing, nem, seed, name
	sp.Resource = spec.SplitList(resource)
	return sp
}

// expansion is Cells at work: what it found so far.
type expansion struct {
	p       Plan
	base    spec.Spec  // p.Base with every knob of one value set
	vary    []KnobAxis // the knobs of more than one value
	cells   []Job
	skipped []string
	errs    []error
	seen    map[string]bool  // one line per distinct problem
	ran     map[string]bool  // a --nemesis value with a cell
	cannot  map[string]error // why a --nemesis value's faults could not apply
}

// targetVersion is a target at one version of the version axis ("": its
// default), with the name the matrix gave it (NAME=TARGET).
type targetVersion struct {
	t              targets.Target
	label, version string
}

// Cells builds and validates every cell: any bad one fails them all,
// before anything starts. A fencing mode that a cell's resource does not
// offer (the proxy's cas) skips that cell, and says so; so does a read mode
// a target lacks, or a target with no key-value store, for register cells,
// and a fault that cannot apply to a target and resource (a partition of one
// Redis server: nemesis.ErrCannotApply), unless no cell of that --nemesis
// can run at all (then it is a bad argument).
func Cells(p Plan) (cells []Job, skipped []string, err error) {
	if ref := p.Base.Image["target"]; ref != "" && (len(p.Axes.Targets) > 1 || len(p.Axes.Versions) > 1) {
		// One image is one build of one server: a target or version axis
		// would run it under names it is not.
		return nil, nil, fmt.Errorf("%w: --image target=%s runs one server build: give one --target and at most one --version", targets.ErrBadConfig, ref)
	}
	e := &expansion{p: p, seen: map[string]bool{}, ran: map[string]bool{}, cannot: map[string]error{}}
	if err := e.setKnobs(); err != nil {
		return nil, nil, err
	}
	tvs, err := e.targetVersions()
	if err != nil {
		return nil, nil, err
	}
	for _, tv := range tvs {
		for _, wn := range p.Axes.Workloads {
			if err := e.workload(tv, wn); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, nem := range p.Axes.Nemeses {
		if !e.ran[nem] && e.cannot[nem] != nil {
			e.errs = append(e.errs, e.cannot[nem])
		}
	}
	if len(e.errs) > 0 {
		// Each wraps targets.ErrBadConfig or errUsage: exit 254.
		return nil, nil, errors.Join(e.errs...)
	}
	return e.cells, e.skipped, nil
}

// setKnobs sets every knob of one value on the base spec (as run's flag,
// unrecorded: the cells are those of a matrix without the flag's list)
// and keeps those of more as the axes that vary.
func (e *expansion) setKnobs() error {
	e.base = e.p.Base
	for _, a := range e.p.Axes.Knobs {
		switch len(a.Values) {
		case 0:
		case 1:
			if err := a.Knob.Value(&e.base).Set(a.Values[0]); err != nil {
				return fmt.Errorf("%w: --%s %q: %w", errUsage, a.Knob.Flag, a.Values[0], err)
			}
		default:
			e.vary = append(e.vary, a)
		}
	}
	return nil
}

// skipOnce records why a cell is skipped, once for each reason.
func (e *expansion) skipOnce(why string) {
	if !e.seen[why] {
		e.seen[why] = true
		e.skipped = append(e.skipped, why)
	}
}

// targetVersions are every (target, version): a version applies to the
// targets that have it (the others skip it, and say so); one that no
// target has is an error.
func (e *expansion) targetVersions() ([]targetVersion, error) {
	var tvs []targetVersion
	names := map[string]string{} // a cell's target name (its label, or the target's) -> the spec that gave it
	had := map[string]bool{}     // versions some target has
	lacked := map[string]error{} // the first target's error for the others
	for _, ts := range e.p.Axes.Targets {
		label, tn, named := strings.Cut(ts, "=")
		if !named {
			label, tn = "", ts
		} else if label == "" || store.SafeName(label) != label {
			return nil, fmt.Errorf("%w: --target %q: NAME=TARGET wants a name of letters, digits, '.', '-' and '_'", errUsage, ts)
		}
		t, err := e.p.Target(tn)
		if err != nil {
			return nil, err
		}
		if label == t.Name() {
			label = ""
		}
		// Cells are known across nights by their target's name: two specs
		// of one name would make one cell of two targets.
		name := cmp.Or(label, t.Name())
		if prev, dup := names[name]; dup {
			return nil, fmt.Errorf("%w: --target %q and %q both name cells %q", errUsage, prev, ts, name)
		}
		names[name] = ts
		vt, ok := t.(targets.Versioned)
		if !ok || len(e.p.Axes.Versions) == 0 {
			tvs = append(tvs, targetVersion{t, label, ""})
			continue
		}
		for _, v := range e.p.Axes.Versions {
			tv, err := targets.WithVersion(t, v)
			if err != nil {
				if lacked[v] == nil {
					lacked[v] = err
				}
				e.skipped = append(e.skipped, fmt.Sprintf("%s --version %s: it has %s", t.Name(), v, strings.Join(vt.Versions(), ", ")))
				continue
			}
			had[v] = true
			tvs = append(tvs, targetVersion{tv, label, v})
		}
	}
	for _, v := range e.p.Axes.Versions {
		if !had[v] && lacked[v] != nil {
			return nil, lacked[v]
		}
	}
	return tvs, nil
}

// workload adds the cells of one target (at one version) and workload:
// every resource, nemesis, mode and combination of the knob axes, each
// run of each.
func (e *expansion) workload(tv targetVersion, wn string) error {
	t := tv.t
	combos := axisCombos(e.vary, wn)
	for ri, rspec := range e.p.Axes.Resources {
		rs, err := tables.LookupResources(rspec)
		if err != nil {
			return err
		}
		if wn != "lock-append" && (e.base.AuditLog || e.base.SideWriter) {
			// The audit log and the side writer are lock-append's.
			if ri == 0 {
				e.skipped = append(e.skipped, fmt.Sprintf("%s %s: --audit-log and --side-writer go with lock-append cells only", t.Name(), wn))
			}
			continue
		}
		if wn == "register" {
			// Registers live in the target's own store: one set of
			// cells, whatever the resource axis.
			if ri > 0 {
				continue
			}
			rspec = tables.Resources[0].Name()
		}
		if err := workloadSupports(wn, t); err != nil {
			if ri == 0 {
				e.skipped = append(e.skipped, fmt.Sprintf("%s %s: %s", t.Name(), wn, strings.TrimPrefix(err.Error(), targets.ErrBadConfig.Error()+": ")))
			}
			continue
		}
		if wn == "election" && len(rs) != 1 {
			e.skipped = append(e.skipped, fmt.Sprintf("%s election, resource %s: the election workload appends to one log", t.Name(), rspec))
			continue
		}
		for _, nem := range e.p.Axes.Nemeses {
			points, err := e.points(t, wn, rspec, rs, nem)
			if err != nil {
				return err
			}
			for _, pt := range points {
				for _, combo := range combos {
					if err := e.combo(tv, cellAt{wn, rspec, nem, pt}, combo); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// points are the cells of one target, workload, resource and nemesis but
// the knob axes and the seed: a register cell per read mode, any other
// cell per fencing mode its workload and resources take.
func (e *expansion) points(t targets.Target, wn, rspec string, rs []resources.Resource, nem string) ([]trends.MatrixCell, error) {
	var points []trends.MatrixCell
	if wn == "register" {
		modes, why := registerModes(t, e.p.Axes.ReadModes)
		if why != "" {
			e.skipped = append(e.skipped, fmt.Sprintf("%s register, nemesis %s: %s", t.Name(), nem, why))
		}
		for _, m := range modes {
			points = append(points, trends.MatrixCell{Workload: wn, ReadMode: m, Fencing: string(targets.FencingNone),
				MustBeValid: e.p.Strict || targets.PromisesLinearizable(t, m)})
		}
		return points, nil
	}
	for _, fn := range e.p.Axes.Fencings {
		f, err := targets.ParseFencing(fn)
		if err != nil {
			return nil, err
		}
		if fs := workloadFencings(wn); fs != nil && !slices.Contains(fs, f) {
			if !e.seen["fencing "+wn+string(f)] {
				e.seen["fencing "+wn+string(f)] = true
				e.skipped = append(e.skipped, fmt.Sprintf("%s cells, fencing %s: the %s workload fences with %s", wn, f, wn, fencingWords(fs)))
			}
			continue
		}
		if r := lacking(rs, f); r != nil {
			e.skipped = append(e.skipped, fmt.Sprintf("%s, resource %s, nemesis %s, fencing %s: %s has no %s fencing (it has %s)",
				t.Name(), rspec, nem, f, r.Name(), f, resources.FencingNames(r)))
			continue
		}
		points = append(points, trends.MatrixCell{Workload: wn, Fencing: string(f), MustBeValid: e.p.Strict || f != targets.FencingNone})
	}
	return points, nil
}

// cellAt is where a cell is on the matrix's own axes: its workload,
// resources, nemesis and mode (point).
type cellAt struct {
	workload, resource, nemesis string
	point                       trends.MatrixCell
}

// combo adds the runs of one cell: at, with one combination of the knob
// axes. A cell that cannot run here is skipped, or its error kept (the
// first of each kind).
func (e *expansion) combo(tv targetVersion, at cellAt, combo []axisSetting) error {
	t, wn, rspec, nem, p := tv.t, at.workload, at.resource, at.nemesis, at.point
	tname := t.Name() // the cell's name's first part
	if tv.version != "" {
		tname += "-" + tv.version
	}
	co, suffix := e.base, "" // the cell's knobs, its name's end
	var axes map[string]string
	for _, a := range combo {
		if err := a.knob.Value(&co).Set(a.value); err != nil {
			return fmt.Errorf("%w: --%s %q: %w", errUsage, a.knob.Flag, a.value, err)
		}
		if axes == nil {
			axes = map[string]string{}
		}
		axes[a.knob.Flag] = a.value
		suffix += "-" + a.knob.Flag + "-" + a.value
	}
	words := trends.MatrixCell{Axes: axes}.AxesText()
	if why := clientElsewhere(co.ClientDir, t.Name()); why != "" {
		e.skipOnce(fmt.Sprintf("%s, %s: %s", tname, words, why))
		return nil
	}
	if wn != "lock-append" && (co.AuditLog || co.SideWriter) {
		// The audit log and the side writer are lock-append's.
		e.skipOnce(fmt.Sprintf("%s %s, %s: --audit-log and --side-writer go with lock-append cells only", t.Name(), wn, cmp.Or(words, "side-writer=true")))
		return nil
	}
	for r := 0; r < e.p.Runs; r++ {
		name := cellName(tname, at) + suffix
		cfg, err := e.p.Config(t, CellSpec(co, wn, p.ReadMode, rspec, p.Fencing, nem, e.p.Seed+uint64(r), store.SafeName(name))) // parses nem too
		if errors.Is(err, nemesis.ErrCannotApply) {
			why := strings.TrimPrefix(err.Error(), targets.ErrBadConfig.Error()+": ")
			if words != "" {
				e.skipOnce(fmt.Sprintf("%s, resource %s, nemesis %s, %s: %s", tname, rspec, nem, words, why))
			} else {
				e.skipOnce(fmt.Sprintf("%s, resource %s, nemesis %s: %s", tname, rspec, nem, why))
			}
			if e.cannot[nem] == nil {
				e.cannot[nem] = err
			}
			return nil
		}
		var refusal error
		if errors.Is(err, clientproto.ErrNoTokens) {
			// Known before it starts (client.json): the cell is refused,
			// recorded as such without a run, as one found at the workers'
			// setup is.
			refusal, err = err, nil
		}
		if err != nil {
			if !e.seen[err.Error()] {
				e.seen[err.Error()] = true
				where := strings.Join(slices.DeleteFunc([]string{tname, cellWord(wn, "lock-append"), cellWord(rspec, tables.Resources[0].Name()), words}, func(s string) bool { return s == "" }), " ")
				e.errs = append(e.errs, fmt.Errorf("%s (nemesis %s, %s): %w", where, nem, ModeWords(p), err))
			}
			return nil
		}
		// A cell not judged is expected invalid: --keep-data auto keeps
		// none of its data.
		cfg.NotJudged = !p.MustBeValid
		c := Job{MatrixCell: p, Config: cfg, Refusal: refusal}
		c.Label, c.Target, c.Version, c.Resource, c.Nemesis, c.Seed, c.Axes = tv.label, t.Name(), tv.version, rspec, nem, cfg.Seed, axes
		e.cells = append(e.cells, c)
		e.ran[nem] = true
	}
	return nil
}

// cellWord is s, or "" when it is the default def (a cell names only what
// is not).
func cellWord(s, def string) string {
	if s == def {
		return ""
	}
	return s
}

// cellName is a cell's run name but its knob axes: its target (and
// version), its workload unless lock-append, its nemesis, its resources
// unless the default, and its mode.
func cellName(tname string, at cellAt) string {
	name := store.SafeName(fmt.Sprintf("%s-%s-%s-%s", tname, at.nemesis, at.resource, at.point.Mode()))
	if at.resource == tables.Resources[0].Name() {
		name = store.SafeName(fmt.Sprintf("%s-%s-%s", tname, at.nemesis, at.point.Mode()))
	}
	if at.workload != "lock-append" {
		name = store.SafeName(fmt.Sprintf("%s-%s-%s", tname, at.workload, strings.TrimPrefix(name, tname+"-")))
	}
	return name
}
