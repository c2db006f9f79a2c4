package lockappend

import (
	"encoding/json"
	"testing"
)

func TestParseInts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
		err  bool
	}{
		{in: "null", want: nil},
		{in: "[]", want: []int64{}},
		{in: " [ 1 , -2,3 ] ", want: []int64{1, -2, 3}},
		{in: "[9223372036854775807,-9223372036854775808]", want: []int64{9223372036854775807, -9223372036854775808}},
		{in: "[123456789012345678]", want: []int64{123456789012345678}},
		{in: "[9223372036854775808]", err: true},
		{in: "[1.5]", err: true},
		{in: "[1e3]", err: true},
		{in: `["1"]`, err: true},
		{in: "[1,]", err: true},
		{in: "[01]", err: true},
		{in: "[1", err: true},
		{in: "{}", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var l intList
			err := json.Unmarshal([]byte(tc.in), &l)
			if tc.err {
				if err == nil {
					t.Errorf("got %v, want an error", l)
				}
				return
			}
			if err != nil || (l == nil) != (tc.want == nil) || len(l) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", l, err, tc.want)
			}
			for i := range l {
				if l[i] != tc.want[i] {
					t.Errorf("got %v, want %v", l, tc.want)
				}
			}
		})
	}
}
