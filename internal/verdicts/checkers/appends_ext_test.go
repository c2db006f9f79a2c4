package checkers_test

import (
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// The lock-append histories of this package's tests decode as the
// lock-append workload decodes them.
func init() { *checkers.ParseAppends = lockappend.ParseHistory }
