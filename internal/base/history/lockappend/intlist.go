package lockappend

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// intList is a JSON list of integers decoded without reflection: lists are
// most of a lock-append history's bytes, and encoding/json spends most of a
// check decoding them element by element. Anything but a plain list of
// integers or null goes to encoding/json, which gives the usual errors.
type intList []int64

// UnmarshalJSON reads null (a nil list) or a list of integers.
func (l *intList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = nil
		return nil
	}
	if out, ok := parseInts(b); ok {
		*l = out
		return nil
	}
	var slow []int64
	if err := json.Unmarshal(b, &slow); err != nil {
		return err
	}
	*l = slow
	return nil
}

// parseInts parses "[1, -2, 3]"; ok is false for anything else.
func parseInts(b []byte) (out []int64, ok bool) {
	i := 0
	space := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
	}
	space()
	if i == len(b) || b[i] != '[' {
		return nil, false
	}
	i++
	out = make([]int64, 0, bytes.Count(b, []byte{','})+1)
	space()
	if i < len(b) && b[i] == ']' {
		i++
		space()
		return out, i == len(b)
	}
	for {
		space()
		start, neg := i, false
		if i < len(b) && b[i] == '-' {
			neg = true
			i++
		}
		var n int64
		digits := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			n = n*10 + int64(b[i]-'0')
			i++
		}
		switch {
		case i == digits || (b[digits] == '0' && i > digits+1):
			return nil, false // no digits, or a leading zero
		case i-digits > 18: // may overflow: let strconv decide
			v, err := strconv.ParseInt(string(b[start:i]), 10, 64)
			if err != nil {
				return nil, false
			}
			n, neg = v, false
		}
		if neg {
			n = -n
		}
		out = append(out, n)
		space()
		if i == len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			i++
			space()
			return out, i == len(b)
		default:
			return nil, false
		}
	}
}

// completionValue decodes a Completion with its read list
// through intList; every other field is Completion's own.
type completionValue struct {
	Completion
	Read intList `json:"read"`
}

func (c completionValue) get() Completion {
	out := c.Completion
	out.Read = c.Read
	return out
}

// readValue decodes a ReadValue through intList.
type readValue struct {
	ReadValue
	Value intList `json:"value"`
}
