package view

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func TestRenderLostUpdate(t *testing.T) {
	ev := seedHistory(t, "2.1s")
	res := check(t, ev)
	first := int64(2_201_000_000)
	laResult(res).FirstLostUpdateNS = &first
	page := render(t, report.Input{Test: testInfo("none", 3), Results: res, Events: ev,
		Files: []report.File{{Name: "history.jsonl", Size: 2000}, {Name: store.LinFile, Size: 30 << 10}, {Name: "logs/w1.log", Size: 10}}})
	for _, want := range []string{
		// Unfenced: the lost update is the expected finding, as the run
		// index says it.
		`<span class="verdict invalid expected" title="not judged: an unfenced run's lost updates show what fencing is for" id="verdict">invalid (expected)</span>`,
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
	big := render(t, report.Input{Test: testInfo("none", 3), Results: res, Events: ev, Files: []report.File{{Name: store.LinFile, Size: 6 << 20}}})
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
	fv := history.FaultValue{Fault: evil, Nodes: []string{evil}, Figures: history.FiguresOf(map[string]string{evil: evil}), Error: evil}
	for _, f := range []string{history.FStart, history.FStop} {
		raw, _ := json.Marshal(fv)
		ev = append(ev, history.Event{Index: len(ev), Time: int64(3e9), Process: history.Nemesis, Type: history.Info, F: f, Value: raw})
	}
	res.Faults, _ = history.Faults(ev)
	page := render(t, report.Input{Test: test, Results: res, Events: ev, Files: []report.File{{Name: evil, Size: 1}}})
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
	h := &hist{T: t}
	h.Section(1, 1, 5, []int64{}, 0, 0.01, 0.2, 10)
	h.Begin(0, 3, 10, []int64{1}, 0.21, 0.22)
	h.Fault(0.3, 3, "w1", history.FaultValue{})
	h.Section(1, 2, 13, []int64{1}, 0.21, 2.5, 2.75, 20)
	h.Phase(3, 0, lockappend.PhaseWriteSent, nil)
	h.Add(3.02, 0, history.Fail, lockappend.FAppend, lockappend.Completion{Element: 3, Token: 10, Read: []int64{1},
		Reason: lockappend.ReasonFenced, Error: "write rejected by fencing: token 10 < highest accepted 13"})
	h.Final(4, []int64{1, 2})
	ev := h.Sorted()
	res := check(t, ev)
	if res.Valid() != checkers.Valid {
		t.Fatalf("verdict %s", res.Valid())
	}
	page := render(t, report.Input{Test: testInfo("token", 3), Results: res, Events: ev})
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
	if err := report.Write(run, testInfo("none", 3), res, View); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(run.Path(store.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "The history could not be read") || !strings.Contains(string(b), `class="verdict invalid expected"`) {
		t.Errorf("report of a run without history:\n%.2000s", b)
	}
}

// Tokens granted twice (a restarted lock service without persistence):
// the report lists the violation with both grants and the fault between.
func TestRenderTokenReuse(t *testing.T) {
	h := &hist{T: t}
	h.Section(0, 1, 7, []int64{}, 0, 0.01, 0.2, 10)
	h.Add(0.3, history.Nemesis, history.Info, history.FStart, history.FaultValue{Fault: "kill:one", Nodes: []string{"n1"}})
	h.Add(1.3, history.Nemesis, history.Info, history.FStop, history.FaultValue{Fault: "kill:one", Nodes: []string{"n1"}})
	h.Section(1, 2, 7, []int64{}, 1.4, 1.5, 1.7, 1)
	h.Final(2, []int64{2})
	ev := h.Sorted()
	res := check(t, ev)
	if res.Valid() != checkers.Invalid || laResult(res).Checkers.TokenMonotonic.Count != 1 {
		t.Fatalf("verdict %s, %d token violations", res.Valid(), laResult(res).Checkers.TokenMonotonic.Count)
	}
	page := render(t, report.Input{Test: testInfo("token", 2), Results: res, Events: ev})
	for _, want := range []string{`id="tokens"`, "token granted twice", "token 7 to w1 at 0.01s",
		"token 7 to w2, asked at 1.40s, granted at 1.50s", "kill:one on n1 (0.30s to 1.30s)"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func render(t *testing.T, in report.Input) string {
	t.Helper()
	if in.View == nil {
		in.View = View
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, in); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
