package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// IndexFile is the index of a results directory, at its root.
const IndexFile = "index.html"

// RunSummary is one run in the index.
type RunSummary struct {
	// Path is the run directory relative to the results root, with
	// slashes: NAME/STAMP.
	Path    string
	Name    string
	Stamp   string
	Started time.Time
	Verdict string // valid, invalid, unknown, or "running" without results
	Target  string
	Fencing string
	Nemesis string
	Faults  int
	// Acknowledged and Lost are lock-append's figures (0 otherwise).
	Acknowledged, Lost int
	FenceRejections    int
	Elapsed            string
	Interrupted        bool
	HasReport          bool
	// HasResults and HasHistory: the run holds results.json and
	// history.jsonl (the index links only the files there are).
	HasResults, HasHistory bool
	Workload               string
	Err                    string
	// Expected: the run is not judged, so an invalid verdict is what it
	// shows, not a failure: an unfenced cell of the matrix whose results
	// directory this is (its matrix.json says must_be_valid false), or,
	// in a directory without a matrix.json, an unfenced run of a workload
	// other than register. The index shows it in a neutral colour.
	Expected bool
}

// ExpectedInvalid reports whether the run is invalid and not judged: the
// index shows it in a neutral colour, not the red of a failure.
func (r RunSummary) ExpectedInvalid() bool { return r.Expected && r.Verdict == "invalid" }

// UnfencedFinding reports whether a run of this fencing mode and workload
// is not judged outside a matrix: an unfenced run of any workload but
// register, whose lost updates are what it exists to show. The index (in a
// directory without a matrix.json) and a run's report both decide by it.
func UnfencedFinding(fencing, workload string) bool {
	return fencing == "none" && workload != "register"
}

// LostPercent is Lost / Acknowledged in percent.
func (r RunSummary) LostPercent() string {
	if r.Acknowledged == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(r.Lost)/float64(r.Acknowledged))
}

// ScanRuns lists the runs under a results directory (RESULTS/NAME/STAMP
// holding a history or results), newest first. A run whose files cannot be
// read is listed with the error. It reads through an os.Root (ScanRoot).
func ScanRuns(root string) ([]RunSummary, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer r.Close()
	return ScanRoot(r)
}

// ScanRoot is ScanRuns on an open results directory: every file is read
// through root, so that no symbolic link (a results.json, a run, a name)
// leads the index out of it, and only regular files are read (a FIFO
// would block).
func ScanRoot(root *os.Root) ([]RunSummary, error) {
	return scanRoot(root, nil)
}

// indexCache keeps each run's summary with the files it was made from, so
// that an index request reads only the runs that changed since the last
// one (a server's index is made for every request).
type indexCache struct {
	mu   sync.Mutex
	runs map[string]cachedSummary
}

type cachedSummary struct {
	key string
	sum RunSummary
}

// runKey identifies what a run's summary is made from: the size, time and
// type of each file summarize looks at.
func runKey(root *os.Root, dir string) string {
	var b strings.Builder
	for _, f := range []string{store.TestFile, store.ResultsFile, store.ReportFile} {
		if st, err := root.Lstat(dir + "/" + f); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d:%s;", f, st.Size(), st.ModTime().UnixNano(), st.Mode().Type())
		}
	}
	return b.String()
}

// scanRoot is ScanRoot with a cache (nil: none).
func scanRoot(root *os.Root, cache *indexCache) ([]RunSummary, error) {
	fsys := root.FS()
	names, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var runs []RunSummary
	seen := map[string]cachedSummary{}
	for _, n := range names {
		if !n.IsDir() || n.Name() == store.Latest || store.ValidName(n.Name()) != nil {
			continue
		}
		stamps, err := fs.ReadDir(fsys, n.Name())
		if err != nil {
			continue
		}
		for _, s := range stamps {
			if !s.IsDir() || !fs.ValidPath(s.Name()) {
				continue
			}
			dir := n.Name() + "/" + s.Name()
			if !isRunDir(root, dir) {
				continue
			}
			if cache == nil {
				runs = append(runs, summarize(root, dir, n.Name(), s.Name()))
				continue
			}
			key := runKey(root, dir)
			cache.mu.Lock()
			c, ok := cache.runs[dir]
			cache.mu.Unlock()
			if !ok || c.key != key {
				c = cachedSummary{key: key, sum: summarize(root, dir, n.Name(), s.Name())}
			}
			seen[dir] = c
			runs = append(runs, c.sum)
		}
	}
	if cache != nil {
		cache.mu.Lock()
		cache.runs = seen // runs removed since are forgotten
		cache.mu.Unlock()
	}
	markExpected(root, runs)
	slices.SortStableFunc(runs, func(a, b RunSummary) int {
		if c := cmp.Compare(b.Stamp, a.Stamp); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return runs, nil
}

// markExpected marks the runs that are not judged (RunSummary.Expected):
// by the matrix.json at the root when there is one, else by their fencing.
func markExpected(root *os.Root, runs []RunSummary) {
	night, err := trends.ReadNight(root, ".")
	if err != nil {
		if !errors.Is(err, trends.ErrNoMatrix) {
			return // a matrix.json that does not read: judge every run
		}
		for i := range runs {
			runs[i].Expected = UnfencedFinding(runs[i].Fencing, runs[i].Workload)
		}
		return
	}
	judged := make(map[string]bool, len(night.Cells))
	for _, c := range night.Cells {
		if c.Run != "" {
			judged[c.Run] = c.MustBeValid
		}
	}
	for i := range runs {
		if mustBe, ok := judged[runs[i].Path]; ok {
			runs[i].Expected = !mustBe
		}
	}
}

// isRunDir reports whether dir (relative to root) is a run directory: it
// holds a history, results or a configuration.
func isRunDir(root *os.Root, dir string) bool {
	for _, f := range []string{store.HistoryFile, store.ResultsFile, store.TestFile} {
		if st, err := root.Stat(dir + "/" + f); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// MaxIndexRead bounds what the index reads of one file (a run's test.json
// or results.json): a larger one is listed with an error, not read.
var MaxIndexRead int64 = 32 << 20

// indexReads counts the files readIn read (tests check the cache with it).
var indexReads atomic.Int64

// readIn reads a regular file of at most MaxIndexRead bytes through root,
// without blocking on anything else (a FIFO is refused, not opened for a
// writer to come).
func readIn(root *os.Root, name string) ([]byte, error) {
	f, err := openRegular(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxIndexRead {
		return nil, fmt.Errorf("%d bytes, more than the index reads (%d)", st.Size(), MaxIndexRead)
	}
	indexReads.Add(1)
	b, err := io.ReadAll(io.LimitReader(f, MaxIndexRead+1))
	if err == nil && int64(len(b)) > MaxIndexRead {
		err = fmt.Errorf("grew past %d bytes while read", MaxIndexRead)
	}
	return b, err
}

// openRegular opens a regular file through root without blocking: a FIFO
// or a device is refused (open(2) of a FIFO waits for a writer, and a
// request that waits holds a file descriptor).
func openRegular(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	return f, nil
}

func summarize(root *os.Root, dir, name, stamp string) RunSummary {
	r := RunSummary{Path: name + "/" + stamp, Name: name, Stamp: cut(stamp, MaxName), Verdict: "running"}
	if t, err := time.Parse(store.StampLayout, stamp); err == nil {
		r.Started = t
	}
	var test store.TestInfo
	switch b, err := readIn(root, dir+"/"+store.TestFile); {
	case err == nil:
		if err := json.Unmarshal(b, &test); err != nil {
			r.Err = store.TestFile + ": " + cut(err.Error(), MaxText)
		}
		r.Target = cut(strings.TrimSpace(test.Target+" "+test.TargetVersion), MaxName)
		r.Fencing, r.Nemesis, r.Workload = cut(test.Fencing, MaxName), cut(test.Nemesis, MaxName), cut(test.Workload, MaxName)
		if !test.Started.IsZero() {
			r.Started = test.Started
		}
	case !errors.Is(err, fs.ErrNotExist):
		r.Err = store.TestFile + ": " + cut(err.Error(), MaxText)
	}
	for _, f := range []struct {
		name string
		has  *bool
	}{{store.ReportFile, &r.HasReport}, {store.ResultsFile, &r.HasResults}, {store.HistoryFile, &r.HasHistory}} {
		if st, err := root.Stat(dir + "/" + f.name); err == nil && st.Mode().IsRegular() {
			*f.has = true
		}
	}
	b, err := readIn(root, dir+"/"+store.ResultsFile)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.Err = strings.TrimSpace(r.Err + " " + store.ResultsFile + ": " + cut(err.Error(), MaxText))
			r.Verdict = "unknown"
		}
		return r
	}
	var res store.Results
	if err := json.Unmarshal(b, &res); err != nil {
		r.Err = store.ResultsFile + ": " + cut(err.Error(), MaxText)
		r.Verdict = "unknown"
		return r
	}
	sum := res.Result.Summary()
	r.Verdict = sum.Verdict.String()
	if res.Workload != "" {
		r.Workload = cut(res.Workload, MaxName)
	}
	if sum.Updates {
		r.Acknowledged, r.Lost = sum.Acknowledged, sum.Lost
	}
	r.FenceRejections, r.Faults, r.Elapsed, r.Interrupted = sum.FenceRejections, len(res.Faults), cut(res.Elapsed, MaxName), res.Interrupted
	return r
}

type indexPage struct {
	Root  string
	Runs  []RunSummary
	Count map[string]int
	Now   string
}

// RenderIndex writes the index of runs to w; root is shown as the title.
func RenderIndex(w io.Writer, root string, runs []RunSummary) error {
	p := indexPage{Root: root, Runs: runs, Count: map[string]int{}, Now: time.Now().UTC().Format("2006-01-02 15:04:05Z")}
	for _, r := range runs {
		if r.ExpectedInvalid() {
			p.Count["expected"]++
			continue
		}
		p.Count[r.Verdict]++
	}
	if err := indexTmpl.Execute(w, p); err != nil {
		return fmt.Errorf("report: index: %w", err)
	}
	return nil
}

// WriteIndex writes index.html at the root of a results directory, listing
// every run under it. It replaces the file atomically, so that two runs that
// finish together each leave a whole index.
func WriteIndex(root string) error {
	runs, err := ScanRuns(root)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	abs, _ := filepath.Abs(root)
	if err := RenderIndex(&buf, abs, runs); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(root, ".index-*.tmp")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if err := cmp.Or(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(root, IndexFile)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

var indexTmpl = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>fencecheck runs: {{.Root}}</title>
<style>` + css + `
td.v{width:110px}.verdict.running,.verdict.expected{background:#667085}.verdict{font-size:12px;padding:1px 8px}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td,th{white-space:nowrap}td.wrap{white-space:normal}
tr:hover td{background:#f7f9ff}
</style></head><body>
<header class="top"><div class="in">
<h1>fencecheck runs</h1>
<p class="sub"><code>{{.Root}}</code></p>
<div class="cards">
<div class="card"><div class="l">runs</div><div class="v">{{len .Runs}}</div></div>
<div class="card bad"><div class="l">invalid</div><div class="v">{{index .Count "invalid"}}</div></div>
{{with index .Count "expected"}}<div class="card"><div class="l">invalid as expected (unfenced)</div><div class="v">{{.}}</div></div>{{end}}
<div class="card good"><div class="l">valid</div><div class="v">{{index .Count "valid"}}</div></div>
<div class="card warn"><div class="l">unknown</div><div class="v">{{index .Count "unknown"}}</div></div>
</div></div></header>
<main>
{{if .Runs}}<table id="runs"><tr><th>verdict</th><th>run</th><th>started (UTC)</th><th>target</th><th>fencing</th><th>nemesis</th><th class="num">faults</th><th class="num">lost</th><th class="num">lost %</th><th class="num">fence rejections</th><th>time</th><th>files</th></tr>
{{range .Runs}}<tr>
<td class="v">{{if .ExpectedInvalid}}<span class="verdict invalid expected" title="not judged: an unfenced run's lost updates show what fencing is for">invalid (expected)</span>{{else}}<span class="verdict {{.Verdict}}">{{.Verdict}}</span>{{end}}</td>
<td>{{if .HasReport}}<a href="{{.Path}}/report.html">{{.Name}}</a>{{else}}{{.Name}}{{end}}{{if .Interrupted}} <span class="muted">(interrupted)</span>{{end}}{{with .Err}} <span class="note">{{.}}</span>{{end}}</td>
<td>{{if not .Started.IsZero}}{{.Started.UTC.Format "2006-01-02 15:04:05"}}{{else}}{{.Stamp}}{{end}}</td>
<td>{{.Target}}</td><td>{{.Fencing}}</td><td class="wrap">{{.Nemesis}}</td>
<td class="num">{{.Faults}}</td>
<td class="num">{{if .Acknowledged}}{{.Lost}} of {{.Acknowledged}}{{else}}-{{end}}</td>
<td class="num">{{.LostPercent}}</td>
<td class="num">{{.FenceRejections}}</td>
<td>{{.Elapsed}}</td>
<td>{{if .HasResults}}<a href="{{.Path}}/results.json">results</a>{{end}}{{if and .HasResults .HasHistory}} · {{end}}{{if .HasHistory}}<a href="{{.Path}}/history.jsonl">history</a>{{end}}</td>
</tr>
{{end}}</table>
{{else}}<p>No runs yet.</p>{{end}}
<p class="muted">Written {{.Now}} by fencecheck; newest first.</p>
</main></body></html>
`))
