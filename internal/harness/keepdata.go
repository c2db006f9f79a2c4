package harness

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/kept"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// KeepTimeout bounds the copy of a run's data directories, all nodes
// together: past it the copy stops, what it copied stays and the record
// says where it stopped. Teardown waits no longer than this for it.
const KeepTimeout = time.Minute

// nodeDir is a node and its data directory.
type nodeDir struct{ node, dir string }

// keepData copies the data directories of cl's nodes into the run's
// data/ (store.DataDir) when the Spec's KeepData asks it of a run whose
// verdict is v: always, or, by default (auto), when v is invalid and the
// run is judged (not a matrix's unfenced cell, NotJudged, whose lost
// updates are the expected finding: its data is evidence of nothing, and
// etcd's preallocated WAL alone is hundreds of MB of a CI artifact). It
// returns what it kept, nil when it was not asked. It runs before
// teardown, within KeepTimeout, after Ctrl-C too (an interrupted run's
// loss is worth its data).
func (c *Config) keepData(ctx context.Context, cl *Cluster, run *store.Run, v checkers.Validity) *kept.Data {
	if c.KeepData == spec.KeepNever || c.KeepData == spec.KeepAuto && (v != checkers.Invalid || c.NotJudged) {
		return nil
	}
	limit := uint64(spec.DefaultKeepDataLimit)
	if c.KeepDataLimit != nil {
		limit = *c.KeepDataLimit
	}
	why := "the run is invalid"
	if c.KeepData == spec.KeepAlways {
		why = "--keep-data always"
	}
	c.stage("keeping the nodes' data directories (%s), at most %s", why, checkers.FormatBytes(limit))
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), KeepTimeout)
	defer cancel()
	start := time.Now()
	kd := cl.CopyData(kctx, run.Path(store.DataDir), limit)
	kd.Mode = c.KeepData
	kd.Took = time.Since(start).Round(time.Millisecond).String()
	for _, l := range kd.Lines() {
		cl.log.Info("data kept: " + l)
	}
	return kd
}

// CopyData copies the data directory of every node that has one
// (targets.NodeSpec.DataDir: servers, then resources) into dir/NODE, by
// runtime.Nodes.CopyFrom, the nodes at once, sharing limit bytes stored
// (when it runs out, which node's files are left out depends on their
// timing); ctx bounds it all. Attached servers (--endpoints) are not
// fencecheck's: their data is not copied, and the record's note says so.
// A node whose copy failed has its error in its record; the others are
// copied all the same.
func (c *Cluster) CopyData(ctx context.Context, dir string, limit uint64) *kept.Data {
	kd := &kept.Data{Limit: limit}
	if c.foreign != nil {
		kd.Note = "the servers at --endpoints are not fencecheck's: their data directories are not kept"
	}
	var nds []nodeDir
	for _, nd := range c.dataDirs {
		if c.byNode[nd.node] != nil && c.rt != nil {
			nds = append(nds, nd)
		}
	}
	budget := runtime.NewBudget(int64(min(limit, math.MaxInt64)))
	kd.Nodes = make([]kept.Node, len(nds))
	var wg sync.WaitGroup
	for i, nd := range nds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kn := kept.Node{Node: nd.node, From: nd.dir}
			dst := filepath.Join(dir, nd.node)
			err := os.MkdirAll(dst, 0o755)
			if err == nil {
				kn.Copied, err = c.rt.CopyFrom(ctx, c.byNode[nd.node], nd.dir, dst, budget)
			}
			if err != nil {
				kn.Error = err.Error()
				c.log.Warn("data directory not copied in full", "node", nd.node, "err", err)
			}
			kd.Nodes[i] = kn
		}()
	}
	wg.Wait()
	return kd
}
