package report

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func TestServer(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "results")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// A secret next to the results directory, and links that try to
	// reach it.
	secret := filepath.Join(base, "secret.txt")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := store.NewRun(root, "etcd-none", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	res := lockappendtest.Check(t, lockappendtest.SeedHistory(t, "1s"))
	lockappendtest.WriteHistory(t, run.Path(store.HistoryFile), lockappendtest.SeedHistory(t, "1s"))
	if err := run.WriteJSON(store.TestFile, lockappendtest.TestInfo("none", 3)); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteJSON(store.ResultsFile, res); err != nil {
		t.Fatal(err)
	}
	if err := Write(run, lockappendtest.TestInfo("none", 3), res, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.Path("logs/w1.log"), []byte("worker log <b>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, run.Path("logs/escape.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "stray.txt"), []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(root)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	do := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = path // send the path as it is, unclean
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	runPath := "/etcd-none/20261130T090000.000Z"

	// The index, live.
	resp, body := do("GET", "/")
	if resp.StatusCode != 200 || !strings.Contains(body, `href="etcd-none/20261130T090000.000Z/report.html"`) || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET /: %d %q\n%.500s", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := do("GET", "/index.html"); resp.StatusCode != 200 {
		t.Errorf("GET /index.html: %d", resp.StatusCode)
	}
	// A run's files.
	for path, ctype := range map[string]string{
		runPath + "/report.html":   "text/html; charset=utf-8",
		runPath + "/results.json":  "application/json",
		runPath + "/history.jsonl": "text/plain; charset=utf-8",
		runPath + "/logs/w1.log":   "text/plain; charset=utf-8",
	} {
		resp, body := do("GET", path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctype || resp.Header.Get("X-Content-Type-Options") != "nosniff" || body == "" {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if resp, body := do("HEAD", runPath+"/report.html"); resp.StatusCode != 200 || body != "" {
		t.Errorf("HEAD: %d, body %d bytes", resp.StatusCode, len(body))
	}
	// Redirects: a run directory to its report, latest to the newest run.
	for path, want := range map[string]string{
		runPath:                 runPath + "/report.html",
		runPath + "/":           runPath + "/report.html",
		"/latest/":              runPath + "/report.html",
		"/latest/history.jsonl": runPath + "/history.jsonl",
		"/latest/logs/w1.log":   runPath + "/logs/w1.log",
	} {
		resp, _ := do("GET", path)
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 302 to %s", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	// Nothing else: no traversal, no symlink out, no listing, no stray
	// files, no hidden files.
	for _, path := range []string{
		"/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt", runPath + "/../../../secret.txt",
		runPath + "/logs/escape.log", "/up/secret.txt", "/up/results/etcd-none/20261130T090000.000Z/report.html",
		"/stray.txt", "/etcd-none", "/etcd-none/", runPath + "/logs", runPath + "/logs/", runPath + "/.hidden",
		runPath + "/nope.html", "/etcd-none/20261130T090000.000Z%00/report.html", runPath + "\\report.html",
		"//etc/passwd", "/latest/../../secret.txt",
	} {
		resp, body := do("GET", path)
		if resp.StatusCode == 200 || strings.Contains(body, "SECRET") {
			t.Errorf("GET %s: %d, want refused", path, resp.StatusCode)
		}
	}
	// Read-only.
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		resp, _ := do(m, runPath+"/report.html")
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d", m, resp.StatusCode)
		}
	}
	if b, _ := os.ReadFile(run.Path(store.ReportFile)); len(b) == 0 {
		t.Errorf("the report is gone")
	}
}
