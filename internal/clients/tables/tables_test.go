package tables

import (
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/targets"
)

// The targets whose servers elect their leader say so (targets.Elected),
// so that a run records the leader's changes; those whose Leader is a node
// the harness fixed do not.
func TestElectedTargets(t *testing.T) {
	var got []string
	for _, tg := range Targets {
		if e, ok := tg.(targets.Elected); ok && e.ElectsLeader() {
			got = append(got, tg.Name())
		}
	}
	want := []string{"etcd", "consul", "redis-sentinel", "zookeeper", "kubernetes", "kubernetes-cle"}
	if !slices.Equal(got, want) {
		t.Errorf("targets that elect their leader: %q, want %q", got, want)
	}
}

// No two kinds of record share a key, none takes one of results.json's
// own names, and every one is registered (the store reads it).
func TestRecordKinds(t *testing.T) {
	own := []string{"workload", "faults", "fault_hits", "workers", "liveness", "events", "check_time", "elapsed", "interrupted", "note", "checked_by", "valid", "checkers"}
	seen := map[string]bool{}
	for _, k := range Records {
		if seen[k.Key] || slices.Contains(own, k.Key) {
			t.Errorf("record key %q is taken", k.Key)
		}
		seen[k.Key] = true
		if _, ok := record.Lookup(k.Key); !ok {
			t.Errorf("record kind %q is not registered", k.Key)
		}
	}
}
