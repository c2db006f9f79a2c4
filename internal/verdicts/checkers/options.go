package checkers

import (
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
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
	// Workers is the run's number of clients (test.json's concurrency):
	// the visualization and the messages name each client by its worker
	// (history.Process.Client), never by its process number. 0 (a history
	// Jepsen recorded, whose clients are its processes) names them
	// "process N".
	Workers int

	// Tests only: memSample replaces the measure of the process's memory,
	// and tripAfter (> 0) exceeds the budget at that many model steps.
	memSample func() uint64
	tripAfter int64
}

// client names process p for the visualization and the messages: by its
// worker (history.Process.Client) when o.Workers is known, otherwise as
// Jepsen numbers its clients, "process N".
func (o Options) client(p history.Process) string {
	if o.Workers > 0 {
		return p.Client(o.Workers)
	}
	return "process " + p.String()
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
