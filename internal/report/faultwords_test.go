package report

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// tellKill is a teller that knows kill's record alone, as nemesis.Tell
// would tell it: the report prints what a teller says, and the record as
// recorded where it says nothing.
func tellKill(v history.FaultValue, client func(history.Process) string) (string, bool) {
	if v.Recorded != nil || !strings.HasPrefix(v.Fault, "kill") {
		return "", false
	}
	var parts []string
	if v.Hold != 0 {
		parts = append(parts, "down "+v.Hold.String())
	}
	if v.Holder != nil {
		parts = append(parts, "aimed at "+client(v.Holder.Process))
	}
	return strings.Join(parts, "; "), true
}

// The faults table, the timeline's fault bands and the server lanes' titles
// print a fault's record as its teller tells it, naming processes by
// worker; a record the teller cannot tell (an earlier run's params, a fault
// it does not know) is shown as recorded, name=value.
func TestFaultRecordsToldByTheirTeller(t *testing.T) {
	tok := int64(4)
	kill := history.Fault{FaultValue: history.FaultValue{Fault: "kill:one", Nodes: []string{"n1"}, Hold: history.Duration(2e9),
		Holder: &history.Aim{Process: 4, Token: &tok}}, Start: 1e9, Stop: 3e9}
	other := history.Fault{FaultValue: history.FaultValue{Fault: "pause-server:one", Nodes: []string{"n2"}, Hold: history.Duration(1e9)}, Start: 4e9, Stop: 5e9}

	if got := FaultWords(tellKill, kill.FaultValue, 3); got != "down 2s; aimed at w2" {
		t.Errorf("FaultWords = %q, want the teller's words, w2 for process 4 of 3 workers", got)
	}
	if got := FaultWords(tellKill, other.FaultValue, 3); got != "hold=1s" {
		t.Errorf("FaultWords of a fault the teller does not know = %q, want hold=1s", got)
	}
	if got := FaultWords(nil, kill.FaultValue, 3); got != "hold=2s" {
		t.Errorf("FaultWords without a teller = %q, want hold=2s", got)
	}

	m := &OpModel{Last: 10e9, Faults: []history.Fault{kill, other}}
	f := DrawTimeline(TimelineInput{ID: "tl", Model: m, Workers: 3, Servers: []string{"n1", "n2"}, From: 0, To: 10e9, Tell: tellKill})
	var titles []string
	for _, r := range f.Rects {
		titles = append(titles, r.Title)
	}
	for _, mk := range f.Marks {
		titles = append(titles, mk.Title)
	}
	all := strings.Join(titles, "\n")
	for _, want := range []string{
		"kill:one on n1: 1.00s to 3.00s (down 2s; aimed at w2)", // the band
		"n1 killed at 1.00s (kill:one): down 2s; aimed at w2",   // the server lane
		"pause-server:one on n2: 4.00s to 5.00s (hold=1s)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, all)
		}
	}

	var test store.TestInfo
	test.Concurrency = 3
	rows := faultRows(&Input{Test: test, Results: &store.Results{Faults: []history.Fault{kill, other}}, Tell: tellKill}).Rows
	// A healed fault's hold is its window, in the held column alone.
	if len(rows) != 2 || rows[0].Params != "aimed at w2" || rows[0].Held != "2s" || rows[1].Params != "" || rows[1].Held != "1s" {
		t.Errorf("fault rows %+v, want the teller's words without the hold, then nothing, each held as its window", rows)
	}
	// Without a teller, the table keeps its earlier form.
	rows = faultRows(&Input{Test: test, Results: &store.Results{Faults: []history.Fault{kill}}}).Rows
	// The holder by its client, never its process number: process 4 of
	// 3 workers is w2 after an unknown outcome.
	if len(rows) != 1 || rows[0].Params != "holder=w2 (after an unknown outcome) token=4" {
		t.Errorf("fault rows without a teller %+v, want holder=w2 (after an unknown outcome) token=4", rows)
	}
}
