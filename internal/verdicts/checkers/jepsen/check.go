package jepsen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// Models are the values of check --model, each with what it reads.
var Models = []struct {
	Name, Reads string
}{
	{checkers.ModelCASRegister, "jepsen.util log lines of one compare-and-set register"},
	{checkers.ModelKV, "EDN operation maps of a string key-value store (get, put, append)"},
}

// ModelNames lists Models' names, comma-separated.
func ModelNames() string {
	var names []string
	for _, m := range Models {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// Check is check --jepsen-history: a history recorded by Jepsen, checked
// on a model, nothing written but the visualization (never over the
// history, nor over any existing file unless Force).
type Check struct {
	File, Model string
	// Viz is where the visualization goes ("" for none).
	Viz     string
	Force   bool
	Timeout time.Duration // 0: no limit
	Memory  uint64        // the check's memory budget in bytes (0: none)
}

// Run checks the history and prints the verdict and its figures on
// stdout; it returns the exit code (cmdline's: 0 valid, 1 invalid, 2
// unknown). A bad model, file or --viz path is an error that wraps
// cmdline.ErrUsage (exit 254); Ctrl-C while reading, cmdline.ErrInterrupted.
func (c Check) Run(ctx context.Context, stdout io.Writer) (int, error) {
	known := false
	for _, m := range Models {
		known = known || m.Name == c.Model
	}
	switch {
	case c.Model == "":
		return 0, fmt.Errorf("%w: --jepsen-history needs --model (valid: %s)", cmdline.ErrUsage, ModelNames())
	case !known:
		return 0, fmt.Errorf("%w: unknown model %q (valid: %s)", cmdline.ErrUsage, c.Model, ModelNames())
	case c.Timeout < 0:
		return 0, fmt.Errorf("%w: --check-timeout %s: want 0 (no limit) or more", cmdline.ErrUsage, c.Timeout)
	}
	fi, err := os.Stat(c.File)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
	}
	if fi.IsDir() {
		return 0, fmt.Errorf("%w: %s is a directory, not a Jepsen history", cmdline.ErrUsage, c.File)
	}
	opts := checkers.Options{Timeout: c.Timeout, MemoryBudget: c.Memory}
	var viz *vizFile
	if c.Viz != "" {
		if viz, err = newVizFile(c.Viz, c.File, fi, c.Force); err != nil {
			return 0, err
		}
		defer viz.discard()
		opts.VisualizationPath = viz.tmp
	}
	var check func() checkers.KeyedResult
	switch c.Model {
	case checkers.ModelCASRegister:
		ops, err := ReadRegisterLogContext(ctx, c.File)
		if err != nil {
			return cmdline.ReadFailed(ctx, c.File, err)
		}
		check = func() checkers.KeyedResult { return checkers.CheckRegister(ops, opts) }
	default:
		ops, err := ReadKVContext(ctx, c.File)
		if err != nil {
			return cmdline.ReadFailed(ctx, c.File, err)
		}
		check = func() checkers.KeyedResult { return checkers.CheckKV(ops, opts) }
	}

	// The check stops at its time limit; Ctrl-C stops waiting for it.
	done := make(chan checkers.KeyedResult, 1)
	go func() { done <- check() }()
	var res checkers.KeyedResult
	select {
	case res = <-done:
	case <-ctx.Done():
		fmt.Fprintf(stdout, "%s  %s (jepsen %s history): interrupted before the check finished\n", checkers.Unknown, c.File, c.Model)
		return cmdline.ExitUnknown, nil
	}
	if viz != nil && res.Visualization != "" {
		// Put in place only once the check wrote it whole.
		if err := viz.commit(); err != nil {
			return 0, err
		}
	}
	fmt.Fprintf(stdout, "%s  %s (jepsen %s history)\n", res.Valid, c.File, c.Model)
	fmt.Fprint(stdout, summary(res, c.Viz))
	if res.Ops == 0 && fi.Size() > 0 {
		fmt.Fprintf(stdout, "  note             no operation in the file's %d bytes: is it a %s history?\n", fi.Size(), c.Model)
	}
	return res.Valid.ExitCode(), nil
}

// summary writes what the check found, with its figures.
func summary(r checkers.KeyedResult, viz string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  linearizable     %s\n", r.Message)
	if r.Error != "" {
		fmt.Fprintf(&b, "  error            %s\n", r.Error)
	}
	fmt.Fprintf(&b, "  operations       %d", r.Ops)
	if r.Ops > 0 {
		fmt.Fprintf(&b, ": %d checked", r.Checked)
		if r.Info > 0 {
			fmt.Fprintf(&b, " (%d of them info: maybe, at any time after their call)", r.Info)
		}
		if r.Dropped > 0 {
			fmt.Fprintf(&b, ", %d left out (failed, or reads with an unknown outcome)", r.Dropped)
		}
	}
	fmt.Fprintf(&b, "\n  keys             %d, %d checked to the end", r.Keys, r.KeysChecked)
	if r.Valid == checkers.Invalid && (r.Keys > 1 || r.FailingKey != "") {
		fmt.Fprintf(&b, "; failing key %q", r.FailingKey)
	}
	fmt.Fprintf(&b, "\n  check time       %s\n", r.Elapsed.Round(time.Microsecond))
	// What judged the keys (the frontier search says when it did), once
	// something was to be judged.
	if r.Method != "" || r.Ops > 0 && r.Error == "" && !strings.HasPrefix(r.Message, "cannot tell") {
		method := r.Method
		if method == "" {
			method = checkers.MethodPorcupine
		}
		fmt.Fprintf(&b, "  method           %s\n", method)
	}
	if r.Valid == checkers.Invalid && strings.Contains(r.Message, "called at") {
		fmt.Fprintf(&b, "  times            the history's line numbers: an operation is called at its :invoke line\n")
	}
	if r.Visualization != "" {
		fmt.Fprintf(&b, "  visualization    %s\n", viz)
	}
	return b.String()
}

// vizFile is where --viz goes: the check writes a temporary file beside
// it, which commit renames into place.
type vizFile struct {
	path, tmp string
	force     bool
}

// newVizFile refuses a --viz path that is the history itself (by
// os.SameFile: another name, a link), a directory, or, without force, any
// existing file; it creates the temporary file in the same directory.
// Refusals are usage errors (exit 254).
func newVizFile(path, history string, hist os.FileInfo, force bool) (*vizFile, error) {
	if st, err := os.Stat(path); err == nil {
		switch {
		case os.SameFile(st, hist):
			return nil, fmt.Errorf("%w: --viz %s is the history %s itself: refusing to write over an input", cmdline.ErrUsage, path, history)
		case st.IsDir():
			return nil, fmt.Errorf("%w: --viz %s is a directory", cmdline.ErrUsage, path)
		case !force:
			return nil, fmt.Errorf("%w: --viz %s exists: refusing to overwrite it (--force replaces it)", cmdline.ErrUsage, path)
		}
	} else if _, lerr := os.Lstat(path); lerr == nil && !force {
		return nil, fmt.Errorf("%w: --viz %s exists (a link to nothing): refusing to replace it (--force replaces it)", cmdline.ErrUsage, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: --viz %s: %w", cmdline.ErrUsage, path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("%w: --viz %s: cannot write in its directory: %w", cmdline.ErrUsage, path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("--viz %s: %w", path, err)
	}
	return &vizFile{path: path, tmp: f.Name(), force: force}, nil
}

// commit puts the written visualization in place. Without force it never
// replaces a file, not even one that appeared during the check.
func (v *vizFile) commit() error {
	if err := os.Chmod(v.tmp, 0o644); err != nil {
		return fmt.Errorf("--viz: %w", err)
	}
	if v.force {
		if err := os.Rename(v.tmp, v.path); err != nil {
			return fmt.Errorf("--viz: %w", err)
		}
		return nil
	}
	err := os.Link(v.tmp, v.path)
	switch {
	case err == nil:
		return os.Remove(v.tmp)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%w: --viz %s appeared during the check: refusing to overwrite it (--force replaces it)", cmdline.ErrUsage, v.path)
	}
	// A file system without hard links: rename, if the path is still free.
	if _, lerr := os.Lstat(v.path); lerr == nil {
		return fmt.Errorf("%w: --viz %s appeared during the check: refusing to overwrite it (--force replaces it)", cmdline.ErrUsage, v.path)
	}
	if err := os.Rename(v.tmp, v.path); err != nil {
		return fmt.Errorf("--viz: %w", err)
	}
	return nil
}

// discard removes the temporary file, if it is still there.
func (v *vizFile) discard() { os.Remove(v.tmp) }
