package harness

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// TestKeepDataWhen: --keep-data auto keeps an invalid run's data only (not
// a valid or unknown one's, nor a matrix's cell that is not judged), always keeps every run's, never none; what is
// kept records the mode and the limit; attached servers' data is not kept,
// and the record says so.
func TestKeepDataWhen(t *testing.T) {
	run, err := store.NewRun(t.TempDir(), "keep", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode      string
		v         checkers.Validity
		notJudged bool
		keep      bool
	}{
		{spec.KeepAuto, checkers.Invalid, false, true},
		{spec.KeepAuto, checkers.Valid, false, false},
		{spec.KeepAuto, checkers.Unknown, false, false},
		{spec.KeepAlways, checkers.Valid, false, true},
		{spec.KeepAlways, checkers.Unknown, false, true},
		{spec.KeepNever, checkers.Invalid, false, false},
		// A matrix's unfenced cell is expected invalid: auto keeps
		// nothing of it, always still does.
		{spec.KeepAuto, checkers.Invalid, true, false},
		{spec.KeepAlways, checkers.Invalid, true, true},
	} {
		cfg := Config{Spec: spec.Spec{KeepData: c.mode}, NotJudged: c.notJudged}
		cfg.Spec.Resolve(spec.Profile{})
		got := cfg.keepData(context.Background(), newCluster(ClusterConfig{}), run, c.v)
		if (got != nil) != c.keep {
			t.Errorf("--keep-data %s, %s run (not judged %v): kept %v, want %v", c.mode, c.v, c.notJudged, got != nil, c.keep)
			continue
		}
		if got != nil && (got.Mode != c.mode || got.Limit != spec.DefaultKeepDataLimit || got.Took == "") {
			t.Errorf("--keep-data %s: recorded %+v", c.mode, got)
		}
	}
	cl := newCluster(ClusterConfig{})
	cl.foreign = map[string]string{"n1": "10.0.0.1"}
	cl.dataDirs = []nodeDir{{"n1", "/var/lib/etcd"}} // not started here: not in byNode
	got := cl.CopyData(context.Background(), run.Path(store.DataDir), 1<<20)
	if len(got.Nodes) != 0 || !slices.Contains(got.Lines(), "the servers at --endpoints are not fencecheck's: their data directories are not kept") {
		t.Errorf("attached: %+v, lines %q", got, got.Lines())
	}
}
