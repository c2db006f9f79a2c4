package harness

import (
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/platform/lazydisk"
	"github.com/fencecheck/fencecheck/internal/base/platform/vdso"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// faultShape is the run as the faults' preconditions see it
// (nemesis.Shape), from the configuration alone: the servers the target
// starts for --nodes (specs) and their tiers, and the resources with containers are those
// StartCluster starts (the audit log's included), as Cluster.Resources
// names them.
func (c *Config) faultShape(specs []targets.NodeSpec) nemesis.Shape {
	s := nemesis.Shape{Target: c.Target.Name(), Servers: len(specs), ProcessClock: vdso.Supported(), ServerData: len(specs) > 0, Foreign: c.foreign()}
	if s.Foreign != "" {
		s.Servers = len(c.Endpoints)
	}
	if nemesis.NeedsDisk(c.Faults) {
		s.Disk = lazydisk.Supported()
	}
	if tt, ok := c.Target.(targets.Tiered); ok {
		s.LeaderTier = tt.LeaderTier()
	}
	for _, n := range specs {
		if n.DataDir == "" {
			s.ServerData = false
		}
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
		if ns := r.Nodes(); len(ns) > 0 {
			s.Containers = append(s.Containers, r.Name())
			if ns[0].DataDir != "" {
				s.DataContainers = append(s.DataContainers, r.Name())
			}
		}
	}
	return s
}
