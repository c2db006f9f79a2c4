package report

import (
	"math"
	"slices"
	"testing"
)

// Packed lists give back what was packed, nil and empty kept apart, and a
// growing list takes about a byte an element.
func TestPackedInts(t *testing.T) {
	for _, l := range [][]int64{nil, {}, {0}, {5, 3, 9}, {math.MinInt64, math.MaxInt64, -1, 0}, {1, 2, 3, 4, 5, 6}} {
		got := PackInts(l).List()
		if !slices.Equal(got, l) || (got == nil) != (l == nil) {
			t.Errorf("PackInts(%v).List() = %v", l, got)
		}
	}
	grow := make([]int64, 32)
	for i := range grow {
		grow[i] = 1_000_000 + int64(i)*3
	}
	if n := len(PackInts(grow)); n > 40 {
		t.Errorf("32 growing elements packed into %d bytes, want about one each", n)
	}
	if Ints([]byte{0xff}).List() != nil || Ints([]byte{3, 2}).List() != nil {
		t.Errorf("bytes that are not a packed list gave a list")
	}
}
