package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/sparse"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Bounds and names of merge's input.
const (
	// maxMergeCells bounds a merged matrix's cells (a shard's total_cells):
	// trends reads no night of more.
	maxMergeCells = trends.MaxCells
	// maxRunDepth bounds how deep merge copies into a run directory (it
	// holds logs/ and nothing deeper).
	maxRunDepth = 16
)

// mergeOwnFiles are the files at the root of merge's output (and of a
// root of nights): no run may be named after one.
var mergeOwnFiles = []string{File, JUnitFile, report.IndexFile, report.TrendsFile, trends.JSONFile}

// mergeRun is a cell's run to copy: from SHARD/NAME/STAMP to
// OUT/NAME/STAMP.
type mergeRun struct {
	shard       string // the shard's directory, as given
	cell        int
	name, stamp string
}

func (r mergeRun) String() string { return r.name + "/" + r.stamp }

// Merge does merge's work and returns the merged summary; it tells
// warn of what it leaves out of a run (links, devices). Shards must come
// from the same matrix (the same cells at the same positions).
//
// A shard's matrix.json is input from elsewhere, checked before anything
// is written (an error wrapping errUsage, exit 254, naming the shard and
// the cell):
//   - it is a regular file of at most trends.MaxMatrixBytes;
//   - total_cells is between 0 and maxMergeCells and the same in every
//     shard, and the cells are exactly those of the shard it says it is
//     ("I/N": cells I-1, I-1+N, ... below total_cells; "cells 3,5": those
//     that are below total_cells, as matrix --cell ran them; none, or
//     "merged from ...": every cell), each once. Nothing is allocated or written
//     from a count the file claims that its cells do not bear out;
//   - a cell's run is NAME/STAMP: a run name (store.ValidName, not one of
//     the files merge writes) and a stamp as store.NewRun writes it; both
//     are directories in the shard, not links, checked one element at a
//     time (os.Lstat) and opened as what was checked. A cell whose run
//     directory is missing is bad input;
//   - no two cells share a run, and no run is in the output already:
//     a run already in OUT is never changed; the merge is refused (merge
//     into a new directory). A link in OUT where a run's NAME goes is
//     refused too.
//
// A cell that more than one shard directory holds (a CI re-run's
// results downloaded beside the first attempt's) is taken from the newest
// copy that ran (gathered.cell), and recorded in the merged matrix's
// Duplicates with the copies left out.
//
// A merge with no cell to judge (none at all, or none that must be valid)
// is refused as matrix refuses one. Runs are copied without following a
// link: regular files (new, O_EXCL, with their mode bits but at most
// 0644) and directories; links and other files are left out and reported
// to warn. If copying fails, the runs this merge made are removed again.
// matrix.json, matrix-junit.xml and index.html are replaced through
// temporary files: a link at their names is replaced, never written
// through.
func Merge(out string, dirs []string, warn io.Writer) (trends.Matrix, error) {
	g := gathered{out: out, warn: warn, total: -1, byCell: map[int]trends.MatrixCell{}, runOf: map[int]mergeRun{}, copyOf: map[int]trends.CellCopy{}, dups: map[int]*trends.Duplicate{}}
	for _, d := range dirs {
		if err := g.shard(d); err != nil {
			return trends.Matrix{}, err
		}
	}
	merged := g.merged
	merged.TotalCells = g.total
	merged.Shard = fmt.Sprintf("merged from %d shard directories", len(dirs))
	judged := false
	for i := 0; i < g.total; i++ { // total is bounded, and checked against each shard's cells
		c, ok := g.byCell[i]
		if !ok {
			// No shard ran it: unknown, whatever it was.
			c = trends.MatrixCell{Cell: i, Verdict: "not run", MustBeValid: true, Error: "no shard directory has this cell"}
		}
		judged = judged || c.MustBeValid
		merged.Cells = append(merged.Cells, c)
		if d := g.dups[i]; d != nil {
			merged.Duplicates = append(merged.Duplicates, *d)
		}
	}
	if !judged {
		return trends.Matrix{}, badMerge("no cell would be judged in %s (unfenced cells, and register cells in a read mode the target does not promise linearizable, are reported, not judged)", strings.Join(dirs, ", "))
	}
	runs, err := g.runs()
	if err != nil {
		return trends.Matrix{}, err
	}
	merged.ExitCode = Exit(merged.Cells, false)
	if err := writeMerged(out, runs, merged, warn); err != nil {
		return trends.Matrix{}, err
	}
	return merged, nil
}

// badMerge is merge's error for bad input (exit 254).
func badMerge(format string, a ...any) error {
	return fmt.Errorf("%w: merge: %s", errUsage, fmt.Sprintf(format, a...))
}

// gathered is what Merge read from the shards so far.
type gathered struct {
	out    string
	warn   io.Writer     // told of shards run with other arguments
	first  string        // the first shard, whose arguments the merge records
	merged trends.Matrix // its start, strictness and arguments
	total  int           // the matrix's cells (-1 before the first shard)
	byCell map[int]trends.MatrixCell
	runOf  map[int]mergeRun // by cell, the run to copy
	copyOf map[int]trends.CellCopy
	dups   map[int]*trends.Duplicate // cells held by more than one shard
}

// shard reads shard d's matrix.json, checks it against the shards read
// before and takes its cells (see Merge).
func (g *gathered) shard(d string) error {
	s, err := readShardMatrix(d)
	if err != nil {
		return err
	}
	if s.TotalCells < 0 || s.TotalCells > maxMergeCells {
		return badMerge("%s: total_cells %d: a matrix has 0 to %d cells", d, s.TotalCells, maxMergeCells)
	}
	switch {
	case g.total == -1:
		g.total = s.TotalCells
		g.merged.Started, g.merged.Strict, g.merged.Args = s.Started, s.Strict, withoutShard(s.Args)
		g.first = d
	case s.TotalCells != g.total:
		return badMerge("%s has %d cells in its matrix, an earlier shard %d: not shards of one matrix", d, s.TotalCells, g.total)
	default:
		// The same cells run with other arguments (a re-run of a cell
		// from a pipeline without the night's variables): merged, and said.
		if args := withoutShard(s.Args); s.Strict != g.merged.Strict || !slices.Equal(args, g.merged.Args) {
			fmt.Fprintf(g.warn, "fencecheck merge: %s ran with other arguments than %s (%s; strict %v), which the merged matrix.json records (%s; strict %v)\n",
				safetext.Message(d), safetext.Message(g.first), safetext.Text(strings.Join(args, " "), 512), s.Strict, safetext.Text(strings.Join(g.merged.Args, " "), 512), g.merged.Strict)
		}
	}
	sh, err := shardOfMatrix(s.Shard)
	if err != nil {
		return badMerge("%s: %v", d, err)
	}
	if n := len(sh.Cells); n > 0 && sh.Cells[n-1] >= g.total {
		return badMerge("%s: %s of a matrix of %d cells: matrix --cell runs only cells the matrix has", d, sh, g.total)
	}
	if want := sh.count(g.total); len(s.Cells) != want {
		return badMerge("%s: shard %s of a matrix of %d cells holds %d cells, its %s lists %d", d, sh, g.total, want, File, len(s.Cells))
	}
	if s.Started.Before(g.merged.Started) {
		g.merged.Started = s.Started
	}
	seen := map[int]bool{}
	for _, c := range s.Cells {
		switch {
		case c.Cell < 0 || c.Cell >= g.total:
			return badMerge("%s: cell %d of a matrix of %d", d, c.Cell, g.total)
		case !sh.Has(c.Cell):
			return badMerge("%s: cell %d is not one of shard %s's", d, c.Cell, sh)
		case seen[c.Cell]:
			return badMerge("%s: cell %d is listed twice", d, c.Cell)
		}
		seen[c.Cell] = true
		if err := g.cell(d, s.Started, c); err != nil {
			return err
		}
	}
	return nil
}

// cell takes shard d's cell c (d's matrix started at started), unless
// another shard's copy of it is to be kept: when two shard directories
// hold the same cell (a re-run's artifacts downloaded beside the first
// attempt's), the newest copy that ran is kept, by the start of its run
// (its stamp; a cell without a run, by its shard's start). A copy that did
// not run ("not run") is kept only when no copy ran; of two that started
// at the same time, the first given. Every such cell is recorded in
// g.dups, with the copy kept and those left out.
func (g *gathered) cell(d string, started time.Time, c trends.MatrixCell) error {
	var r mergeRun
	if c.Run != "" {
		var err error
		if r, err = shardRun(d, c); err != nil {
			return err
		}
		if ts, err := time.Parse(store.StampLayout, r.stamp); err == nil { // checked by shardRun
			started = ts
		}
	}
	cp := trends.CellCopy{Shard: d, Run: c.Run, Started: started.UTC(), Verdict: c.Verdict}
	if prev, ok := g.byCell[c.Cell]; ok && !isPlaceholder(prev) {
		if isPlaceholder(c) {
			return nil // an earlier merge's "not run": the cell is prev
		}
		if CellKey(prev) != CellKey(c) {
			return badMerge("cell %d is %s in one shard and %s in %s: not shards of one matrix", c.Cell, CellKey(prev), CellKey(c), d)
		}
		old := g.copyOf[c.Cell]
		dup := g.dups[c.Cell]
		if dup == nil {
			dup = &trends.Duplicate{Cell: c.Cell, Kept: old}
			g.dups[c.Cell] = dup
		}
		ran, prevRan := c.Verdict != "not run", prev.Verdict != "not run"
		if (prevRan && !ran) || (prevRan == ran && !cp.Started.After(old.Started)) {
			dup.Dropped = append(dup.Dropped, cp)
			return nil // the copy kept so far ran and this one did not, or it is as new
		}
		dup.Dropped = append(dup.Dropped, old)
		dup.Kept = cp
	}
	c.RunDir = ""
	delete(g.runOf, c.Cell)
	if c.Run != "" {
		g.runOf[c.Cell] = r
		c.RunDir, _ = filepath.Abs(filepath.Join(g.out, r.name, r.stamp))
	}
	g.byCell[c.Cell] = c
	g.copyOf[c.Cell] = cp
	return nil
}

// runs are the runs to copy, in the cells' order: each once, none in the
// output already.
func (g *gathered) runs() ([]mergeRun, error) {
	var runs []mergeRun
	byPath := map[string]mergeRun{}
	for i := 0; i < g.total; i++ {
		r, ok := g.runOf[i]
		if !ok {
			continue
		}
		if prev, dup := byPath[r.String()]; dup {
			return nil, badMerge("%s: cell %d: run %s is also cell %d's (in %s)", r.shard, r.cell, r, prev.cell, prev.shard)
		}
		byPath[r.String()] = r
		if err := outputFree(g.out, r); err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// writeMerged copies the runs into out and writes the merged matrix's
// matrix.json, matrix-junit.xml and index.
func writeMerged(out string, runs []mergeRun, merged trends.Matrix, warn io.Writer) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := copyRuns(out, runs, warn); err != nil {
		if errors.Is(err, errUsage) {
			return err
		}
		return fmt.Errorf("%w: merge: %w", harness.ErrHarness, err)
	}
	b, err := merged.Encode()
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := trends.ReplaceFile(out, File, b); err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := WriteJUnit(out, merged.Cells); err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if err := report.WriteIndex(out); err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	return nil
}

// isPlaceholder reports whether c is merge's cell for a cell no shard ran
// (an earlier merge's output given as a shard holds them): no target.
func isPlaceholder(c trends.MatrixCell) bool { return c.Target == "" && c.Verdict == "not run" }

// readShardMatrix reads a shard's matrix.json: a regular file (opened
// without waiting on a FIFO) of at most trends.MaxMatrixBytes. Its errors
// wrap errUsage.
func readShardMatrix(d string) (trends.Matrix, error) {
	p := filepath.Join(d, File)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return trends.Matrix{}, fmt.Errorf("%w: merge: %s: %w (not a matrix's results directory?)", errUsage, d, err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return trends.Matrix{}, fmt.Errorf("%w: merge: %s: %w", errUsage, p, err)
	case !st.Mode().IsRegular():
		return trends.Matrix{}, fmt.Errorf("%w: merge: %s is not a regular file (%s)", errUsage, p, st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, trends.MaxMatrixBytes+1))
	switch {
	case err != nil:
		return trends.Matrix{}, fmt.Errorf("%w: merge: %s: %w", errUsage, p, err)
	case len(b) > trends.MaxMatrixBytes:
		return trends.Matrix{}, fmt.Errorf("%w: merge: %s is larger than %d bytes", errUsage, p, trends.MaxMatrixBytes)
	}
	s, err := trends.DecodeMatrix(b)
	if err != nil {
		return trends.Matrix{}, fmt.Errorf("%w: merge: %s: %w", errUsage, p, err)
	}
	return s, nil
}

// shardOfMatrix is the shard a matrix.json says it is: its "shard" field
// ("I/N", or "cells 3,5" for chosen cells: matrix --cell), or the whole
// matrix ("", or "merged from N shard directories").
func shardOfMatrix(v string) (Shard, error) {
	if v == "" || strings.HasPrefix(v, "merged from ") {
		return Shard{I: 1, N: 1}, nil
	}
	if strings.HasPrefix(v, "cells ") {
		return parseChosen(v)
	}
	sh, err := ParseShard(v)
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 1 <= I <= N <= 1000", v)
	}
	return sh, nil
}

// count is how many of a matrix's total cells are the shard's.
func (s Shard) count(total int) int {
	if s.Cells != nil {
		return len(s.Cells) // every one below total: checked before
	}
	if s.I > total {
		return 0
	}
	return (total-s.I)/s.N + 1
}

// splitRunPath checks a cell's run, NAME/STAMP: exactly two elements
// joined by one slash, NAME a run name (store.ValidName) that is not one
// of the files merge writes, STAMP a stamp as store.NewRun writes it.
func splitRunPath(run string) (name, stamp string, err error) {
	parts := strings.Split(run, "/")
	if len(parts) != 2 {
		return "", "", fmt.Errorf("want NAME/STAMP, a run directory of the shard")
	}
	name, stamp = parts[0], parts[1]
	if err := store.ValidName(name); err != nil {
		return "", "", err
	}
	if slices.Contains(mergeOwnFiles, name) {
		return "", "", fmt.Errorf("a run named %s would take the place of the merged matrix's own %s", name, name)
	}
	if ts, err := time.Parse(store.StampLayout, stamp); err != nil || ts.UTC().Format(store.StampLayout) != stamp {
		return "", "", fmt.Errorf("stamp %q: want a run's UTC time as %s", report.Clip(stamp, 64), store.StampLayout)
	}
	return name, stamp, nil
}

// shardRun checks cell c's run in shard d: its path (splitRunPath), and
// that it is a directory of the shard reached through directories only.
// Its errors wrap errUsage and name the shard and the cell.
func shardRun(d string, c trends.MatrixCell) (mergeRun, error) {
	name, stamp, err := splitRunPath(c.Run)
	if err != nil {
		return mergeRun{}, fmt.Errorf("%w: merge: %s: cell %d: run %q: %v", errUsage, d, c.Cell, report.Clip(c.Run, 256), err)
	}
	r := mergeRun{shard: d, cell: c.Cell, name: name, stamp: stamp}
	src, err := os.OpenRoot(d)
	if err != nil {
		return mergeRun{}, fmt.Errorf("%w: merge: %s: %w", errUsage, d, err)
	}
	defer src.Close()
	dir, err := openRunDir(src, name, stamp)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return mergeRun{}, fmt.Errorf("%w: merge: %s: cell %d: run %s: no such run directory in the shard", errUsage, d, c.Cell, r)
		}
		return mergeRun{}, fmt.Errorf("%w: merge: %s: cell %d: run %s: %w", errUsage, d, c.Cell, r, err) // a shard that cannot be read is bad input
	}
	dir.Close()
	return r, nil
}

// outputFree checks that r can be copied into out: OUT/NAME is missing or
// a directory (not a link), and OUT/NAME/STAMP is missing. Its errors wrap
// errUsage.
func outputFree(out string, r mergeRun) error {
	where := fmt.Sprintf("%s: cell %d: run %s", r.shard, r.cell, r)
	st, err := os.Lstat(filepath.Join(out, r.name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: merge: %s: %w", errUsage, where, err)
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: merge: %s: %s is a symbolic link: merge writes nothing through a link", errUsage, where, filepath.Join(out, r.name))
	case !st.IsDir():
		return fmt.Errorf("%w: merge: %s: %s is not a directory", errUsage, where, filepath.Join(out, r.name))
	}
	if _, err := os.Lstat(filepath.Join(out, r.name, r.stamp)); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: merge: %s is already in %s: merge never changes a run already in its output (merge into a new directory)", errUsage, where, out)
	}
	return nil
}

// What merge refuses in a run's path, or in what it copies: a shard's
// file (errLink, errNotDir, errChanged, errDeep) or the output (errThere).
// isRefused tells them from other errors (the file system failing).
var (
	errLink    = errors.New("is a symbolic link: merge follows none")
	errNotDir  = errors.New("is not a directory")
	errChanged = errors.New("changed while merge read it")
	errDeep    = fmt.Errorf("holds directories nested more than %d deep", maxRunDepth)
	errThere   = errors.New("is already there: merge never changes what its output holds")
)

func isRefused(err error) bool {
	return errors.Is(err, errLink) || errors.Is(err, errNotDir) || errors.Is(err, errChanged) || errors.Is(err, errDeep) || errors.Is(err, errThere)
}

// openDir opens the directory name (one path element) of parent without
// following a link: Lstat sees a directory, not a link, and what is opened
// is that very directory (os.SameFile). Its errors for a link, anything
// but a directory, or a swap are refusals (isRefused).
func openDir(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s %w", name, errLink)
	case !fi.IsDir():
		return nil, fmt.Errorf("%s %w", name, errNotDir)
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	st, err := sub.Stat(".")
	if err != nil || !os.SameFile(fi, st) {
		sub.Close()
		return nil, fmt.Errorf("%s %w", name, errChanged)
	}
	return sub, nil
}

// openRunDir opens NAME/STAMP of root one element at a time (openDir).
func openRunDir(root *os.Root, name, stamp string) (*os.Root, error) {
	n, err := openDir(root, name)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	return openDir(n, stamp)
}

// makeDir creates the directory name (one path element) of parent and
// opens it (openDir); with mayExist an existing directory (not a link)
// does too. Mkdir never follows a link at name.
func makeDir(parent *os.Root, name string, perm fs.FileMode, mayExist bool) (dir *os.Root, made bool, err error) {
	err = parent.Mkdir(name, perm)
	switch {
	case err == nil:
		made = true
	case errors.Is(err, fs.ErrExist) && mayExist:
	case errors.Is(err, fs.ErrExist):
		return nil, false, fmt.Errorf("%s %w", name, errThere)
	default:
		return nil, false, err
	}
	dir, err = openDir(parent, name)
	return dir, made, err
}

// copyRuns copies the runs from their shards into out (see mergeShards).
// If one fails, the runs it made are removed again (and the NAME
// directories it made, if empty).
func copyRuns(out string, runs []mergeRun, warn io.Writer) (err error) {
	dst, err := os.OpenRoot(out)
	if err != nil {
		return err
	}
	defer dst.Close()
	var made []string // in the order made
	defer func() {
		if err != nil {
			for i := len(made) - 1; i >= 0; i-- {
				if strings.Contains(made[i], "/") {
					dst.RemoveAll(made[i])
				} else {
					dst.Remove(made[i])
				}
			}
		}
	}()
	for _, r := range runs {
		where := fmt.Sprintf("%s: cell %d: run %s", r.shard, r.cell, r)
		src, err := os.OpenRoot(r.shard)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		err = func() error {
			defer src.Close()
			from, err := openRunDir(src, r.name, r.stamp)
			if err != nil {
				return err
			}
			defer from.Close()
			name, madeName, err := makeDir(dst, r.name, 0o755, true)
			if err != nil {
				return err
			}
			defer name.Close()
			if madeName {
				made = append(made, r.name)
			}
			st, err := from.Stat(".")
			if err != nil {
				return err
			}
			to, _, err := makeDir(name, r.stamp, dirPerm(st.Mode()), false)
			if err != nil {
				return err
			}
			defer to.Close()
			made = append(made, r.String())
			return copyDir(from, to, "", 0, func(p string, m fs.FileMode) {
				fmt.Fprintf(warn, "fencecheck merge: %s: not copied: %s (%s)\n", safetext.Message(where), safetext.Name(p), images.FileKind(m))
			})
		}()
		if err != nil {
			if isRefused(err) {
				return fmt.Errorf("%w: merge: %s: %w", errUsage, where, err)
			}
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

// CopyRun copies the run directory src into dst, a directory it makes
// (not there before), as merge copies a shard's run: directories and
// regular files only, never through or to a link, zeros left as holes,
// modes at most 0755 and 0644, at most maxRunDepth deep. What it leaves
// out (links, FIFOs, devices, sockets) is passed to skip, by its path in
// the run.
func CopyRun(src, dst string, skip func(string, fs.FileMode)) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer from.Close()
	st, err := from.Stat(".")
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, dirPerm(st.Mode())); err != nil {
		return err
	}
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	return copyDir(from, to, "", 0, skip)
}

// dirPerm is the mode of a copied directory: the original's bits, at most
// 0755, and at least the owner's.
func dirPerm(m fs.FileMode) fs.FileMode { return m.Perm()&0o755 | 0o700 }

// copyDir copies the regular files and directories of src into dst (both
// opened with openDir; rel is where they are in the run), never following
// a link: an entry is checked with Lstat and opened as what was checked.
// Links and other files are left out and passed to skip. It goes at most
// maxRunDepth directories deep.
func copyDir(src, dst *os.Root, rel string, depth int, skip func(string, fs.FileMode)) error {
	if depth > maxRunDepth {
		return fmt.Errorf("%s %w", rel, errDeep)
	}
	d, err := src.Open(".")
	if err != nil {
		return err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		p := path.Join(rel, name)
		fi, err := src.Lstat(name)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			from, err := openDir(src, name)
			if err != nil {
				return err
			}
			to, _, err := makeDir(dst, name, dirPerm(fi.Mode()), false)
			if err != nil {
				from.Close()
				return err
			}
			err = copyDir(from, to, p, depth+1, skip)
			from.Close()
			to.Close()
			if err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyRegular(src, dst, name, fi); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		default: // a link, a FIFO, a device, a socket
			skip(p, fi.Mode())
		}
	}
	return nil
}

// copyRegular copies the regular file name of src, which Lstat saw as fi,
// to a new file of dst (O_EXCL: never through a link, never over a file).
func copyRegular(src, dst *os.Root, name string, fi fs.FileInfo) error {
	in, err := src.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || !os.SameFile(fi, st) {
		return fmt.Errorf("%s %w", name, errChanged)
	}
	out, err := dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm()&0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s %w", name, errThere)
	}
	if err != nil {
		return err
	}
	// Zeros left as holes: a run that kept its servers' data
	// (--keep-data) holds preallocated files that are mostly zeros.
	_, _, werr := sparse.Copy(context.Background(), out, in, st.Size(), nil, nil)
	return errors.Join(werr, out.Close())
}

// withoutShard is a matrix's arguments without --shard and --results.
func withoutShard(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if name != a && (name == "shard" || name == "cell" || name == "results") {
			i++ // its value
			continue
		}
		if n, _, ok := strings.Cut(name, "="); ok && name != a && (n == "shard" || n == "cell" || n == "results") {
			continue
		}
		out = append(out, a)
	}
	return out
}
