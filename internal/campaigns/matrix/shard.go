package matrix

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/report"
)

// Shard is a slice of a matrix's cells: cell i (0-based, in the order the
// matrix lists them) belongs to shard i mod N + 1; or, when Cells is set
// (matrix --cell: a re-run of chosen cells), exactly those cells, and I
// and N are 1.
type Shard struct {
	I, N int
	// Cells are the chosen cells' numbers (matrix --list's first column),
	// sorted, each once; nil for shard I of N.
	Cells []int
}

// maxChosenCells bounds --cell's list (and a "cells ..." shard that a
// matrix.json names).
const maxChosenCells = 1000

// String is the shard as matrix.json records it: "I/N", or "cells 3,5".
func (s Shard) String() string {
	if s.Cells != nil {
		var b strings.Builder
		b.WriteString("cells ")
		for i, c := range s.Cells {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(c))
		}
		return b.String()
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Partial reports whether the shard is less than the whole matrix by its
// making (I of N > 1, or chosen cells): its results are one of the
// directories that merge joins.
func (s Shard) Partial() bool { return s.N > 1 || s.Cells != nil }

// ParseCells reads --cell's values: cell numbers as matrix --list prints
// them, comma-separated or one a flag, each 0 to maxMergeCells-1, at most
// maxChosenCells of them. A number given twice counts once.
func ParseCells(vals []string) (Shard, error) {
	var cells []int
	for _, v := range vals {
		for _, w := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(w))
			if err != nil || n < 0 || n >= maxMergeCells {
				return Shard{}, fmt.Errorf("%w: --cell %q: want cell numbers as matrix --list prints them (0 to %d), comma-separated", errUsage, report.Clip(w, 64), maxMergeCells-1)
			}
			cells = append(cells, n)
		}
	}
	if len(cells) == 0 {
		return Shard{}, fmt.Errorf("%w: --cell: no cell", errUsage)
	}
	slices.Sort(cells)
	cells = slices.Compact(cells)
	if len(cells) > maxChosenCells {
		return Shard{}, fmt.Errorf("%w: --cell: %d cells, at most %d (use --shard for a slice of a large matrix)", errUsage, len(cells), maxChosenCells)
	}
	return Shard{I: 1, N: 1, Cells: cells}, nil
}

// parseChosen reads a matrix.json's "cells 3,5" (String's form).
func parseChosen(v string) (Shard, error) {
	list, ok := strings.CutPrefix(v, "cells ")
	if !ok || list == "" || strings.Count(list, ",") >= maxChosenCells {
		return Shard{}, fmt.Errorf("not chosen cells")
	}
	sh, err := ParseCells([]string{list})
	if err != nil || sh.String() != v { // sorted, each once, as matrix writes it
		return Shard{}, fmt.Errorf("chosen cells %q: want \"cells N,M\" in ascending order", report.Clip(v, 64))
	}
	return sh, nil
}

// ParseShard reads --shard I/N.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1000 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%w: --shard %q: want I/N with 1 <= I <= N <= 1000 (e.g. 2/4)", errUsage, v)
	}
	return Shard{I: i, N: n}, nil
}

// Has reports whether cell i is the shard's.
func (s Shard) Has(i int) bool {
	if s.Cells != nil {
		_, ok := slices.BinarySearch(s.Cells, i)
		return ok
	}
	return i%s.N == s.I-1
}

// CellKey names a cell for merge's consistency check: its identity
// (trends.MatrixCell.ID), the target that ran and its seed.
func CellKey(c trends.MatrixCell) string {
	return fmt.Sprintf("%s (target %s, seed %d)", c.ID(), c.Target, c.Seed)
}
