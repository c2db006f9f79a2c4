package harness

import (
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// versioned is implemented by targets that know their server version.
type versioned interface{ Version() string }

// targetVersion is test.json's target_version: what the servers of a user's
// image (image not empty) or attached servers reported (none before the
// cluster ran, nor from a target that cannot ask), never the version of
// fencecheck's own image; else the version the target knows it runs.
func targetVersion(t targets.Target, image string, attached bool, cl *Cluster) string {
	if image != "" || attached {
		if cl == nil {
			return ""
		}
		return cl.ServerVersion
	}
	if v, ok := t.(versioned); ok {
		return v.Version()
	}
	return ""
}

// newTestInfo is test.json: the resolved Spec, and once the cluster runs
// (cl not nil) its images and servers.
func newTestInfo(cfg Config, runID runtime.RunID, cl *Cluster, started time.Time) store.TestInfo {
	t := store.TestInfo{Spec: cfg.Spec.ForWorkload(), Found: store.Found{RunID: runID, Started: started.UTC()}}
	t.SetFencecheck()
	t.Fencing = resources.DescribeFencings(cfg.Resources, cfg.Fencings)
	// The client program's directory is recorded as ClientPath; its
	// command and image (--client-cmd, --client-image) under their keys.
	t.Results, t.ClientDir = "", ""
	for _, r := range cfg.Resources {
		t.Resources = append(t.Resources, store.ResourceInfo{Name: r.Name(), Fencing: string(cfg.Fencings[r.Name()])})
	}
	if cfg.Audit != nil {
		t.AuditLogName = cfg.Audit.Name()
	}
	if _, ok := cfg.Workload.(workloads.Described); ok {
		// Its state is in the target's own store: no resource, no fencing.
		t.Fencing, t.Resource, t.Resources = "", nil, nil
	}
	t.Profile = targets.ProfileOf(cfg.Target).Why
	t.MaxLease = targets.MaxLease(cfg.Target, cfg.clientConfig()).String()
	if p := cfg.ClientProgram; p != nil {
		t.Client = p.Name() + " (" + p.Program.String() + ")"
		t.ClientPath, t.ClientFiles = cfg.Spec.ClientDir, cfg.ClientDigest
	}
	if r := cfg.Replay; r != nil {
		t.Rerun = &store.RerunInfo{Of: r.Of, RunID: r.RunID, Schedule: "replayed", Faults: []string{}}
		for _, s := range r.Steps {
			t.Rerun.Faults = append(t.Rerun.Faults, s.String())
		}
	}
	t.TargetVersion = targetVersion(cfg.Target, cfg.Image[store.ImageTarget], cfg.Attached(), cl)
	if cl == nil {
		if ref := cfg.Image[store.ImageTarget]; ref != "" {
			// Set-up failed: still say whose image it was.
			t.Images = map[string]string{store.ImageTarget: ref}
		}
		return t
	}
	t.Images, t.ImageIDs, t.ClusterReady = cl.Images, cl.ImageIDs, cl.Ready.Round(time.Millisecond).String()
	for _, n := range cl.Nodes {
		t.Servers = append(t.Servers, store.NodeInfo{Name: n.Name, Addr: n.Addr, Tier: n.Tier})
	}
	for i := range t.Resources {
		for _, n := range cl.ResourceNodes[t.Resources[i].Name] {
			t.Resources[i].Nodes = append(t.Resources[i].Nodes, store.NodeInfo{Name: n.Name, Addr: n.Addr})
		}
	}
	return t
}
