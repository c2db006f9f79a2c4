package tables

import (
	"slices"
	"testing"

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
	want := []string{"etcd", "consul", "redis-sentinel", "zookeeper", "kubernetes"}
	if !slices.Equal(got, want) {
		t.Errorf("targets that elect their leader: %q, want %q", got, want)
	}
}
