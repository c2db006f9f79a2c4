package harness

import (
	"slices"

	"github.com/fencecheck/fencecheck/internal/harness/vdso"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// faultShape is the run as the faults' preconditions see it
// (nemesis.Shape), from the configuration alone: the servers the target
// starts for --nodes (specs) and their tiers, and the resources with containers are those
// StartCluster starts (the audit log's included), as Cluster.Resources
// names them.
func (c *Config) faultShape(specs []targets.NodeSpec) nemesis.Shape {
	s := nemesis.Shape{Target: c.Target.Name(), Servers: len(specs), ProcessClock: vdso.Supported()}
	if tt, ok := c.Target.(targets.Tiered); ok {
		s.LeaderTier = tt.LeaderTier()
	}
	for _, n := range specs {
		if n.Tier != "" {
			if s.Tiers == nil {
				s.Tiers = map[string]int{}
			}
			s.Tiers[n.Tier]++
		}
	}
	rs := slices.Clone(c.Resources)
	if c.Audit != nil {
		rs = append(rs, resources.Resource(c.Audit))
	}
	for _, r := range rs {
		if slices.Contains(s.Resources, r.Name()) {
			continue
		}
		s.Resources = append(s.Resources, r.Name())
		if len(r.Nodes()) > 0 {
			s.Containers = append(s.Containers, r.Name())
		}
	}
	return s
}
