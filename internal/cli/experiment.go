package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/experiment"
	"github.com/fencecheck/fencecheck/internal/spec"
)

// fileHelp is -f's help, run's and matrix's.
const fileHelp = "an experiment file (YAML or JSON): each field a knob under its test.json key (docs/experiments.md); flags given here override it"

// givenFlags says which flags the command line gave.
func givenFlags(fs *flag.FlagSet) func(string) bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return func(name string) bool { return set[name] }
}

// runFile is the run of the experiment file at path (run -f; nil and
// given without one), with the flags the command line gave over it
// (experiment.File.Spec): given is what they made. Errors exit 254.
func runFile(fs *flag.FlagSet, path string, given spec.Spec) (*experiment.File, spec.Spec, error) {
	if path == "" {
		return nil, given, nil
	}
	f, err := experiment.Read(path, experiment.Run)
	if err == nil {
		given, err = f.Spec(given, givenFlags(fs))
	}
	if err != nil {
		return nil, spec.Spec{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	return f, given, nil
}

// matrixFile sets matrix's flags from the experiment file at path (matrix
// -f; nil without one), each field as its flag would be given, its list's
// values one by one, but those the command line gave: given is the Spec
// its flags made. A knob matrix takes as one value (--workload, split by
// matrix itself) gets the list comma-separated. Errors exit 254.
func matrixFile(fs *flag.FlagSet, path string, given spec.Spec) (*experiment.File, error) {
	if path == "" {
		return nil, nil
	}
	set := givenFlags(fs)
	f, err := experiment.Read(path, experiment.Matrix)
	if err == nil {
		err = f.CheckAsks(given, set)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	for _, fd := range f.Fields {
		k := fd.Knob
		fl := fs.Lookup(k.Flag)
		switch {
		case set(k.Flag) || k.File != spec.FileSets:
			continue // the command line's (spec.FileAsks: only there)
		case fl == nil:
			return nil, fmt.Errorf("%w: %w", errUsage, f.Errorf(fd.Line, k.FileKey(), "not a matrix's: matrix sets it itself for each cell"))
		}
		values := fd.Values
		switch fl.Value.(type) {
		case *listFlag, *multiFlag, *knobList, boolKnobList:
		default:
			values = []string{strings.Join(values, ",")}
		}
		for _, v := range values {
			if err := fl.Value.Set(v); err != nil {
				return nil, fmt.Errorf("%w: %w", errUsage, f.Errorf(fd.Line, k.FileKey(), "%q: %v", v, err))
			}
		}
	}
	return f, nil
}
