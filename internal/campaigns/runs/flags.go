package runs

import (
	"flag"
	"io"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/experiment"
	"github.com/fencecheck/fencecheck/targets"
)

// Flags are the flags of one run: the knobs of spec.Knobs (all, or those
// a command takes), bound to Spec, and --quiet, bound to Quiet; their
// configurations are made on the parts that made them.
type Flags struct {
	Spec  spec.Spec
	Quiet *bool
	parts Parts
}

// AddFlags adds the knobs that only accepts (all when nil) to fs, with
// spec.Default's values, and --quiet.
func (p Parts) AddFlags(fs *flag.FlagSet, only func(spec.Knob) bool) *Flags {
	o := &Flags{Spec: spec.Default(), parts: p}
	o.Spec.Flags(fs, only, p.Choices())
	o.Quiet = fs.Bool("quiet", false, "no progress line")
	return o
}

// FileHelp is -f's help, run's and matrix's.
const FileHelp = "an experiment file (YAML or JSON): each field a knob under its test.json key (docs/experiments.md); flags given here override it"

// RunFile reads the experiment file at path (run -f; nil without one)
// into o.Spec, under the flags of fs the command line gave
// (experiment.ForRun). Errors wrap cmdline.ErrUsage.
func (o *Flags) RunFile(fs *flag.FlagSet, path string) (*experiment.File, error) {
	f, sp, err := experiment.ForRun(fs, path, o.Spec)
	if err == nil {
		o.Spec = sp
	}
	return f, err
}

// MatrixFile sets matrix's flags fs from the experiment file at path
// (experiment.ForMatrix; nil without one).
func (o *Flags) MatrixFile(fs *flag.FlagSet, path string, isList func(flag.Value) bool) (*experiment.File, error) {
	return experiment.ForMatrix(fs, path, o.Spec, isList)
}

// Config is the run's configuration from the flags with the target, the
// resources, fencing, faults, seed and name given (a sweep's), defaults
// filled in and validated (errors wrap targets.ErrBadConfig or cmdline.ErrUsage:
// exit 254).
func (o *Flags) Config(t targets.Target, resource, fencing, nem string, seed uint64, name string, stderr io.Writer) (harness.Config, error) {
	return o.ConfigFor(t, o.Spec.Workload, o.Spec.ReadMode, resource, fencing, nem, seed, name, stderr)
}

// ConfigFor is Config with the workload and read mode given (a matrix
// cell's) instead of the flags'.
func (o *Flags) ConfigFor(t targets.Target, workload, readMode, resource, fencing, nem string, seed uint64, name string, stderr io.Writer) (harness.Config, error) {
	return o.parts.ConfigOn(t, matrix.CellSpec(o.Spec, workload, readMode, resource, fencing, nem, seed, name), stderr)
}
