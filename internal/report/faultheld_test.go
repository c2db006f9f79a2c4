package report

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// How long a fault held is one figure in the faults table: its window, in
// the held column, and no second "held"/"down" figure in its words (what it
// was meant to hold, which differs when it was healed early or late). The
// recorded ZooKeeper run (internal/cli/testdata/runs) healed its
// pause-holder after 5.47s of a planned 8.84s, when the run ended.
func TestFaultsTableSaysHeldOnce(t *testing.T) {
	for _, run := range []string{"zookeeper-token-pause-holder-kill-leader", "etcd-none-pause-holder", "redis-nopersist-token-kill"} {
		events, err := history.ReadFile(filepath.Join("../cli/testdata/runs", run, "history.jsonl.gz"))
		if err != nil {
			t.Fatal(err)
		}
		faults, err := history.Faults(events)
		if err != nil || len(faults) == 0 {
			t.Fatalf("%s: %d faults, %v", run, len(faults), err)
		}
		var test store.TestInfo
		test.Concurrency = 5
		rows := faultRows(&Input{Test: test, Results: &store.Results{Faults: faults}, Tell: nemesis.Tell}).Rows
		second := regexp.MustCompile(`\b(held|down) [0-9.]+m?s\b|\b(hold|down)=`)
		for i, r := range rows {
			f := faults[i]
			if f.Stop < 0 {
				continue
			}
			if want := time.Duration(f.Stop - f.Start).Round(10 * time.Millisecond).String(); r.Held != want {
				t.Errorf("%s: %s held %q, want its window %q", run, r.Fault, r.Held, want)
			}
			if m := second.FindString(r.Params); m != "" {
				t.Errorf("%s: %s held %s in the column, and its words say %q: %s", run, r.Fault, r.Held, m, r.Params)
			}
		}
	}
}
