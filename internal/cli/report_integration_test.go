package cli

// The report as a person sees it: a real failing etcd run, its report.html
// rendered in headless Chromium (Debian's chromium, driven with chromedp),
// with no console error, and the verdict, a lost update's story and the
// timeline found in the rendered page; then the same run through
// `fencecheck serve` on a loopback port. Like the other integration tests it
// fails without Docker, and also without chromium (scripts/deps.sh installs
// it), except under -short.
//
// FENCECHECK_SCREENSHOTS=DIR keeps the screenshots (report.png, index.png)
// in DIR; otherwise they go to the test's temporary directory.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// requireChromium returns the chromium binary, failing the test without one.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("the report test needs Debian's chromium (scripts/deps.sh installs it)")
	return ""
}

// browser is a headless Chromium tab that records console errors.
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	b := &browser{t: t, ctx: ctx}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errors = append(b.errors, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
		<-done
	})
	return b
}

// open loads url and waits for its body.
func (b *browser) open(url string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		b.t.Fatalf("opening %s: %v", url, err)
	}
	time.Sleep(300 * time.Millisecond) // let late console messages arrive
}

// consoleErrors returns and forgets the errors seen so far.
func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.errors
	b.errors = nil
	return e
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		b.t.Fatalf("counting %s: %v", sel, err)
	}
	return n
}

// screenshot saves the whole page as a PNG and returns its path.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("FENCECHECK_SCREENSHOTS")
	if dir == "" {
		dir = b.t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s (%d KB)", p, len(png)>>10)
	return p
}

func TestReportInBrowser(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	chromium := requireChromium(t)
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--fencing", "none", "--nemesis", "pause-holder", "--time-limit", "20s",
		"--nemesis-interval", "2s", "--seed", "11", "--results", res)
	if r.code != exitInvalid {
		t.Fatalf("unfenced run: exit %d, want %d", r.code, exitInvalid)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(res, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	var test struct {
		RunID string `json:"run_id"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "test.json")); err != nil || json.Unmarshal(b, &test) != nil || test.RunID == "" {
		t.Fatalf("test.json without a run id (%v)", err)
	}
	assertRunsGone(t, res)
	rel, _ := filepath.Rel(res, dir)
	report := filepath.Join(dir, "report.html")
	st, err := os.Stat(report)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report.html of a 20s run: %d KB", st.Size()>>10)
	index, err := os.ReadFile(filepath.Join(res, "index.html"))
	if err != nil || !strings.Contains(string(index), filepath.ToSlash(rel)+"/report.html") {
		t.Errorf("index.html does not link the run %s (%v)", rel, err)
	}

	b := newBrowser(t, chromium)
	b.open("file://" + report)
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors in report.html: %v", errs)
	}
	// Unfenced: the index's verdict, "invalid (expected)" (issue 51 item 8).
	if v := b.text("#verdict"); v != "invalid (expected)" {
		t.Errorf("verdict %q, want invalid (expected)", v)
	}
	if h := b.text("#headline"); !strings.Contains(h, "Acknowledged updates were lost") {
		t.Errorf("headline %q", h)
	}
	story := b.text("#lost-1")
	for _, want := range []string{"acquires the lock: fencing token", "SIGSTOP", "SIGCONT", "ACCEPTED", "LOST", "Fencing:"} {
		if !strings.Contains(story, want) {
			t.Errorf("the first story lacks %q:\n%s", want, story)
		}
	}
	if n := b.count("#tl-main rect.belief"); n < 10 {
		t.Errorf("the timeline draws %d lock-belief bars", n)
	}
	if n := b.count("#tl-main rect.belief.stale"); n < 1 {
		t.Errorf("the timeline marks no stale holder")
	}
	if n := b.count("#tl-main .lost"); n < 1 {
		t.Errorf("the timeline marks no lost update")
	}
	if n := b.count("#tl-main rect.band"); n < 1 {
		t.Errorf("the timeline shades no fault window")
	}
	if n := b.count("#throughput rect.bar"); n < 5 {
		t.Errorf("the throughput chart has %d bars", n)
	}
	b.screenshot("report.png")

	// The same run through `fencecheck serve`, on a loopback port.
	srv := startServe(t, res)
	base, get := srv.base, srv.get
	if code, body := get("GET", "/"); code != 200 || !strings.Contains(body, filepath.ToSlash(rel)+"/report.html") {
		t.Errorf("GET /: %d", code)
	}
	if code, body := get("GET", "/latest/"); code != 200 || !strings.Contains(body, `id="verdict"`) {
		t.Errorf("GET /latest/ (redirected to the report): %d", code)
	}
	if code, _ := get("GET", "/"+filepath.ToSlash(rel)+"/history.jsonl"); code != 200 {
		t.Errorf("GET history.jsonl: %d", code)
	}
	for _, p := range []string{"/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/" + filepath.ToSlash(rel) + "/../../../etc/passwd"} {
		if code, body := get("GET", p); code == 200 || strings.Contains(body, "root:") {
			t.Errorf("GET %s: %d", p, code)
		}
	}
	if code, _ := get("POST", "/"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", code)
	}
	b.open(base + "/")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors in the served index: %v", errs)
	}
	if n := b.count("#runs tr"); n != 2 {
		t.Errorf("the served index lists %d rows, want a header and 1 run", n)
	}
	b.screenshot("index.png")
	b.open(base + "/" + filepath.ToSlash(rel) + "/report.html")
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors in the served report: %v", errs)
	}
	if v := b.text("#verdict"); v != "invalid (expected)" {
		t.Errorf("served report: verdict %q", v)
	}
	// Porcupine's page is served as it is. (It is not opened in the
	// browser: checkers give the final read, process 1000000, its own
	// client lane, and Porcupine's page then draws a million lanes.)
	if _, err := os.Stat(filepath.Join(dir, "linearizability.html")); err == nil {
		if code, body := get("GET", "/"+filepath.ToSlash(rel)+"/linearizability.html"); code != 200 || !strings.Contains(body, "Porcupine") {
			t.Errorf("GET linearizability.html: %d", code)
		}
	}

	srv.stop()
}

// served is a `fencecheck serve` process on a loopback port.
type served struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	exited chan error
	done   bool
	stderr *strings.Builder
}

// startServe runs `fencecheck serve --addr 127.0.0.1:0 dir` and reads the
// address it prints. The process is killed at the end of the test unless
// stop ended it.
func startServe(t *testing.T, dir string) *served {
	t.Helper()
	cmd := exec.Command(fencecheckBinary(t), "serve", "--addr", "127.0.0.1:0", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{t: t, cmd: cmd, exited: make(chan error, 1), stderr: &strings.Builder{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if !s.done {
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed nothing: %v %s", err, s.stderr.String())
	}
	i := strings.Index(line, "http://127.0.0.1:")
	if i < 0 {
		t.Fatalf("serve: %q", line)
	}
	s.base = strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
	return s
}

// get sends a request with the path as it is (not cleaned) and returns the
// status and body.
func (s *served) get(method, path string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.URL.Opaque = path
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// stop sends Ctrl-C and checks that serve exits 0.
func (s *served) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		s.done = true
		if err != nil {
			s.t.Errorf("serve after Ctrl-C: %v (%s)", err, s.stderr.String())
		}
	case <-time.After(10 * time.Second):
		s.t.Errorf("serve did not stop on Ctrl-C")
	}
}

// TestServeBinary runs the real binary's serve on a loopback port over a
// results directory made here (no Docker needed): the index, a report, the
// files, and nothing else.
func TestServeBinary(t *testing.T) {
	base := t.TempDir()
	res := filepath.Join(base, "results")
	run, err := store.NewRun(res, "etcd-lock-append-none", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	test := store.TestInfo{Spec: spec.Spec{Name: "etcd-lock-append-none", Target: "etcd", Workload: "lock-append", Fencing: "none", WorkerKnobs: spec.WorkerKnobs{Concurrency: 1}}}
	if err := run.WriteJSON(store.TestFile, test); err != nil {
		t.Fatal(err)
	}
	lines := `{"index":0,"time_ns":1000,"process":0,"type":"invoke","f":"append","value":{"element":1}}
{"index":1,"time_ns":2000,"process":0,"type":"phase","f":"acquired","value":{"token":3}}
{"index":2,"time_ns":3000,"process":0,"type":"ok","f":"append","value":{"element":1,"token":3,"read":[],"rev":5}}
{"index":3,"time_ns":4000,"process":1000000,"type":"invoke","f":"final-read"}
{"index":4,"time_ns":5000,"process":1000000,"type":"ok","f":"final-read","value":{"value":[1]}}
`
	if err := os.WriteFile(run.Path(store.HistoryFile), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "secret.txt"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(run.Path(store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	la := lockappend.Check(events, checkers.Options{})
	if err := harness.WriteResults(run, test, &store.Results{Workload: "lock-append", Result: &la, Faults: []history.Fault{}, Events: len(events)}, events, lockappend.Workload{}); err != nil {
		t.Fatal(err)
	}
	rel := "etcd-lock-append-none/20261130T090000.000Z"
	if b, err := os.ReadFile(filepath.Join(res, "index.html")); err != nil || !strings.Contains(string(b), rel+"/report.html") {
		t.Errorf("WriteResults left no index.html listing the run (%v)", err)
	}
	srv := startServe(t, res)
	if code, body := srv.get("GET", "/"); code != 200 || !strings.Contains(body, rel+"/report.html") {
		t.Errorf("GET /: %d", code)
	}
	if code, body := srv.get("GET", "/"+rel+"/report.html"); code != 200 || !strings.Contains(body, `id="verdict">valid<`) {
		t.Errorf("GET report.html: %d", code)
	}
	if code, body := srv.get("HEAD", "/"+rel+"/history.jsonl"); code != 200 || body != "" {
		t.Errorf("HEAD history.jsonl: %d", code)
	}
	if code, _ := srv.get("GET", "/latest/"); code != 200 {
		t.Errorf("GET /latest/: %d", code)
	}
	for _, p := range []string{"/../secret.txt", "/%2e%2e/secret.txt", "/" + rel + "/../../../secret.txt", "/" + rel + "/logs/", "/index.html/../../secret.txt"} {
		if code, body := srv.get("GET", p); code == 200 || strings.Contains(body, "SECRET") {
			t.Errorf("GET %s: %d", p, code)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		if code, _ := srv.get(m, "/"+rel+"/report.html"); code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, code)
		}
	}
	srv.stop()

	// Bad arguments: exit 254.
	for _, args := range [][]string{{"serve", filepath.Join(base, "nope")}, {"serve", "--addr", "nonsense", res}, {"serve", res, res}} {
		if r := runCLI(t, nil, args...); r.code != exitBadArgs {
			t.Errorf("fencecheck %v: exit %d, want %d", args, r.code, exitBadArgs)
		}
	}
}
