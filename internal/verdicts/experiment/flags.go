package experiment

import (
	"flag"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/spec"
)

// givenFlags says which flags of fs the command line gave.
func givenFlags(fs *flag.FlagSet) func(string) bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return func(name string) bool { return set[name] }
}

// ForRun is the run of the experiment file at path (run -f; nil and
// given without one), with the flags of fs the command line gave over it
// (File.Spec): given is what they made. Errors wrap cmdline.ErrUsage.
func ForRun(fs *flag.FlagSet, path string, given spec.Spec) (*File, spec.Spec, error) {
	if path == "" {
		return nil, given, nil
	}
	f, err := Read(path, Run)
	if err == nil {
		given, err = f.Spec(given, givenFlags(fs))
	}
	if err != nil {
		return nil, spec.Spec{}, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	return f, given, nil
}

// ForMatrix sets matrix's flags fs from the experiment file at path
// (matrix -f; nil without one), each field as its flag would be given,
// its list's values one by one (a flag whose value isList says is a
// list), but those the command line gave: given is the Spec its flags
// made. A knob matrix takes as one value (--workload, split by matrix
// itself) gets the list comma-separated. Errors wrap cmdline.ErrUsage.
func ForMatrix(fs *flag.FlagSet, path string, given spec.Spec, isList func(flag.Value) bool) (*File, error) {
	if path == "" {
		return nil, nil
	}
	set := givenFlags(fs)
	f, err := Read(path, Matrix)
	if err == nil {
		err = f.CheckAsks(given, set)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	for _, fd := range f.Fields {
		k := fd.Knob
		fl := fs.Lookup(k.Flag)
		switch {
		case set(k.Flag) || k.File != spec.FileSets:
			continue // the command line's (spec.FileAsks: only there)
		case fl == nil:
			return nil, fmt.Errorf("%w: %w", cmdline.ErrUsage, f.Errorf(fd.Line, k.FileKey(), "not a matrix's: matrix sets it itself for each cell"))
		}
		values := fd.Values
		if !isList(fl.Value) {
			values = []string{strings.Join(values, ",")}
		}
		for _, v := range values {
			if err := fl.Value.Set(v); err != nil {
				return nil, fmt.Errorf("%w: %w", cmdline.ErrUsage, f.Errorf(fd.Line, k.FileKey(), "%q: %v", v, err))
			}
		}
	}
	return f, nil
}
