package harness

import (
	"runtime/debug"
	"time"

	"github.com/fencecheck/fencecheck/store"
)

// versioned is implemented by targets that know their server version.
type versioned interface{ Version() string }

// newTestInfo is test.json: the configuration, and once the cluster runs
// (cl not nil) its images and servers.
func newTestInfo(cfg Config, runID string, cl *Cluster, started time.Time) store.TestInfo {
	t := store.TestInfo{
		RunID: runID, Name: cfg.Name, Started: started.UTC(), Fencecheck: Version(),
		Target: cfg.Target.Name(), Workload: cfg.Workload, Fencing: string(cfg.Fencing),
		Nemesis: cfg.Nemesis, NemesisInterval: cfg.NemesisInterval.String(), TimeLimit: cfg.TimeLimit.String(),
		Concurrency: cfg.Concurrency, Nodes: cfg.Nodes, TTL: cfg.TTL.String(), Work: cfg.Work.String(),
		Margin: cfg.Margin.String(), AcquireTimeout: cfg.AcquireTimeout.String(), OpTimeout: cfg.OpTimeout.String(),
		RPCTimeout: cfg.RPCTimeout.String(), CheckTimeout: cfg.CheckTimeout.String(), Seed: cfg.Seed,
	}
	if cfg.Workload == "register" {
		t.Keys, t.ReadMode, t.Fencing = cfg.Keys, cfg.ReadMode, ""
	}
	if cfg.LockDelay != nil {
		t.LockDelay = cfg.LockDelay.String()
	}
	if v, ok := cfg.Target.(versioned); ok {
		t.TargetVersion = v.Version()
	}
	if cl == nil {
		return t
	}
	t.Images, t.ImageIDs, t.ClusterReady = cl.Images, cl.ImageIDs, cl.Ready.Round(time.Millisecond).String()
	for _, n := range cl.Nodes {
		t.Servers = append(t.Servers, store.NodeInfo{Name: n.Name, Addr: n.Addr})
	}
	return t
}

// Version is fencecheck's version: the module version, or the VCS revision
// of a development build.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
