package report

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	hang "github.com/fencecheck/fencecheck/internal/testkit/bound"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// limitsRoot is a results directory with one finished run.
func limitsRoot(t *testing.T) (string, *store.Run) {
	t.Helper()
	root := t.TempDir()
	run, err := store.NewRun(root, "etcd-none", time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	lockappendtest.WriteHistory(t, run.Path(store.HistoryFile), lockappendtest.SeedHistory(t, "1s"))
	if err := run.WriteJSON(store.TestFile, lockappendtest.TestInfo("none", 3)); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteJSON(store.ResultsFile, lockappendtest.Check(t, lockappendtest.SeedHistory(t, "1s"))); err != nil {
		t.Fatal(err)
	}
	return root, run
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	// 30 s: a request that hangs (on a FIFO, say) fails here; one that
	// is only slow, on a loaded machine, does not.
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A FIFO in a run directory is a 404 at once, whether served as a file or
// read by the index (issue: it hung the request, and 10k of them used up
// the server's file descriptors).
func TestServeRefusesAFIFO(t *testing.T) {
	root, run := limitsRoot(t)
	if err := syscall.Mkfifo(run.Path("logs/pipe.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(root)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	rel, _ := filepath.Rel(root, run.Dir)
	// Not after a wait for a writer, which never comes: an answer at all
	// (within the hang limit) shows the server did not wait.
	hang.Returns(t, "a request for a FIFO", func() {
		if code, _ := get(t, ts.URL+"/"+filepath.ToSlash(rel)+"/logs/pipe.log"); code != http.StatusNotFound {
			t.Errorf("a FIFO: %d, want 404", code)
		}
	})
	// results.json replaced by a FIFO: the index lists the run with an
	// error instead of waiting for a writer.
	if err := os.Remove(run.Path(store.ResultsFile)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(run.Path(store.ResultsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, ts.URL+"/"); code != http.StatusOK || !strings.Contains(body, "not a regular file") {
		t.Errorf("index with a FIFO results.json: %d, want 200 naming it", code)
	}
}

// The index reads at most MaxIndexRead bytes of a file, and reads a run's
// files again only when they changed (issue: every request re-read every
// results.json in full; six requests with a 300 MB one took 3.6 GB).
func TestIndexBoundsAndCachesItsReads(t *testing.T) {
	root, run := limitsRoot(t)
	srv, err := NewServer(root)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	before := indexReads.Load()
	for range 5 {
		if code, body := get(t, ts.URL+"/"); code != http.StatusOK || !strings.Contains(body, "etcd-none") {
			t.Fatalf("index: %d", code)
		}
	}
	if n := indexReads.Load() - before; n != 2 {
		t.Errorf("5 index requests read %d files, want 2 (test.json and results.json once)", n)
	}
	// A results.json that changed is read again.
	b, err := os.ReadFile(run.Path(store.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.Path(store.ResultsFile), append(b, ' ', '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	before = indexReads.Load()
	get(t, ts.URL+"/")
	if n := indexReads.Load() - before; n != 2 {
		t.Errorf("after results.json changed the index read %d files, want 2 (the run's summary afresh)", n)
	}

	// One past the bound: listed with an error, not read.
	defer func(old int64) { MaxIndexRead = old }(MaxIndexRead)
	MaxIndexRead = int64(len(b)) - 1
	if err := os.WriteFile(run.Path(store.ResultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	before = indexReads.Load()
	if code, body := get(t, ts.URL+"/"); code != http.StatusOK || !strings.Contains(body, "more than the index reads") {
		t.Errorf("index with a results.json past the bound: %d, want 200 saying it was not read", code)
	}
	if n := indexReads.Load() - before; n != 1 {
		t.Errorf("read %d files, want 1 (test.json; not results.json, past the bound)", n)
	}
}
