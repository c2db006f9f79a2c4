package checkers_test

import (
	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/workloads/lockappend"
)

// The lock-append histories of this package's tests decode as the
// lock-append workload decodes them.
func init() { *checkers.ParseAppends = lockappend.ParseHistory }
