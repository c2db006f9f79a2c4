package history

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestProcessJSON(t *testing.T) {
	for _, c := range []struct {
		p    Process
		json string
	}{{0, "0"}, {42, "42"}, {Nemesis, `"nemesis"`}} {
		b, err := json.Marshal(c.p)
		if err != nil || string(b) != c.json {
			t.Errorf("marshal %d: %s %v, want %s", c.p, b, err, c.json)
		}
		var back Process
		if err := json.Unmarshal(b, &back); err != nil || back != c.p {
			t.Errorf("unmarshal %s: %d %v", b, back, err)
		}
	}
	var p Process
	for _, bad := range []string{`-3`, `"client"`, `1.5`} {
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("unmarshal %s: no error", bad)
		}
	}
}

func TestRecorderWritesAsItGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	var seen []Event
	r, err := NewRecorder(path, func(e Event) { seen = append(seen, e) })
	if err != nil {
		t.Fatal(err)
	}
	r.Record(0, Invoke, "append", map[string]int{"element": 1})
	r.Record(0, Phase, "acquired", map[string]int{"token": 9})
	r.Record(Nemesis, Info, FStart, FaultValue{Fault: "pause-holder", Nodes: []string{"w1"}})
	// Written before Close: a crash keeps it.
	events, err := ReadFile(path)
	if err != nil || len(events) != 3 {
		t.Fatalf("before close: %d events, %v", len(events), err)
	}
	r.Record(0, Ok, "append", map[string]int{"element": 1})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	events, err = ReadFile(path)
	if err != nil || len(events) != 4 || len(seen) != 4 {
		t.Fatalf("%d events (%d notified), %v", len(events), len(seen), err)
	}
	for i, e := range events {
		if e.Index != i {
			t.Errorf("event %d has index %d", i, e.Index)
		}
		if i > 0 && e.Time < events[i-1].Time {
			t.Errorf("time goes back at %d", i)
		}
	}
	if events[2].Process != Nemesis {
		t.Errorf("nemesis process read back as %v", events[2].Process)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"process":"nemesis"`) {
		t.Errorf("nemesis not written as a string: %s", b)
	}
}

func TestReadToleratesOnlyATruncatedLastLine(t *testing.T) {
	good := `{"index":0,"time_ns":1,"process":0,"type":"invoke","f":"append"}` + "\n"
	if ev, err := Read(strings.NewReader(good + `{"index":1,"ti`)); err != nil || len(ev) != 1 {
		t.Errorf("truncated last line: %d events, %v", len(ev), err)
	}
	_, err := Read(strings.NewReader(good + "garbage\n" + good))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed middle line: %v, want an error naming line 2", err)
	}
}

func ev(i int, p Process, t Type, f string) Event {
	return Event{Index: i, Time: int64(i), Process: p, Type: t, F: f}
}

func TestPair(t *testing.T) {
	events := []Event{
		ev(0, 0, Invoke, "append"),
		ev(1, 1, Invoke, "append"),
		ev(2, 0, Phase, "acquired"),
		ev(3, 0, Info, "append"),
		ev(4, 0, Phase, "late-result"), // after the info: still op 0's
		ev(5, 5, Invoke, "append"),
		ev(6, 1, Ok, "append"),
	}
	ops, err := Pair(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 {
		t.Fatalf("%d ops, want 3", len(ops))
	}
	if ops[0].Type() != Info || len(ops[0].Phases) != 2 {
		t.Errorf("op 0: %s with %d phases", ops[0].Type(), len(ops[0].Phases))
	}
	if ops[1].Type() != Ok || ops[1].End() != 6 {
		t.Errorf("op 1: %s ending %d", ops[1].Type(), ops[1].End())
	}
	if ops[2].Complete != nil || ops[2].Type() != Info || ops[2].End() != -1 {
		t.Errorf("op 2 never completed but is %s", ops[2].Type())
	}
	for name, bad := range map[string][]Event{
		"double invoke":     {ev(0, 0, Invoke, "a"), ev(1, 0, Invoke, "a")},
		"orphan completion": {ev(0, 3, Ok, "a")},
		"orphan phase":      {ev(0, 3, Phase, "read")},
		"unknown type":      {ev(0, 3, "maybe", "a")},
	} {
		if _, err := Pair(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFaults(t *testing.T) {
	rec := NewMemoryRecorder()
	rec.Record(Nemesis, Info, FStart, FaultValue{Fault: "pause-holder", Nodes: []string{"w1"}})
	rec.Record(0, Invoke, "append", nil)
	rec.Record(Nemesis, Info, FStop, FaultValue{Fault: "pause-holder", Nodes: []string{"w1"}, Error: "boom"})
	rec.Record(Nemesis, Info, FStart, FaultValue{Fault: "pause-holder", Nodes: []string{"w2"}})
	fs, err := Faults(rec.Events())
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Stop < fs[0].Start || fs[0].Error != "boom" || fs[1].Stop != -1 {
		t.Errorf("faults %+v", fs)
	}
}

// Two events with one index are bad input: the error names the index and
// both lines, whether the repeat follows at once or after other events.
// Indexes that only go back (events reordered) are Pair's to judge.
func TestReadRefusesDuplicateIndexes(t *testing.T) {
	line := func(i int) string {
		return fmt.Sprintf(`{"index":%d,"time_ns":%d,"process":0,"type":"phase","f":"x"}`, i, i) + "\n"
	}
	for _, c := range []struct {
		name, in, want string
	}{
		{"at once", line(0) + line(1) + line(1), "line 3: index 1 is also line 2's"},
		{"later, after a blank line", line(5) + line(6) + "\n" + line(2) + line(5), "line 5: index 5 is also line 1's"},
		{"reordered, then repeated", line(3) + line(2) + line(1) + line(2), "line 4: index 2 is also line 2's"},
		{"after runs broken by gaps and blank lines", line(0) + line(1) + "\n" + line(2) + line(9) + line(10) + line(4) + line(10), "line 8: index 10 is also line 6's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if ev, err := Read(strings.NewReader(line(2) + line(1) + line(7))); err != nil || len(ev) != 3 {
		t.Fatalf("distinct indexes out of order: %d events, %v", len(ev), err)
	}
}

// A Pairer fed a history one event at a time emits each operation once,
// with Pair's sequence number and Pair's operation (phases that come after
// its completion included), and keeps only each process's latest one.
func TestPairerEmitsWhatPairReturns(t *testing.T) {
	ev := func(i int, p Process, typ Type, f string) Event {
		return Event{Index: i, Time: int64(i), Process: p, Type: typ, F: f}
	}
	events := []Event{
		ev(0, 0, Invoke, "append"), ev(1, 1, Invoke, "append"), ev(2, Nemesis, Info, FStart),
		ev(3, 0, Phase, "acquired"), ev(4, 1, Info, "append"), ev(5, 0, Ok, "append"),
		ev(6, 1, Phase, PhaseLate), // after its info: the op's still
		ev(7, 0, Invoke, "append"), ev(8, 3, Invoke, "append"), ev(9, 0, Phase, "read"),
	}
	want, err := Pair(events)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]Op{}
	held := 0
	p := NewPairer(func(seq int, op Op) {
		if _, dup := got[seq]; dup {
			t.Errorf("operation %d emitted twice", seq)
		}
		got[seq] = op
	})
	for _, e := range events {
		if err := p.Add(e); err != nil {
			t.Fatal(err)
		}
		held = max(held, len(p.latest))
	}
	if len(got) != 1 { // only process 0's first op is done before the end
		t.Errorf("%d operations emitted before the end, want 1", len(got))
	}
	p.Flush()
	if len(got) != len(want) || held > 3 {
		t.Fatalf("%d operations emitted, Pair has %d; %d held at once, want at most the 3 processes", len(got), len(want), held)
	}
	for i, w := range want {
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("operation %d: %+v, Pair's %+v", i, got[i], w)
		}
	}
	if len(got[1].Phases) != 1 || got[1].Phases[0].F != PhaseLate {
		t.Errorf("process 1's info op has phases %+v, want its late result", got[1].Phases)
	}
}
