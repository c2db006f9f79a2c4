package lockappend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

func phase(f string, t int64, v string) history.Event {
	e := history.Event{Time: t, Process: 1, Type: history.Phase, F: f}
	if v != "" {
		e.Value = json.RawMessage(v)
	}
	return e
}

// TestParseAppend: one reading of an append, first phases win, and any
// value that does not decode is an error, whatever part of the op it is in.
func TestParseAppend(t *testing.T) {
	op := func(done string, phases ...history.Event) *history.Op {
		o := &history.Op{Process: 1, F: FAppend, Invoke: history.Event{Time: 1, Process: 1, Type: history.Invoke, F: FAppend, Value: json.RawMessage(`{"element":7}`)},
			Phases: phases}
		if done != "" {
			o.Complete = &history.Event{Time: 90, Process: 1, Type: history.Ok, F: FAppend, Value: json.RawMessage(done)}
		}
		return o
	}
	a, err := ParseAppend(op(`{"element":7,"read":[1,2],"token":5}`,
		phase(PhaseAcquired, 10, `{"token":5}`), phase(PhaseAcquired, 11, `{"token":6}`), phase(PhaseRead, 20, `{"value":[9]}`),
		phase(PhaseChecked, 30, `{}`), phase(PhaseWriteSent, 40, ""), phase(PhaseReleased, 60, `{}`), phase(PhaseReleasing, 50, "")))
	if err != nil {
		t.Fatal(err)
	}
	if a.Element != 7 || !a.Acquired || a.AcquiredAt != 10 || a.Token != 5 || a.ReadAt != 20 || !a.HasRead || a.Read != nil ||
		len(a.Comp.Read) != 2 || a.CheckedAt != 30 || a.WriteSentAt != 40 || a.ReleasingAt != 60 || a.Late != nil || a.LateAt != -1 {
		t.Errorf("parsed %+v", a)
	}
	// Without the list in the completion, the read phase's is decoded.
	if a, err := ParseAppend(op("", phase(PhaseRead, 20, `{"value":[9]}`))); err != nil || len(a.Read) != 1 || a.Read[0] != 9 {
		t.Errorf("read phase: %+v %v", a, err)
	}
	for name, o := range map[string]*history.Op{
		"acquired": op("", phase(PhaseAcquired, 10, `{"token":"x"}`)),
		"read":     op("", phase(PhaseRead, 10, `{"value":[1.5]}`)),
		"checked":  op("", phase(PhaseChecked, 10, `[]`)),
		"late":     op("", phase(PhaseLate, 10, `7`)),
		"ok without a value": {Process: 1, F: FAppend, Invoke: history.Event{Type: history.Invoke, F: FAppend, Value: json.RawMessage(`{"element":1}`)},
			Complete: &history.Event{Type: history.Ok, F: FAppend}},
	} {
		if _, err := ParseAppend(o); err == nil {
			t.Errorf("%s: no error", name)
		} else if name != "ok without a value" && !strings.Contains(err.Error(), "phase "+name) {
			t.Errorf("%s: %v does not name the phase", name, err)
		}
	}
}
