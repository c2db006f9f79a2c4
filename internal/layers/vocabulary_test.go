package layers_test

import (
	"strings"
	"testing"
)

// workloadOwned are the folders of the workloads and of lock-append's
// vocabulary, which stays in the foundation layer for the packages below
// the workloads that drive or time a critical section (sweep, scenarios).
var workloadOwned = []string{"internal/clients/workloads", "internal/base/history/lockappend"}

// shared are the folders every workload uses, which know none: each
// workload decodes its events into the checkers' inputs and fills the
// report's model through its view.
var shared = []string{"internal/base/history", "internal/verdicts/checkers", "internal/report"}

// sharedApart pairs each shared folder with each workload's.
func sharedApart() [][2]string {
	var pairs [][2]string
	for _, s := range shared {
		for _, w := range workloadOwned {
			pairs = append(pairs, [2]string{s, w})
		}
	}
	return pairs
}

// No shared package imports a workload's package or vocabulary; and the
// check sees such an import.
func TestSharedImportNoWorkload(t *testing.T) {
	for _, p := range checkApart(listModule(t), sharedApart()) {
		t.Error(p)
	}
	bad := []pkg{{ImportPath: module + "/internal/report", Imports: []string{module + "/internal/base/history/lockappend", module + "/internal/base/history"}},
		{ImportPath: module + "/internal/verdicts/checkers", Imports: []string{module + "/internal/clients/workloads/register"}}}
	got := checkApart(bad, sharedApart())
	if len(got) != 2 || !strings.Contains(got[0], "internal/report imports internal/base/history/lockappend") ||
		!strings.Contains(got[1], "internal/verdicts/checkers imports internal/clients/workloads/register") {
		t.Errorf("shared packages importing a workload's: %q", got)
	}
}
