package history

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckOrder(t *testing.T) {
	ev := func(i int, p Process, typ Type, f string) Event { return Event{Index: i, Process: p, Type: typ, F: f} }
	events := []Event{
		ev(0, 0, Invoke, "append"),
		ev(1, 0, Phase, "read"),
		ev(2, Nemesis, Info, FStart),
		ev(3, 1, Phase, "read"),
		ev(4, 1, Ok, "append"),
		ev(5, 0, Phase, "write-sent"),
	}
	aRead := Step{"A reads", 0, Phase, "read"}
	paused := Step{"A paused", Nemesis, Info, FStart}
	bRead := Step{"B reads", 1, Phase, "read"}
	bOk := Step{"B's write acknowledged", 1, Ok, ""}
	aWrite := Step{"A writes", 0, Phase, "write-sent"}
	if err := CheckOrder(events, aRead, paused, bRead, bOk, aWrite); err != nil {
		t.Errorf("the scripted order: %v", err)
	}
	for _, c := range []struct {
		steps []Step
		want  string
	}{
		{[]Step{aRead, aWrite, bRead}, "B reads (event 3) came before A writes (event 5)"},
		{[]Step{aRead, {"A released", 0, Phase, "released"}}, "A released (process 0, phase released) never happened"},
		{[]Step{bOk, paused}, "A paused (event 2) came before B's write acknowledged (event 4)"},
	} {
		err := CheckOrder(events, c.steps...)
		if !errors.Is(err, ErrOrder) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckOrder: %v, want ErrOrder with %q", err, c.want)
		}
	}
	if s := Format(events); strings.Count(s, "\n") != len(events) || !strings.Contains(s, "write-sent") {
		t.Errorf("Format:\n%s", s)
	}
}
