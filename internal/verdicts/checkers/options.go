package checkers

import (
	"path/filepath"
	"time"
)

// Options tune the checkers.
type Options struct {
	// Timeout bounds Porcupine's search; 0 means no bound. A search that
	// runs out gives Unknown.
	Timeout time.Duration
	// MemoryBudget bounds, in bytes, the memory the process holds while
	// a check runs (Porcupine's search can outgrow any machine); 0 means
	// no bound. The memory is the Go runtime's, heap and all it maps less
	// what it returned to the system, for the whole process (checks that
	// run at once share it), measured every 50 ms (5 ms near the budget).
	// When it comes within a reserve of the budget (1/16 of it, at most
	// 256 MiB) the search stops and the verdict is Unknown, never Valid
	// nor Invalid, saying "memory budget B exceeded (peak P) after
	// checking N of M operations". During the check the runtime's soft
	// memory limit is lowered to that point, and restored after.
	// DefaultMemoryBudget is the CLI's default.
	MemoryBudget uint64
	// VisualizationPath, when not empty, is the file where the
	// linearizability checker writes Porcupine's visualization of an
	// illegal history; VisualizationName is the name results report for it
	// (default: the path's base name), for a file written aside and moved
	// into place later.
	VisualizationPath string
	VisualizationName string

	// Tests only: memSample replaces the measure of the process's memory,
	// and tripAfter (> 0) exceeds the budget at that many model steps.
	memSample func() uint64
	tripAfter int64
}

func (o Options) visualizationName() string {
	if o.VisualizationName != "" {
		return o.VisualizationName
	}
	return filepath.Base(o.VisualizationPath)
}

// Checker names, as results.json keys them.
const (
	NameLinearizable   = "linearizable"
	NameLostUpdates    = "lost-updates"
	NameTokenMonotonic = "token-monotonic"
	NameOverlap        = "overlap"
	NameStats          = "stats"
)
