package history

import (
	"bytes"
	"encoding/json"
)

// decodeLine decodes one line of a history into e, as json.Unmarshal does
// (the same event, the same errors). A line written as a Recorder writes
// it (its keys in Event's order, no space between tokens, a process that
// is a number or "nemesis", names in plain ASCII, a value that is not
// null) is read without reflection, its value checked by json.Valid and
// kept as it is; any other line goes to json.Unmarshal. Reading a
// history's millions of lines is most of the time a report or a check of
// a stored run takes.
// Its type and function are names's (interned).
func decodeLine(b []byte, e *Event, names interned) error {
	if fastLine(b, e, names) {
		return nil
	}
	*e = Event{}
	if err := json.Unmarshal(b, e); err != nil {
		return err
	}
	e.Type, e.F = Type(names.of(string(e.Type))), names.of(e.F)
	return nil
}

// fastLine decodes b into e if b is a line as a Recorder writes it, and
// tells whether it did (e is then what json.Unmarshal would give).
func fastLine(b []byte, e *Event, names interned) bool {
	r := lineReader{b: b}
	var ev Event
	var ok bool
	if !r.lit(`{"index":`) {
		return false
	}
	var n int64
	if n, ok = r.int(); !ok {
		return false
	}
	ev.Index = int(n)
	if !r.lit(`,"time_ns":`) {
		return false
	}
	if ev.Time, ok = r.int(); !ok {
		return false
	}
	if !r.lit(`,"process":`) {
		return false
	}
	if r.lit(`"nemesis"`) {
		ev.Process = Nemesis
	} else if n, ok = r.int(); !ok || n < 0 {
		return false
	} else {
		ev.Process = Process(n)
	}
	if !r.lit(`,"type":`) {
		return false
	}
	t, ok := r.name()
	if !ok || !r.lit(`,"f":`) {
		return false
	}
	f, ok := r.name()
	if !ok {
		return false
	}
	ev.Type, ev.F = Type(names.ofBytes(t)), names.ofBytes(f)
	switch {
	case r.rest() == "}":
	case r.lit(`,"value":`):
		if len(r.b)-1 <= r.i || r.b[len(r.b)-1] != '}' {
			return false // no value, or no end
		}
		v := r.b[r.i : len(r.b)-1]
		// json.Unmarshal keeps a value without the space around it.
		if v[0] == 'n' || isSpace(v[0]) || isSpace(v[len(v)-1]) || tooDeep(v) || !json.Valid(v) {
			return false
		}
		ev.Value = bytes.Clone(v)
	default:
		return false
	}
	*e = ev
	return true
}

// lineReader reads the tokens of a line from i on.
type lineReader struct {
	b []byte
	i int
}

// lit consumes s if the line goes on with it.
func (r *lineReader) lit(s string) bool {
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

// int reads a JSON integer of at most 18 digits (no fraction, no
// exponent, no leading zero), optionally negative.
func (r *lineReader) int() (int64, bool) {
	neg := r.i < len(r.b) && r.b[r.i] == '-'
	if neg {
		r.i++
	}
	start := r.i
	var n int64
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		n = n*10 + int64(r.b[r.i]-'0')
		r.i++
	}
	digits := r.i - start
	if digits == 0 || digits > 18 || (digits > 1 && r.b[start] == '0') {
		return 0, false
	}
	if r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// name reads a JSON string of printable ASCII without escapes: its bytes,
// the line's.
func (r *lineReader) name() ([]byte, bool) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false
	}
	start := r.i + 1
	for j := start; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			r.i = j + 1
			return r.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, false
		}
	}
	return nil, false
}

// rest is what is left of the line.
func (r *lineReader) rest() string { return string(r.b[r.i:]) }

// isSpace tells whether c is JSON's white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// tooDeep tells whether v may nest deeper than json.Unmarshal takes inside
// a line's object (its limit, 10,000, less the line's own level): by the
// number of brackets it opens, which bounds its depth.
func tooDeep(v []byte) bool {
	return bytes.Count(v, []byte{'['})+bytes.Count(v, []byte{'{'}) >= 9_999
}
