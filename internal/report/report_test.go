package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/history"
	"github.com/fencecheck/fencecheck/internal/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/store"
)

// seedHistory is the seed story (see TestStoryStaleWriteErasesOthersUpdate)
// with extra strings that must be escaped wherever they land.
func seedHistory(t *testing.T, evil string) []history.Event {
	h := &hist{t: t}
	h.begin(0, 1, 4, []int64{}, 0.06, 0.07)
	h.fault(0.09, 2.19, "w1", map[string]string{"process": "0", "token": "4", "hold": evil})
	h.invoke(0.09, 2, 3)
	h.add(0.77, 2, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Reason: lockappend.ReasonNotAcquired, Error: evil})
	h.section(1, 2, 7, []int64{}, 0.77, 2.17, 2.175, 9)
	h.phase(2.19, 0, lockappend.PhaseWriteSent, nil)
	h.phase(2.196, 0, lockappend.PhaseReleasing, nil)
	h.phase(2.2, 0, lockappend.PhaseReleased, lockappend.Released{Error: evil})
	h.add(2.201, 0, history.Ok, lockappend.FAppend, lockappend.Completion{Element: 1, Token: 4, Read: []int64{}, Rev: 11})
	h.final(2.21, []int64{1})
	return h.sorted()
}

func render(t *testing.T, in Input) string {
	t.Helper()
	if _, ok := in.Results.Result.(*checkers.LockAppendResult); ok && in.View == nil {
		in.View = LockAppendView
	}
	var buf bytes.Buffer
	if err := Render(&buf, in); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestRenderLostUpdate(t *testing.T) {
	ev := seedHistory(t, "2.1s")
	res := check(t, ev)
	first := int64(2_201_000_000)
	laResult(res).FirstLostUpdateNS = &first
	page := render(t, Input{Test: testInfo("none", 3), Results: res, Events: ev,
		Files: []File{{Name: "history.jsonl", Size: 2000}, {Name: store.LinFile, Size: 30 << 10}, {Name: "logs/w1.log", Size: 10}}})
	for _, want := range []string{
		`<span class="verdict invalid" id="verdict">invalid</span>`,
		"Acknowledged updates were lost: 1 of 2 (50.0%)",
		`id="lost-1"`, "A&#39;s stale write (token 4) erased B&#39;s acknowledged update",
		`id="tl-main"`, `id="tl-lost-1"`, `id="throughput"`, `id="latency"`,
		"Token fencing would have stopped it",
		`<a href="linearizability.html">linearizability.html</a>`,
		`href="logs/w1.log"`,
		"pause-holder w1", // the fault band's label
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// A large visualization is linked with a warning.
	big := render(t, Input{Test: testInfo("none", 3), Results: res, Events: ev, Files: []File{{Name: store.LinFile, Size: 6 << 20}}})
	if !strings.Contains(big, "6.0 MB") || !strings.Contains(big, "It is large") {
		t.Errorf("no warning for a 6 MB linearizability.html")
	}
	// Self-contained: no script, nothing fetched.
	if strings.Contains(page, "<script") || regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(page) {
		t.Errorf("the report loads something or runs a script")
	}
}

// Every value from a history reaches the page escaped, even in SVG titles
// and attributes.
func TestRenderEscapesHistoryValues(t *testing.T) {
	const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>"'&`
	ev := seedHistory(t, evil)
	res := check(t, ev)
	res.Faults[0].Error = evil
	res.Note = evil
	test := testInfo(evil, 3)
	test.Target = evil
	test.Servers = append(test.Servers, store.NodeInfo{Name: evil, Addr: evil})
	// A fault on a node named like markup gets a lane of its own.
	fv := history.FaultValue{Fault: evil, Nodes: []string{evil}, Params: map[string]string{evil: evil}, Error: evil}
	for _, f := range []string{history.FStart, history.FStop} {
		raw, _ := json.Marshal(fv)
		ev = append(ev, history.Event{Index: len(ev), Time: int64(3e9), Process: history.Nemesis, Type: history.Info, F: f, Value: raw})
	}
	res.Faults, _ = history.Faults(ev)
	page := render(t, Input{Test: test, Results: res, Events: ev, Files: []File{{Name: evil, Size: 1}}})
	for _, bad := range []string{"<script", "<img", `alert("x")`, `"'&`} {
		if strings.Contains(page, bad) {
			i := strings.Index(page, bad)
			t.Errorf("unescaped %q in the report: ...%s...", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("the escaped value is missing from the report")
	}
}

func TestRenderFencedRun(t *testing.T) {
	h := &hist{t: t}
	h.section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.begin(0, 3, 10, []int64{1}, 0.21, 0.22)
	h.fault(0.3, 3, "w1", nil)
	h.section(1, 2, 13, []int64{1}, 0.21, 2.5, 2.75, 20)
	h.phase(3, 0, lockappend.PhaseWriteSent, nil)
	h.add(3.02, 0, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10, Read: []int64{1},
		Reason: lockappend.ReasonFenced, Error: "write rejected by fencing: token 10 < highest accepted 13"})
	h.final(4, []int64{1, 2})
	ev := h.sorted()
	res := check(t, ev)
	if res.Valid() != checkers.Valid {
		t.Fatalf("verdict %s", res.Valid())
	}
	page := render(t, Input{Test: testInfo("token", 3), Results: res, Events: ev})
	for _, want := range []string{`class="verdict valid"`, "the fence refused 1 stale write.", "The fence at work (token fencing)", `id="fenced-1"`,
		"The fence stopped A&#39;s stale write (token 10 &lt; 13)", "None: every acknowledged element is in the final read"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A history that cannot be read still gives a report of the results.
func TestWriteWithoutHistory(t *testing.T) {
	run, err := store.NewRun(t.TempDir(), "x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	res := check(t, seedHistory(t, "1s"))
	if err := Write(run, testInfo("none", 3), res, LockAppendView); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(run.Path(store.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "The history could not be read") || !strings.Contains(string(b), `class="verdict invalid"`) {
		t.Errorf("report of a run without history:\n%.2000s", b)
	}
}

// A workload without a view of its own gets the generic report.
func TestRenderOtherWorkload(t *testing.T) {
	h := &hist{t: t}
	h.add(0.1, 0, history.Invoke, "write", map[string]any{"key": "k1", "value": 3})
	h.add(0.2, 0, history.Ok, "write", map[string]any{"key": "k1", "value": 3})
	h.fault(0.15, 0.5, "n1", nil)
	res := &store.Results{Workload: "register", Events: 4}
	page := render(t, Input{Test: testInfo("none", 1), Results: res, Events: h.sorted()})
	for _, want := range []string{`class="verdict unknown"`, "has no report view of its own yet", `id="tl-main"`, `id="throughput"`, "n1 server"} {
		if !strings.Contains(page, want) {
			t.Errorf("generic report lacks %q", want)
		}
	}
}

func TestWriteIndex(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, at time.Time, res *store.Results, test store.TestInfo) *store.Run {
		run, err := store.NewRun(root, name, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.WriteJSON(store.TestFile, test); err != nil {
			t.Fatal(err)
		}
		if res != nil {
			if err := run.WriteJSON(store.ResultsFile, res); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(run.Path(store.ReportFile), []byte("r"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return run
	}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	mk("etcd-none", t0, check(t, seedHistory(t, "1s")), testInfo("none", 3))
	mk("etcd-none", t0.Add(time.Minute), nil, testInfo("none", 3)) // still running
	evil := testInfo(`<b>x</b>`, 3)
	mk("etcd-token", t0.Add(2*time.Minute), &store.Results{Workload: "lock-append", Result: &checkers.LockAppendResult{Valid: checkers.Valid}}, evil)
	if err := os.WriteFile(filepath.Join(root, "stray.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	runs, err := ScanRuns(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(runs), runs)
	}
	if runs[0].Name != "etcd-token" || runs[0].Verdict != "valid" || runs[1].Verdict != "running" || runs[2].Verdict != "invalid" {
		t.Errorf("runs newest first with verdicts: %+v", runs)
	}
	if r := runs[2]; r.Lost != 1 || r.Acknowledged != 2 || r.LostPercent() != "50.0%" || r.Faults != 1 || r.Fencing != "none" || r.Target != "etcd 3.6.16" {
		t.Errorf("summary %+v", r)
	}
	if err := WriteIndex(root); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`href="etcd-none/20261130T090000.000Z/report.html"`, "1 of 2", "50.0%", "&lt;b&gt;x&lt;/b&gt;", `verdict running`} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>x</b>") {
		t.Errorf("index does not escape the configuration")
	}
	if m, _ := filepath.Glob(filepath.Join(root, ".index-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// Tokens granted twice (a restarted lock service without persistence):
// the report lists the violation with both grants and the fault between.
func TestRenderTokenReuse(t *testing.T) {
	h := &hist{t: t}
	h.section(0, 1, 7, []int64{}, 0, 0.01, 0.2, 10)
	h.add(0.3, history.Nemesis, history.Info, history.FStart, history.FaultValue{Fault: "kill:one", Nodes: []string{"n1"}})
	h.add(1.3, history.Nemesis, history.Info, history.FStop, history.FaultValue{Fault: "kill:one", Nodes: []string{"n1"}})
	h.section(1, 2, 7, []int64{}, 1.4, 1.5, 1.7, 1)
	h.final(2, []int64{2})
	ev := h.sorted()
	res := check(t, ev)
	if res.Valid() != checkers.Invalid || laResult(res).Checkers.TokenMonotonic.Count != 1 {
		t.Fatalf("verdict %s, %d token violations", res.Valid(), laResult(res).Checkers.TokenMonotonic.Count)
	}
	page := render(t, Input{Test: testInfo("token", 2), Results: res, Events: ev})
	for _, want := range []string{`id="tokens"`, "token granted twice", "token 7 to process 0 at 0.01s",
		"token 7 to process 1, asked at 1.40s, granted at 1.50s", "kill:one on n1 (0.30s to 1.30s)"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
