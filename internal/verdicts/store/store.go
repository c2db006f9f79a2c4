// Package store is the store on disk: one directory per run, holding the
// configuration (test.json), the history (history.jsonl, and history.txt
// to read), the verdict
// (results.json), the reports (report.html, linearizability.html), the
// node logs (logs/) and, if kept, the nodes' data directories (data/).
// RESULTS/latest points at the newest run.
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// File names in a run directory.
const (
	TestFile    = "test.json"
	HistoryFile = "history.jsonl"
	// HistoryGz is the history gzipped, as a run directory may keep it
	// instead (a stored or shared run): history.ReadFile reads either.
	HistoryGz = HistoryFile + ".gz"
	// HistoryText is the history as text, one line an operation's
	// invocation or completion (history.WriteText), written with the
	// results by every run and every check.
	HistoryText = "history.txt"
	ResultsFile = "results.json"
	ReportFile  = "report.html"
	LinFile     = "linearizability.html"
	LogsDir     = "logs"
	// DataDir holds the nodes' data directories a run kept
	// (--keep-data), one directory per node: data/n1, ...
	DataDir = "data"
	Latest  = "latest"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// MaxNameLen bounds a run name: a path element holds 255 bytes on common
// file systems, and 200 leave room for the temporary names made beside it.
const MaxNameLen = 200

// ValidName reports whether name can name runs (a single path element of
// letters, digits, dot, dash and underscore, at most MaxNameLen bytes).
func ValidName(name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("run name of %d bytes (%.40s...): at most %d", len(name), name, MaxNameLen)
	}
	if !nameRE.MatchString(name) || name == Latest {
		return fmt.Errorf("run name %q: use letters, digits, '.', '-' and '_' (and not %q)", name, Latest)
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SafeName turns s (a --nemesis value, a matrix cell's parts) into part of
// a run name: each run of other characters one '-', none at either end.
func SafeName(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-") }

// Run is one run's directory.
type Run struct {
	Root string // the results directory
	Name string
	Dir  string // Root/Name/<UTC timestamp>
}

// NewRun creates RESULTS/NAME/<UTC timestamp>/ (and logs/ in it) and points
// RESULTS/latest at it. The directory is new: it is created exclusively,
// and when a run of the same name already has that millisecond's stamp
// (two runs started at once) the next free millisecond is taken, so that
// no run ever writes into another's directory.
func NewRun(root, name string, now time.Time) (*Run, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	parent := filepath.Join(root, name)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	var dir string
	for i := 0; ; i++ {
		dir = filepath.Join(parent, now.Add(time.Duration(i)*time.Millisecond).UTC().Format(StampLayout))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i >= maxStampTries {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, LogsDir), 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	r := &Run{Root: root, Name: name, Dir: dir}
	if err := r.pointLatest(); err != nil {
		return nil, err
	}
	return r, nil
}

// StampLayout is the layout of a run directory's name: its start, in UTC,
// to the millisecond.
const StampLayout = "20060102T150405.000Z"

// maxStampTries bounds how many later milliseconds NewRun tries when a
// run's stamp is taken.
const maxStampTries = 1000

// Open returns the run stored in dir: a directory holding a history,
// history.jsonl or history.jsonl.gz.
func Open(dir string) (*Run, error) {
	if _, err := os.Stat(filepath.Join(dir, HistoryFile)); err != nil {
		if _, gzErr := os.Stat(filepath.Join(dir, HistoryGz)); gzErr != nil {
			return nil, fmt.Errorf("%w: %s has no %s nor %s (%w)", ErrNoRun, dir, HistoryFile, HistoryGz, err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Root: filepath.Dir(filepath.Dir(abs)), Name: filepath.Base(filepath.Dir(abs)), Dir: abs}, nil
}

// Path is the path of a file in the run directory.
func (r *Run) Path(name string) string { return filepath.Join(r.Dir, name) }

// HistoryPath is the path of the run's history: history.jsonl, or, when
// the directory holds only history.jsonl.gz, that (history.ReadFile
// reads either).
func (r *Run) HistoryPath() string {
	if _, err := os.Lstat(r.Path(HistoryFile)); err != nil {
		if _, gzErr := os.Lstat(r.Path(HistoryGz)); gzErr == nil {
			return r.Path(HistoryGz)
		}
	}
	return r.Path(HistoryFile)
}

// tmpSeq numbers pointLatest's temporary links within the process.
var tmpSeq atomic.Int64

// pointLatest makes RESULTS/latest a relative symlink to this run.
func (r *Run) pointLatest() error {
	link := filepath.Join(r.Root, Latest)
	rel, err := filepath.Rel(r.Root, r.Dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// A temporary link of this run's own, so that two runs pointing
	// latest at once never remove each other's.
	tmp := fmt.Sprintf("%s.tmp.%d.%d", link, os.Getpid(), tmpSeq.Add(1))
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// WriteJSON writes v, indented, to the named file of the run, atomically.
func (r *Run) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("store: %s: %w", name, err)
	}
	return r.WriteFile(name, append(b, '\n'))
}

// WriteFile writes b to the named file of the run, atomically.
func (r *Run) WriteFile(name string, b []byte) error {
	p, err := r.Pend(name, b)
	if err != nil {
		return err
	}
	return p.Commit()
}

// Pending is a file of a run written under a temporary name beside its
// own (a hidden one: ".NAME.*.tmp"), put in place by Commit. Writing every
// output as Pending first, and committing them only once all are written,
// leaves the run's files as they were if anything fails on the way.
type Pending struct {
	tmp, path string
}

// Pend writes b to a new temporary file for the named file of the run.
func (r *Run) Pend(name string, b []byte) (*Pending, error) {
	p, _, err := r.PendStream(name, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	return p, err
}

// PendStream is Pend of what write writes, streamed to the file (through
// a buffer, never whole in memory), and the size it wrote.
func (r *Run) PendStream(name string, write func(io.Writer) error) (*Pending, int64, error) {
	path := r.Path(name)
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	cw := &countingWriter{w: f}
	werr := write(cw)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), 0o644)); err != nil {
		os.Remove(f.Name())
		return nil, 0, fmt.Errorf("store: %s: %w", name, err)
	}
	return &Pending{tmp: f.Name(), path: path}, cw.n, nil
}

// countingWriter counts what it passes on.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// Commit renames the temporary file into place.
func (p *Pending) Commit() error {
	if err := os.Rename(p.tmp, p.path); err != nil {
		os.Remove(p.tmp)
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Discard removes the temporary file (after Commit it does nothing).
func (p *Pending) Discard() { os.Remove(p.tmp) }

// IsResultsRoot reports whether dir is a results directory that fencecheck
// made: NewRun points its "latest" at a run inside it, with a relative
// symbolic link NAME/STAMP. Only such a directory gets an index of its runs;
// a run directory copied anywhere else is checked without scanning (or
// writing into) what lies two levels up.
func IsResultsRoot(dir string) bool {
	target, err := os.Readlink(filepath.Join(dir, Latest))
	if err != nil || !filepath.IsLocal(target) {
		return false
	}
	name, stamp, ok := strings.Cut(filepath.ToSlash(target), "/")
	return ok && ValidName(name) == nil && stamp != "" && !strings.Contains(stamp, "/")
}

// Bounds of the stored files a run's readers read (ReadJSON): a test.json
// is a few kilobytes, a results.json at most what serve's index reads of
// one file.
const (
	MaxTestSize = 1 << 20
	MaxJSONSize = 32 << 20
)

// ErrTooLarge: a stored file is larger than its bound.
var ErrTooLarge = errors.New("larger than its bound")

// ReadJSON reads the named file of the run into v, at most MaxTestSize
// bytes of test.json and MaxJSONSize of any other (ErrTooLarge). The file
// must be a regular file: a FIFO or a device is an error at once, not a
// wait.
func (r *Run) ReadJSON(name string, v any) error {
	limit := int64(MaxJSONSize)
	if name == TestFile {
		limit = MaxTestSize
	}
	b, err := readRegular(r.Path(name), limit)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("store: %s: %w", r.Path(name), err)
	}
	return nil
}

// ReadRegular reads a regular file of at most limit bytes, and refuses a
// FIFO (readRegular).
func ReadRegular(path string, limit int64) ([]byte, error) { return readRegular(path, limit) }

// readRegular reads a regular file of at most limit bytes: a larger one is
// ErrTooLarge, refused by its size before a byte is read, and the read
// itself stops past the bound (a file that grows meanwhile). It opens the
// file without blocking, so that a FIFO (which would wait for a writer) is
// found and refused.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	tooLarge := func(n int64) error {
		return fmt.Errorf("%s: %w: %d bytes or more, at most %d", path, ErrTooLarge, n, limit)
	}
	if st.Size() > limit {
		return nil, tooLarge(st.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, tooLarge(int64(len(b)))
	}
	return b, err
}

// ErrNoRun: a directory holds no run.
var ErrNoRun = errors.New("store: not a run directory")
