package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// history.txt has one line for each invocation, completion and fault
// event, none for phases; each names the client as the report does, by
// its worker, never by its process number (process 6 of 5 workers is w2
// after an unknown outcome), and its wall-clock time is the history's
// start plus the event's time.
func TestWriteText(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	events := []Event{
		{Index: 0, Time: 28_000_244, Process: 6, Type: Invoke, F: "append", Value: raw(`{"element":1}`)},
		{Index: 1, Time: 41_314_793, Process: 6, Type: Phase, F: "acquired", Value: raw(`{"token":3}`)},
		{Index: 2, Time: 1_500_000_000, Process: Nemesis, Type: Info, F: FStart, Value: raw(`{"fault":"pause-holder","nodes":["w2"]}`)},
		{Index: 3, Time: 2_304_576_523, Process: 6, Type: Fail, F: "append", Value: raw(`{"element":1,"reason":"lease-short"}`)},
		{Index: 4, Time: 2_400_000_000, Process: SideWriter, Type: Invoke, F: "append"},
		{Index: 5, Time: 3_000_000_000, Process: FinalRead, Type: Ok, F: "final-read", Value: raw(`{"value":[1]}`)},
	}
	start := time.Date(2026, 11, 30, 13, 38, 54, 278_000_000, time.UTC)
	var b bytes.Buffer
	if err := WriteText(&b, events, start, 5); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0\t0.028000244\t2026-11-30T13:38:54.306Z\tw2 (after an unknown outcome)\tinvoke\tappend\t{\"element\":1}",
		"2\t1.500000000\t2026-11-30T13:38:55.778Z\tnemesis\tinfo  \tstart\t{\"fault\":\"pause-holder\",\"nodes\":[\"w2\"]}",
		"3\t2.304576523\t2026-11-30T13:38:56.582Z\tw2 (after an unknown outcome)\tfail  \tappend\t{\"element\":1,\"reason\":\"lease-short\"}",
		"4\t2.400000000\t2026-11-30T13:38:56.678Z\tside writer\tinvoke\tappend\t",
		"5\t3.000000000\t2026-11-30T13:38:57.278Z\tharness\tok    \tfinal-read\t{\"value\":[1]}",
	}
	if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Without a start (a run recorded before test.json kept it), no
	// wall-clock column.
	b.Reset()
	if err := WriteText(&b, events[:1], time.Time{}, 5); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "0\t0.028000244\tw2 (after an unknown outcome)\tinvoke\tappend\t{\"element\":1}\n" {
		t.Errorf("without a start: %q", got)
	}
}

// One client keeps one name through the processes it runs.
func TestWorkerNames(t *testing.T) {
	for _, c := range []struct {
		p       Process
		workers int
		want    string
	}{{0, 5, "w1"}, {4, 5, "w5"}, {7, 5, "w3"}, {2, 0, "w3"}, {Nemesis, 5, "nemesis"}, {SideWriter + 1, 5, "side writer"}, {FinalRead, 5, "harness"}} {
		if got := c.p.Worker(c.workers); got != c.want {
			t.Errorf("process %d of %d workers: %q, want %q", c.p, c.workers, got, c.want)
		}
	}
}

// A client is named by its worker in every file people read; a process
// the worker continued with after unknown outcomes says how many, in
// words, never with its number.
func TestClientNames(t *testing.T) {
	for _, c := range []struct {
		p       Process
		workers int
		want    string
	}{
		{0, 5, "w1"}, {4, 5, "w5"}, {7, 5, "w3 (after an unknown outcome)"}, {12, 5, "w3 (after 2 unknown outcomes)"},
		{2, 0, "w3"}, {Nemesis, 5, "nemesis"}, {SideWriter, 5, "side writer"},
		{SideWriter + 1, 5, "side writer (after an unknown outcome)"}, {SideWriter + 3, 5, "side writer (after 3 unknown outcomes)"},
		{FinalRead, 5, "harness"}, {FinalRead + 1, 5, "harness"},
	} {
		if got := c.p.Client(c.workers); got != c.want {
			t.Errorf("process %d of %d workers: %q, want %q", c.p, c.workers, got, c.want)
		}
	}
}
