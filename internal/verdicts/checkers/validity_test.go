package checkers

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidityJSON(t *testing.T) {
	for _, tc := range []struct {
		v    Validity
		json string
		str  string
	}{
		{Valid, "true", "valid"},
		{Invalid, "false", "invalid"},
		{Unknown, `"unknown"`, "unknown"},
	} {
		t.Run(tc.str, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil || string(b) != tc.json {
				t.Errorf("marshal: got %s, %v; want %s", b, err, tc.json)
			}
			var back Validity
			if err := json.Unmarshal(b, &back); err != nil || back != tc.v {
				t.Errorf("unmarshal: got %s, %v", back, err)
			}
			if tc.v.String() != tc.str {
				t.Errorf("String: got %q", tc.v.String())
			}
		})
	}
	var v Validity
	if err := json.Unmarshal([]byte(`"maybe"`), &v); err == nil {
		t.Errorf(`"maybe" read as %s, want an error`, v)
	}
	if v = 0; v != Unknown {
		t.Errorf("the zero Validity is %s, want unknown", v)
	}
}

func TestCompose(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Validity
		want Validity
	}{
		{"none", nil, Unknown},
		{"valid", []Validity{Valid}, Valid},
		{"all valid", []Validity{Valid, Valid, Valid}, Valid},
		{"unknown beats valid", []Validity{Valid, Unknown, Valid}, Unknown},
		{"invalid beats valid", []Validity{Valid, Invalid}, Invalid},
		{"invalid beats unknown", []Validity{Unknown, Invalid, Valid}, Invalid},
		{"invalid first", []Validity{Invalid, Unknown}, Invalid},
		{"out of range is unknown", []Validity{Valid, Validity(7)}, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compose(tc.in...); got != tc.want {
				t.Errorf("Compose(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestProtect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func() StatsResult
		valid Validity
		err   string
	}{
		{
			name:  "no panic",
			check: func() StatsResult { return StatsResult{Verdict: Verdict{Valid: Valid}, Ok: 3} },
			valid: Valid,
		},
		{
			name: "panic with a value",
			check: func() StatsResult {
				panic("boom")
			},
			valid: Unknown,
			err:   "checker stats panicked: boom",
		},
		{
			name: "runtime error after setting valid",
			check: func() StatsResult {
				r := StatsResult{Verdict: Verdict{Valid: Valid}}
				r.FailReasons["x"]++ // nil map
				return r
			},
			valid: Unknown,
			err:   "assignment to entry in nil map",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Protect(NameStats, tc.check)
			if r.Valid != tc.valid {
				t.Errorf("got %s, want %s", r.Valid, tc.valid)
			}
			if tc.err == "" && r.Error != "" || !strings.Contains(r.Error, tc.err) {
				t.Errorf("error %q, want %q", r.Error, tc.err)
			}
		})
	}
}
