package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
)

// Past MaxReport the page is a short one that says why.
func TestReportTooLarge(t *testing.T) {
	ev, res := lockappendtest.Synthetic(300, 5)
	var buf bytes.Buffer
	if err := renderTooLarge(&buf, bound(Input{Test: lockappendtest.TestInfo("none", 5), Results: res, Events: ev, Files: []File{{Name: "history.jsonl", Size: 12}}})); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"The full report would be larger than 16 MB", `<a href="history.jsonl">`, res.Valid().String()} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// limitWriter fails past its bound, so that Render switches to it.
	lw := &limitWriter{w: &bytes.Buffer{}, n: 10}
	if _, err := lw.Write(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Write(make([]byte, 3)); err != errTooLarge {
		t.Errorf("past the bound: %v", err)
	}
}

// bound cuts what it must and copies what it changes.
func TestBound(t *testing.T) {
	if got := cut("ééé", 3); got != "é… (4 bytes more)" {
		t.Errorf("cut: %q", got)
	}
	if !hasLongString([]byte(`{"a":"`+strings.Repeat(`\"`, 10)+`"}`), 19) || hasLongString([]byte(`{"a":[1,2,3],"bb":"cc"}`), 2) {
		t.Errorf("hasLongString")
	}
	ev, res := lockappendtest.Synthetic(300, 5)
	ev = lockappendtest.WithFaultParam(t, ev, "k", strings.Repeat("v", 10_000))
	res = lockappendtest.ResultsOf(t, res, ev)
	evBefore, _ := json.Marshal(ev)
	before, _ := json.Marshal(res)
	in := bound(Input{Test: lockappendtest.TestInfo("none", 5), Results: res, Events: ev})
	evAfter, _ := json.Marshal(ev)
	after, _ := json.Marshal(res)
	if !bytes.Equal(before, after) || !bytes.Equal(evBefore, evAfter) {
		t.Errorf("bound changed its input")
	}
	fs, err := history.Faults(in.Events)
	if err != nil || len(fs) == 0 || len(fs[0].Shown()["k"]) > MaxText+40 || len(in.Results.Faults[0].Shown()["k"]) > MaxText+40 {
		t.Errorf("the parameter is not cut: %v", err)
	}
	// The client operations are whole: the checkers' figures still match
	// the story's.
	ops, _ := history.Pair(in.Events)
	h, err := lockappend.ParseHistory(ops)
	if err != nil {
		t.Fatal(err)
	}
	if st := h.Stats(); st.Ok != lockappendtest.Result(res).Checkers.Stats.Ok {
		t.Errorf("bounded history: %d ok, want %d", st.Ok, lockappendtest.Result(res).Checkers.Stats.Ok)
	}
}
