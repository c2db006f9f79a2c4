package report

import (
	"bytes"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Server serves a results directory read-only over HTTP: the index of runs
// at / (made afresh for each request, so it lists runs as they finish) and
// the files of run directories (/NAME/STAMP/FILE, logs included), nothing
// else; /latest/... redirects to the newest run. Only GET and HEAD are
// allowed. Files, those the index reads included, are opened through an
// os.Root, so that no path, "..", or symbolic link reaches outside the
// directory, and only regular files are served, opened without blocking
// (a FIFO in a run directory is a 404, never a request that waits). The
// index reads at most MaxIndexRead bytes of a file, and keeps each run's
// summary until the run's files change.
type Server struct {
	root  *os.Root
	cache indexCache
}

// NewServer returns a Server for the results directory dir.
func NewServer(dir string) (*Server, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Server{root: r}, nil
}

// Close releases the directory.
func (s *Server) Close() error { return s.root.Close() }

// csp allows what the reports and Porcupine's page use (inline style and
// script, data: images) and nothing from anywhere.
const csp = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ServeHTTP serves the index or a run's file.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", "no-cache")

	p := r.URL.Path
	if p == "/" || p == "/"+IndexFile {
		s.serveIndex(w, r)
		return
	}
	segs, ok := cleanSegments(p)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if segs[0] == store.Latest {
		s.redirectLatest(w, r, segs[1:])
		return
	}
	if len(segs) == 2 || (len(segs) == 3 && segs[2] == "") {
		// A run directory itself: its report.
		if s.isRun(segs[0], segs[1]) {
			http.Redirect(w, r, "/"+segs[0]+"/"+segs[1]+"/"+store.ReportFile, http.StatusFound)
			return
		}
		http.NotFound(w, r)
		return
	}
	if len(segs) < 3 || !s.isRun(segs[0], segs[1]) || segs[len(segs)-1] == "" {
		http.NotFound(w, r)
		return
	}
	s.serveFile(w, r, strings.Join(segs, "/"))
}

// cleanSegments splits a URL path into its segments, refusing anything
// that is not a plain relative name: empty inner segments, ".", "..",
// names starting with a dot (temporary and hidden files), backslashes,
// NUL. A trailing slash gives a last empty segment.
func cleanSegments(p string) ([]string, bool) {
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return nil, false
	}
	segs := strings.Split(p[1:], "/")
	for i, sg := range segs {
		if sg == "" && i == len(segs)-1 && i > 0 {
			continue // a trailing slash
		}
		if sg == "" || sg[0] == '.' {
			return nil, false
		}
	}
	return segs, true
}

// isRun reports whether NAME/STAMP is a run directory.
func (s *Server) isRun(name, stamp string) bool {
	if store.ValidName(name) != nil {
		return false
	}
	for _, f := range []string{store.HistoryFile, store.ResultsFile, store.TestFile} {
		if st, err := s.root.Stat(name + "/" + stamp + "/" + f); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// redirectLatest sends /latest/REST to the newest run's /NAME/STAMP/REST.
func (s *Server) redirectLatest(w http.ResponseWriter, r *http.Request, rest []string) {
	target, err := s.root.Readlink(store.Latest)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	segs, ok := cleanSegments("/" + target)
	if !ok || len(segs) != 2 || !s.isRun(segs[0], segs[1]) {
		http.NotFound(w, r)
		return
	}
	file := strings.Join(rest, "/")
	if file == "" {
		file = store.ReportFile
	}
	http.Redirect(w, r, "/"+segs[0]+"/"+segs[1]+"/"+file, http.StatusFound)
}

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	runs, err := scanRoot(s.root, &s.cache)
	if err != nil {
		http.Error(w, "cannot read the results directory", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := RenderIndex(&buf, s.root.Name(), runs); err != nil {
		http.Error(w, "cannot render the index", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, IndexFile, time.Time{}, bytes.NewReader(buf.Bytes()))
}

// contentTypes fixes the types of the files a run holds, so that nothing is
// sniffed: history and logs are plain text.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".json":  "application/json",
	".jsonl": "text/plain; charset=utf-8",
	".log":   "text/plain; charset=utf-8",
	".txt":   "text/plain; charset=utf-8",
	".png":   "image/png",
	".svg":   "image/svg+xml",
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rel string) {
	f, err := openRegular(s.root, rel)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ct, ok := contentTypes[path.Ext(rel)]
	if !ok {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, path.Base(rel), st.ModTime(), f)
}
