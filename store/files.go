package store

import (
	"time"

	"github.com/fencecheck/fencecheck/checkers"
	"github.com/fencecheck/fencecheck/history"
)

// TestInfo is test.json: the whole configuration, the seed, the target's
// version and the images the run used.
type TestInfo struct {
	RunID           string            `json:"run_id"`
	Name            string            `json:"name"`
	Started         time.Time         `json:"started"`
	Fencecheck      string            `json:"fencecheck_version"`
	Target          string            `json:"target"`
	TargetVersion   string            `json:"target_version,omitempty"`
	Workload        string            `json:"workload"`
	Fencing         string            `json:"fencing"`
	Nemesis         string            `json:"nemesis"`
	NemesisInterval string            `json:"nemesis_interval"`
	TimeLimit       string            `json:"time_limit"`
	Concurrency     int               `json:"concurrency"`
	Nodes           int               `json:"nodes"`
	TTL             string            `json:"ttl"`
	Work            string            `json:"work"`
	Margin          string            `json:"margin"`
	AcquireTimeout  string            `json:"acquire_timeout"`
	OpTimeout       string            `json:"op_timeout"`
	RPCTimeout      string            `json:"rpc_timeout"`
	CheckTimeout    string            `json:"check_timeout"`
	Seed            uint64            `json:"seed"`
	Images          map[string]string `json:"images"`
	ImageIDs        map[string]string `json:"image_ids,omitempty"`
	Servers         []NodeInfo        `json:"servers"`
	ClusterReady    string            `json:"cluster_ready"`
}

// NodeInfo is one container of the run.
type NodeInfo struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// Results is results.json: the composed verdict and every checker's result
// (checkers.LockAppendResult, whose fields appear at the top level), plus
// the faults of the run and a few figures.
type Results struct {
	checkers.LockAppendResult
	// Faults are the nemesis's fault windows, from the history.
	Faults []history.Fault `json:"faults"`
	// FirstLostUpdateNS is when the first acknowledged update was destroyed
	// (the overwriting write's acknowledgement, ns since the start), if any
	// was.
	FirstLostUpdateNS *int64 `json:"first_lost_update_ns,omitempty"`
	// Events is the number of history events; CheckTime how long the
	// checkers took.
	Events    int    `json:"events"`
	CheckTime string `json:"check_time"`
	// Elapsed is the wall time of the whole run, set-up and teardown
	// included.
	Elapsed     string `json:"elapsed,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	Note        string `json:"note,omitempty"`
}
