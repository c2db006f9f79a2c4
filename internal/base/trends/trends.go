// Package trends follows a nightly matrix across nights. A night is one
// matrix's results directory (its matrix.json); a root of nights is a
// directory whose subdirectories are nights. A cell keeps its identity
// from night to night by its Key, and a Regression is a cell that got
// worse since the last night it ran: a cell that must be valid and was
// valid is now invalid, or an unfenced cell that lost updates now lost
// none (it stopped detecting what fencing is for).
//
// Everything is read through an os.Root, regular files only, each bounded
// in size, so that a root of nights downloaded from elsewhere cannot make
// the reader follow a link out of it, wait on a FIFO or run out of memory.
package trends

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// MatrixFile is a matrix's summary, at the root of its results directory.
const MatrixFile = "matrix.json"

// Errors. ErrNoMatrix: a directory holds no matrix.json and no night;
// ErrBadMatrix: a matrix.json that cannot be read as one; ErrUnjudged:
// the newest night of a root cannot be judged (see Unjudged).
var (
	ErrNoMatrix  = errors.New("no matrix")
	ErrBadMatrix = errors.New("bad matrix.json")
	ErrUnjudged  = errors.New("the newest night cannot be judged")
)

// Bounds on what is read.
const (
	// MaxMatrixBytes bounds one matrix.json (a matrix of 10,000 cells is
	// about 6 MB).
	MaxMatrixBytes = 16 << 20
	// MaxCells bounds the cells read from one night.
	MaxCells = 10_000
	// MaxScan bounds the nights a root is searched for: the last MaxScan
	// subdirectories by name.
	MaxScan = 1000
	// MaxTotalBytes and MaxTotalCells bound what Scan reads in all, newest
	// names first: nights past either are listed unread, with the reason.
	MaxTotalBytes = 256 << 20
	MaxTotalCells = 200_000
	// maxName bounds a name read from a file (a target, a nemesis, a
	// directory, a run path).
	maxName = 256
)

// Verdicts a cell can have in matrix.json.
const (
	Valid   = "valid"
	Invalid = "invalid"
	Unknown = "unknown"
	Error   = "error"   // the harness failed on the cell
	NotRun  = "not run" // interrupted, or no shard ran it
	// Refused: the cell's configuration cannot run, found once its run
	// began (a client program whose grants carry no fencing token, in a
	// token-fenced cell): nothing was tested, and nothing failed.
	Refused = "refused"
)

// Key identifies a cell across nights (MatrixCell.ID, numbered by
// ReadNight): its target (the name the matrix
// gave it, see Cell.Ran), workload ("" for lock-append, the only workload
// of matrices made before the register axis), resource, nemesis and
// fencing (a register cell's read mode), the other knobs the matrix varied
// (MatrixCell.AxesText: "" when none), and its run number (1 to --runs,
// in the matrix's order) among the cells with the same six. The seed is not part of it: a matrix run with --seed 0 picks
// new seeds every night, and its cells are still the same cells.
type Key struct {
	Target   string `json:"target"`
	Workload string `json:"workload,omitempty"`
	Resource string `json:"resource"`
	Nemesis  string `json:"nemesis"`
	Fencing  string `json:"fencing"`
	Axes     string `json:"axes,omitempty"`
	Run      int    `json:"run"`
}

// String is the key as one line: "redis lock-store pause-holder token #1",
// its axes after the mode ("... token ttl=1s #1"), without "#N" when Run
// is 0 (a cell's ID).
func (k Key) String() string {
	s := fmt.Sprintf("%s %s %s %s", k.Target, k.Resource, k.Nemesis, k.Fencing)
	if k.Workload != "" {
		s = fmt.Sprintf("%s %s %s %s %s", k.Target, k.Workload, k.Resource, k.Nemesis, k.Fencing)
	}
	if k.Axes != "" {
		s += " " + k.Axes
	}
	if k.Run != 0 {
		s += fmt.Sprintf(" #%d", k.Run)
	}
	return s
}

// Cell is one cell of one night, as its matrix.json records it.
type Cell struct {
	Key Key `json:"key"`
	// Ran is the target that ran, when the matrix named it otherwise
	// (matrix --target NAME=TARGET): the key keeps NAME.
	Ran         string `json:"ran,omitempty"`
	Seed        uint64 `json:"seed"`
	Verdict     string `json:"verdict"`
	MustBeValid bool   `json:"must_be_valid"`
	// Acknowledged and Lost count the run's acknowledged updates and those
	// lost; FirstLostS is when the first was lost (s since the start).
	Acknowledged int      `json:"acknowledged"`
	Lost         int      `json:"lost"`
	FirstLostS   *float64 `json:"first_lost_s,omitempty"`
	// OpsPerS is the acknowledged operations per second the clients ran,
	// when the matrix.json says (older ones do not).
	OpsPerS *float64 `json:"ops_per_s,omitempty"`
	// Run is the run's directory relative to its night's directory, with
	// slashes ("" when it has none).
	Run string `json:"run,omitempty"`
}

// RanToVerdict reports whether the cell ran to a verdict (valid, invalid or
// unknown), not an error or not run.
func (c Cell) RanToVerdict() bool {
	return c.Verdict == Valid || c.Verdict == Invalid || c.Verdict == Unknown
}

// Night is one matrix: a results directory with a matrix.json.
type Night struct {
	// Dir is the night's directory relative to the root of nights, with
	// slashes ("." for a matrix read on its own).
	Dir      string    `json:"dir"`
	Started  time.Time `json:"started"`
	ExitCode int       `json:"exit_code"`
	Cells    []Cell    `json:"cells"`
	// Err says why the night could not be read (it then has no cells).
	Err string `json:"error,omitempty"`
}

// byKey indexes the night's cells by key.
func (n Night) byKey() map[Key]Cell {
	m := make(map[Key]Cell, len(n.Cells))
	for _, c := range n.Cells {
		m[c.Key] = c
	}
	return m
}

// ReadNight reads the matrix.json of dir (relative to root, with slashes;
// "." for root itself). A cell without a target (merge's placeholder for a
// cell no shard ran) has no key and is left out: the night did not run it.
// The error wraps ErrNoMatrix when there is no matrix.json, ErrBadMatrix
// when it cannot be read as one.
func ReadNight(root *os.Root, dir string) (Night, error) {
	n := Night{Dir: dir}
	b, err := ReadBounded(root, dir+"/"+MatrixFile, MaxMatrixBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return n, fmt.Errorf("%w: %s has no %s", ErrNoMatrix, dir, MatrixFile)
	}
	if err != nil {
		return n, fmt.Errorf("%w: %s: %w", ErrBadMatrix, dir, err)
	}
	m, err := DecodeMatrix(b)
	if err != nil {
		return n, fmt.Errorf("%s/%s: %w", dir, MatrixFile, err)
	}
	n.Started, n.ExitCode = m.Started, m.ExitCode
	cells := slices.Clone(m.Cells)
	slices.SortStableFunc(cells, func(a, b MatrixCell) int { return cmp.Compare(a.Cell, b.Cell) })
	runs := map[Key]int{} // the run numbers given so far, by key without Run
	for _, fc := range cells {
		if fc.Target == "" {
			continue
		}
		k := fc.ID()
		runs[k]++
		k.Run = runs[k]
		c := Cell{Key: k, Seed: fc.Seed, Verdict: cut(fc.Verdict), MustBeValid: fc.MustBeValid,
			Acknowledged: fc.Acknowledged, Lost: fc.Lost, FirstLostS: fc.FirstLostS, OpsPerS: fc.Throughput()}
		if fc.Label != "" && fc.Label != fc.Target {
			c.Ran = cut(fc.Target)
		}
		if p := strings.Trim(fc.Run, "/"); p != "" && len(p) <= maxName && fs.ValidPath(p) {
			c.Run = p
		}
		n.Cells = append(n.Cells, c)
	}
	return n, nil
}

// Scan reads the nights under a root of nights: each subdirectory (not a
// link) that holds a matrix.json is one, ordered by its matrix's start
// (then by name), oldest first; the newest keep nights are returned (all
// with keep <= 0). A night whose matrix.json cannot be read is returned
// with its Err; it has no start, so it sorts first, whenever it ran: a
// caller that judges the newest night must ask Unjudged (on all the
// nights, keep <= 0) whether the last one is the newest. The error wraps
// ErrNoMatrix when there is no night at all.
func Scan(dir string, keep int) ([]Night, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMatrix, err)
	}
	defer root.Close()
	return ScanRoot(root, keep)
}

// ScanRoot is Scan on an open root.
func ScanRoot(root *os.Root, keep int) ([]Night, error) {
	return scanRoot(root, keep, MaxTotalBytes, MaxTotalCells)
}

// scanRoot is ScanRoot with its budgets: what it reads in all.
func scanRoot(root *os.Root, keep int, maxBytes int64, maxCells int) ([]Night, error) {
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMatrix, err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && fs.ValidPath(e.Name()) && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) > MaxScan {
		dirs = dirs[len(dirs)-MaxScan:] // ReadDir sorts by name
	}
	var nights []Night
	var bytes int64
	cells := 0
	for i := len(dirs) - 1; i >= 0; i-- { // newest names first, for the budgets
		d := dirs[i]
		st, err := root.Stat(d + "/" + MatrixFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var n Night
		switch {
		case err == nil && (bytes+st.Size() > maxBytes || cells >= maxCells):
			n.Err = fmt.Sprintf("not read: the nights' %s files hold more than %d bytes or %d cells in all", MatrixFile, maxBytes, maxCells)
		default:
			if err == nil {
				bytes += st.Size()
			}
			n, err = ReadNight(root, d)
			if err != nil {
				n.Err = cutN(err.Error(), 4*maxName)
			}
			cells += len(n.Cells)
		}
		n.Dir = cut(d)
		nights = append(nights, n)
	}
	if len(nights) == 0 {
		return nil, fmt.Errorf("%w: no subdirectory holds a %s", ErrNoMatrix, MatrixFile)
	}
	slices.SortStableFunc(nights, func(a, b Night) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.Dir, b.Dir))
	})
	if keep > 0 && len(nights) > keep {
		nights = nights[len(nights)-keep:]
	}
	return nights, nil
}

// Unjudged returns nil when the last of nights (a root's nights as Scan
// orders them, oldest first, none left out for keep) can be judged as the
// newest night, else an error wrapping ErrUnjudged that names the night
// and says why:
//
//   - the last night has no cell to judge: its matrix.json could not be
//     read (then no night could), lists no cell, or only cells no shard
//     ran;
//   - a night without a start (its matrix.json unreadable, or without
//     "started") has a name that sorts after the last night's. Nights are
//     ordered by their start, and such a night has none; by its name it
//     is newer (nights are named as they run: nights/<UTC stamp>), so the
//     last night may not be the newest, and the newest cannot be read.
//
// A night without a start whose name sorts before the last night's is an
// older night that went bad: it does not stop the newest being judged.
func Unjudged(nights []Night) error {
	if len(nights) == 0 {
		return fmt.Errorf("%w: there is no night", ErrUnjudged)
	}
	last := nights[len(nights)-1]
	switch {
	case last.Err != "":
		return fmt.Errorf("%w: night %s: %s", ErrUnjudged, last.Dir, last.Err)
	case len(last.Cells) == 0:
		return fmt.Errorf("%w: night %s has no cell that ran (its %s lists none, or only cells no shard ran)", ErrUnjudged, last.Dir, MatrixFile)
	}
	for _, n := range nights {
		if (n.Err != "" || n.Started.IsZero()) && n.Dir > last.Dir {
			why := n.Err
			if why == "" {
				why = MatrixFile + " has no start"
			}
			return fmt.Errorf("%w: night %s, whose name sorts after %s (the newest night that can be read), cannot be placed: %s", ErrUnjudged, n.Dir, last.Dir, why)
		}
	}
	return nil
}

// Baseline reads the matrix a new one is compared with: dir's own
// matrix.json if it has one, else the newest readable night under dir.
// The error wraps ErrNoMatrix when there is neither (dir missing
// included), ErrBadMatrix when dir's own matrix.json cannot be read.
func Baseline(dir string) (Night, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Night{}, fmt.Errorf("%w: %w", ErrNoMatrix, err)
	}
	defer root.Close()
	n, err := ReadNight(root, ".")
	if err == nil || !errors.Is(err, ErrNoMatrix) {
		return n, err
	}
	nights, err := ScanRoot(root, 0)
	if err != nil {
		return Night{}, fmt.Errorf("%s: %w", dir, err)
	}
	for i := len(nights) - 1; i >= 0; i-- {
		if nights[i].Err == "" {
			return nights[i], nil
		}
	}
	return Night{}, fmt.Errorf("%w: %s: no night's %s can be read (the newest: %s)", ErrNoMatrix, dir, MatrixFile, nights[len(nights)-1].Err)
}

// Regression kinds.
const (
	// FenceFailed: a cell that must be valid (a fenced one, or any with
	// --strict) was valid and is invalid.
	FenceFailed = "fence-failed"
	// StoppedDetecting: an unfenced cell lost updates and now, having run
	// to a verdict, lost none.
	StoppedDetecting = "stopped-detecting"
)

// Regression is a cell that got worse from one night (Was) to a later one
// (Now).
type Regression struct {
	Key     Key    `json:"key"`
	Kind    string `json:"kind"`
	Was     Cell   `json:"was"`
	Now     Cell   `json:"now"`
	WasDir  string `json:"was_night"`
	NowDir  string `json:"now_night"`
	Message string `json:"message"`
}

// Regressed returns the regression from was to now, if the cell regressed:
// now must be valid and was valid, and is invalid (FenceFailed); or now is
// not judged, lost updates before, and now ran to a verdict losing none
// (StoppedDetecting). A cell that now failed to run (error, not run) or
// whose verdict is unknown with a fence is not a regression here: the
// matrix's own exit code says so.
func Regressed(was, now Cell) (Regression, bool) {
	r := Regression{Key: now.Key, Was: was, Now: now}
	switch {
	case now.MustBeValid && was.Verdict == Valid && now.Verdict == Invalid:
		r.Kind = FenceFailed
		r.Message = fmt.Sprintf("must be valid: was valid, now invalid (lost %d of %d)", now.Lost, now.Acknowledged)
	case !now.MustBeValid && was.Lost > 0 && now.RanToVerdict() && now.Lost == 0:
		r.Kind = StoppedDetecting
		r.Message = fmt.Sprintf("unfenced: lost %d of %d before, now none of %d (%s): it stopped detecting", was.Lost, was.Acknowledged, now.Acknowledged, now.Verdict)
	default:
		return Regression{}, false
	}
	if now.Ran != was.Ran {
		r.Message += fmt.Sprintf(" (target %s, before %s)", cmp.Or(now.Ran, now.Key.Target), cmp.Or(was.Ran, was.Key.Target))
	}
	return r, true
}

// Comparison is a matrix compared with a baseline matrix, cell by cell.
type Comparison struct {
	// Baseline is the baseline's directory as given; BaselineNight its
	// night under it ("." when it is the matrix itself).
	Baseline        string       `json:"baseline"`
	BaselineNight   string       `json:"baseline_night"`
	BaselineStarted time.Time    `json:"baseline_started"`
	Compared        int          `json:"compared"`
	Regressions     []Regression `json:"regressions"`
	// New are cells the baseline lacks; Missing the baseline's cells that
	// this matrix lacks (neither is a regression).
	New     []Key `json:"new,omitempty"`
	Missing []Key `json:"missing,omitempty"`
}

// Compare compares now with the baseline was, cell by cell (by Key).
func Compare(was, now Night) Comparison {
	c := Comparison{BaselineNight: was.Dir, BaselineStarted: was.Started, Regressions: []Regression{}}
	before, after := was.byKey(), now.byKey()
	for _, n := range now.Cells {
		w, ok := before[n.Key]
		if !ok {
			c.New = append(c.New, n.Key)
			continue
		}
		c.Compared++
		if r, ok := Regressed(w, n); ok {
			r.WasDir, r.NowDir = was.Dir, now.Dir
			c.Regressions = append(c.Regressions, r)
		}
	}
	for _, w := range was.Cells {
		if _, ok := after[w.Key]; !ok {
			c.Missing = append(c.Missing, w.Key)
		}
	}
	return c
}

// ReadBounded reads a regular file through root, at most limit bytes (an
// error past it), without blocking on anything else.
func ReadBounded(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return b, nil
}

// cut bounds a name read from a file.
func cut(s string) string { return cutN(s, maxName) }

// cutN returns s cut to at most n bytes, on a rune boundary, followed by
// "…" when it was longer.
func cutN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := n
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return s[:c] + "…"
}
