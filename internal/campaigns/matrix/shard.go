package matrix

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// Shard is a slice of a matrix's cells: cell i (0-based, in the order the
// matrix lists them) belongs to shard i mod N + 1.
type Shard struct{ I, N int }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// ParseShard reads --shard I/N.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 1000 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%w: --shard %q: want I/N with 1 <= I <= N <= 1000 (e.g. 2/4)", errUsage, v)
	}
	return Shard{i, n}, nil
}

// Has reports whether cell i is the shard's.
func (s Shard) Has(i int) bool { return i%s.N == s.I-1 }

// CellKey names a cell for merge's consistency check: its identity
// (trends.MatrixCell.ID), the target that ran and its seed.
func CellKey(c trends.MatrixCell) string {
	return fmt.Sprintf("%s (target %s, seed %d)", c.ID(), c.Target, c.Seed)
}
