package store

import (
	"encoding/json"
	"fmt"
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
	Keys            int               `json:"keys,omitempty"`
	ReadMode        string            `json:"read_mode,omitempty"`
	LockDelay       string            `json:"lock_delay,omitempty"`
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

// Results is results.json: the workload's checker result (for lock-append,
// checkers.LockAppendResult, whose fields appear at the top level: "valid",
// "checkers", "lost_updates", "fence_rejections", "overlaps"), plus the
// workload's name, the faults of the run and a few figures.
type Results struct {
	Workload   string                           `json:"workload"`
	LockAppend *checkers.LockAppendResult       `json:"-"`
	Register   *checkers.RegisterWorkloadResult `json:"-"`
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

// Valid is the run's verdict: the workload result's, or unknown without one.
func (r *Results) Valid() checkers.Validity {
	switch {
	case r.LockAppend != nil:
		return r.LockAppend.Valid
	case r.Register != nil:
		return r.Register.Valid
	}
	return checkers.Unknown
}

// SetValid overrides the verdict (an interrupted run's valid is unknown).
func (r *Results) SetValid(v checkers.Validity) {
	switch {
	case r.LockAppend != nil:
		r.LockAppend.Valid = v
	case r.Register != nil:
		r.Register.Valid = v
	}
}

// workloadResult is the workload's result, for JSON.
func (r *Results) workloadResult() any {
	switch {
	case r.LockAppend != nil:
		return r.LockAppend
	case r.Register != nil:
		return r.Register
	}
	return struct {
		Valid checkers.Validity `json:"valid"`
	}{checkers.Unknown}
}

// resultsFields is Results without its methods, for JSON.
type resultsFields Results

// MarshalJSON writes the workload result's fields and Results's own fields
// in one object.
func (r Results) MarshalJSON() ([]byte, error) {
	own, err := json.Marshal(resultsFields(r))
	if err != nil {
		return nil, err
	}
	wl, err := json.Marshal(r.workloadResult())
	if err != nil {
		return nil, err
	}
	// Both are objects: splice "{wl...}" and "{own...}".
	if len(wl) <= 2 {
		return own, nil
	}
	out := make([]byte, 0, len(own)+len(wl))
	out = append(out, wl[:len(wl)-1]...)
	out = append(out, ',')
	out = append(out, own[1:]...)
	return out, nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Results) UnmarshalJSON(b []byte) error {
	var own resultsFields
	if err := json.Unmarshal(b, &own); err != nil {
		return err
	}
	*r = Results(own)
	switch r.Workload {
	case "lock-append", "":
		r.LockAppend = &checkers.LockAppendResult{}
		return json.Unmarshal(b, r.LockAppend)
	case "register":
		r.Register = &checkers.RegisterWorkloadResult{}
		return json.Unmarshal(b, r.Register)
	}
	return fmt.Errorf("store: results.json of unknown workload %q", r.Workload)
}
