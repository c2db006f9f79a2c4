package history

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// lineCases are lines as a Recorder writes them and lines it does not
// write, which json.Unmarshal reads (or refuses) all the same.
func lineCases(t testing.TB) []string {
	var lines []string
	for _, e := range []Event{
		{Index: 0, Time: 0, Process: 0, Type: Invoke, F: "append", Value: json.RawMessage(`{"element":1}`)},
		{Index: 7, Time: 51000000, Process: 3, Type: Phase, F: "read", Value: json.RawMessage(`{"value":[1,2,3]}`)},
		{Index: 8, Time: 9, Process: Nemesis, Type: Info, F: FStart, Value: json.RawMessage(`{"fault":"kill:leader","nodes":["n2"]}`)},
		{Index: 9, Time: -5, Process: 1000000, Type: Ok, F: "final-read"},
		{Index: math.MaxInt32, Time: 999999999999999999, Process: 4, Type: Fail, F: "x", Value: json.RawMessage(`"a \" string"`)},
		{Index: 10, Time: 1, Process: 2, Type: Ok, F: "append", Value: json.RawMessage(`[1, 2 ,3]`)},
	} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	return append(lines,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":null}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":{"x":1}} `,
		`{ "index":1,"time_ns":2,"process":3,"type":"ok","f":"a"}`,
		`{"time_ns":2,"index":1,"process":3,"type":"ok","f":"a"}`,
		`{"index":01,"time_ns":2,"process":3,"type":"ok","f":"a"}`,
		`{"index":1.0,"time_ns":2,"process":3,"type":"ok","f":"a"}`,
		`{"index":1e2,"time_ns":2,"process":3,"type":"ok","f":"a"}`,
		`{"index":-0,"time_ns":-0,"process":-0,"type":"ok","f":"a"}`,
		`{"index":1,"time_ns":2,"process":-3,"type":"ok","f":"a"}`,
		`{"index":1,"time_ns":2,"process":"side","type":"ok","f":"a"}`,
		`{"index":1,"time_ns":2,"process":3,"type":"o\"k","f":"a"}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"\u0061"}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"é"}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":{"x":}}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":{"x":1}}}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":1,"value":2}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","extra":1}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a"`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok"}`,
		`{"index":12345678901234567890,"time_ns":2,"process":3,"type":"ok","f":"a"}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":}`,
		`{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":"x"}`,
		deepLine(9_998), deepLine(9_999), deepLine(10_000),
	)
}

// checkLine holds decodeLine to json.Unmarshal: the same error-ness, the
// same event; and the fast path to lines that json.Unmarshal reads.
func checkLine(t *testing.T, line string) {
	var want Event
	werr := json.Unmarshal([]byte(line), &want)
	var got Event
	gerr := decodeLine([]byte(line), &got, interned{})
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: decodeLine error %v, json.Unmarshal's %v", line, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decodeLine %+v, json.Unmarshal %+v", line, got, want)
	}
	var fast Event
	if fastLine([]byte(line), &fast, interned{}) && (werr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("%s: the fast path read %+v, json.Unmarshal %+v (%v)", line, fast, want, werr)
	}
}

func TestDecodeLineIsUnmarshal(t *testing.T) {
	fast := 0
	for _, line := range lineCases(t) {
		checkLine(t, line)
		var e Event
		if fastLine([]byte(line), &e, interned{}) {
			fast++
		}
	}
	// Every line a Recorder writes, and the hand-written ones like them.
	if fast < 8 {
		t.Errorf("the fast path read %d lines, want the Recorder's", fast)
	}
}

func FuzzDecodeLine(f *testing.F) {
	for _, line := range lineCases(f) {
		f.Add(line)
	}
	f.Fuzz(checkLine)
}

// deepLine is a line whose value nests n arrays: json.Unmarshal takes
// 10,000 levels in all, the line's object one of them.
func deepLine(n int) string {
	return `{"index":1,"time_ns":2,"process":3,"type":"ok","f":"a","value":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}"
}
