package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzRead feeds the JSONL history reader anything. It must not panic; what
// it reads must write back as JSON Lines that read again to the same
// events; pairing and fault windows must not panic on them. The seeds run
// under plain go test; make fuzz runs it for a minute.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		``,
		"\n\n",
		`{"index":12,"time_ns":1834000000,"process":3,"type":"invoke","f":"append","value":{"element":17}}` + "\n" +
			`{"index":13,"time_ns":1835100000,"process":3,"type":"phase","f":"acquired","value":{"token":1234}}` + "\n" +
			`{"index":16,"time_ns":1840000000,"process":"nemesis","type":"info","f":"start","value":{"fault":"pause-holder","nodes":["w4"],"params":{"hold":"4.1s"}}}` + "\n" +
			`{"index":40,"time_ns":5990000000,"process":3,"type":"ok","f":"append","value":{"element":17,"token":1234,"read":[4,9],"rev":88}}` + "\n" +
			`{"index":41,"time_ns":5990000001,"process":"nemesis","type":"info","f":"stop","value":{"fault":"pause-holder","nodes":["w4"]}}` + "\n",
		`{"index":0,"time_ns":1,"process":0,"type":"invoke","f":"append"}` + "\n" + `{"index":1,"time_ns":2,"proc`, // cut short by a crash
		`{"index":0,"time_ns":1,"process":0,"type":"invoke"` + "\n" + `{"index":1}` + "\n",                         // malformed, not last
		`{"index":0,"time_ns":1,"process":-1,"type":"invoke","f":"x"}`,
		`{"index":0,"process":"nemesis","type":"info","f":"start","value":{"fault":1}}`,
		`{"index":0,"process":0,"type":"ok","f":"append","value":null}` + "\r\n",
		`{"value":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"f":"\u00e9\ud800\"","time_ns":-9223372036854775808,"index":9223372036854775807}`,
		"{}\n{}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		again := readBack(t, events)
		if len(again) != len(events) {
			t.Fatalf("%d events written back read as %d", len(events), len(again))
		}
		if third := readBack(t, again); !reflect.DeepEqual(third, again) {
			t.Fatalf("events written back do not read the same:\n%v\n%v", again, third)
		}
		Pair(events)
		Faults(events)
	})
}

// readBack writes events as JSON Lines and reads them again.
func readBack(t *testing.T, events []Event) []Event {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("event %+v does not marshal: %v", e, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatalf("events written back do not read: %v\n%s", err, buf.Bytes())
	}
	return back
}
