package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// listingEngine is a Docker Engine on a unix socket that lists nothing and
// records every request it gets: a command that reaches it would remove
// what it lists.
type listingEngine struct {
	sock string
	mu   sync.Mutex
	reqs []string
}

func newListingEngine(t *testing.T) *listingEngine {
	t.Helper()
	e := &listingEngine{sock: filepath.Join(t.TempDir(), "docker.sock")}
	ln, err := net.Listen("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.reqs = append(e.reqs, r.Method+" "+r.URL.String())
		e.mu.Unlock()
		w.Header().Set("Api-Version", "1.41")
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/containers/json"), strings.HasSuffix(r.URL.Path, "/networks"):
			json.NewEncoder(w).Encode([]any{})
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return e
}

func (e *listingEngine) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.reqs...)
}

// TestCleanRefusesPathLikeRunIDs (issue 48, item 1): clean --run takes a
// run id (8 hex digits) only. An empty or path-like one exits 254 before
// anything is touched: the Engine (a fake that records requests) hears
// nothing, and nothing under the sandboxed TMPDIR or above it goes (the
// old code removed TMPDIR for "..", its parent for "../..", and cleaned
// every run's containers and disks for "").
func TestCleanRefusesPathLikeRunIDs(t *testing.T) {
	sandbox := t.TempDir()
	tmp := filepath.Join(sandbox, "up", "tmp")
	for _, d := range []string{filepath.Join(tmp, "fencecheck-disks", "0123abcd", "n1"), filepath.Join(tmp, "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(sandbox, "victim"), filepath.Join(sandbox, "up", "victim"), filepath.Join(tmp, "victim"),
		filepath.Join(tmp, "fencecheck-disks", "0123abcd", "n1", "data")} {
		if err := os.WriteFile(f, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, sandbox)
	eng := newListingEngine(t)
	bin := fencecheckBinary(t)
	env := append(noDockerEnv(), "DOCKER_HOST=unix://"+eng.sock, "TMPDIR="+tmp) // the later value wins
	for _, id := range []string{"..", "../..", "", "a\nb", "../../..", "/", "0123abcd/..", "."} {
		t.Run(strings.NewReplacer("/", "_", "\n", "NL").Replace(id), func(t *testing.T) {
			cmd := exec.Command(bin, "clean", "--run", id)
			cmd.Env = env
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := finish(t, cmd, &out, &errb, time.Now(), 5*time.Minute)
			if r.code != exitBadArgs || !strings.Contains(r.stderr, "not a run id") {
				t.Errorf("clean --run %q: exit %d, stderr %q; want %d, not a run id", id, r.code, r.stderr, exitBadArgs)
			}
			unchanged(t, before, sandbox)
			if reqs := eng.requests(); len(reqs) > 0 {
				t.Errorf("clean --run %q reached the Engine: %q", id, reqs)
			}
		})
	}
	// A run id cleans its run: the Engine is asked, and that run's disks
	// alone go (the fake Engine and the sandbox are what the refusals saw).
	cmd := exec.Command(bin, "clean", "--run", "0123abcd")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clean --run 0123abcd: %v\n%s", err, out)
	}
	if len(eng.requests()) == 0 {
		t.Errorf("clean --run 0123abcd did not reach the fake Engine")
	}
	if _, err := os.Stat(filepath.Join(tmp, "fencecheck-disks", "0123abcd")); !os.IsNotExist(err) {
		t.Errorf("the run's disks are still there: %v", err)
	}
	for _, f := range []string{filepath.Join(sandbox, "victim"), filepath.Join(tmp, "victim")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
