package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/buildinfo"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// ImageTarget is the key of TestInfo.Images that holds the user's own
// server image (--image target=REF), when the run had one.
const ImageTarget = "target"

// TestInfo is test.json: the run's resolved configuration (the Spec, every
// knob under its key, spec.Knobs) and what the run found (Found: its id, the
// target's version, images, servers).
//
// Its JSON is one object, the Spec's keys and Found's side by side. It reads
// the test.json of every earlier version: the knobs had the same keys, and
// the three that were recorded only in Found (the resources, the audit log,
// the user's image) are taken from there when the Spec's own keys are
// missing.
type TestInfo struct {
	spec.Spec
	Found
}

// Found is what a run records besides its configuration.
type Found struct {
	RunID   runtime.RunID `json:"run_id"`
	Started time.Time     `json:"started"`
	// HistoryStarted is the wall-clock moment the history's clock reads
	// zero (its events' times count from it); zero in runs recorded
	// before it was kept, whose wall-clock times are then unknown.
	HistoryStarted time.Time `json:"history_started,omitzero"`
	// HistoryStartedMono is the same moment on the kernel's monotonic
	// clock (history.KernelMonotonic; 0: not recorded), against which a
	// held answer's own stamp is placed on the history's clock.
	HistoryStartedMono int64  `json:"history_started_mono_ns,omitempty"`
	Fencecheck         string `json:"fencecheck_version"`
	TargetVersion      string `json:"target_version,omitempty"`
	// FencecheckRevision is the VCS revision of the fencecheck that ran
	// the run (Fencecheck is its version): the git hash, "+modified" after
	// it when the tree had changes; absent when unknown, and in earlier
	// versions' test.json.
	FencecheckRevision string `json:"fencecheck_revision,omitempty"`
	// Client is the user's lock client program (--client-dir): its name
	// and command; empty: the target's own recipe.
	Client string `json:"client,omitempty"`
	// ClientPath is the client program's directory as --client-dir gave
	// it, and ClientFiles what it held when the run began (after its
	// build step): rerun compares the directory given again with it.
	ClientPath  string        `json:"client_program_dir,omitempty"`
	ClientFiles *ClientDigest `json:"client_files,omitempty"`
	// ClientName is the program's name for itself, from its init_ok (the
	// library and its version: "Curator 5.4.0 InterProcessMutex").
	ClientName string `json:"client_name,omitempty"`
	// Scripted names the script of a scripted run (the demo), empty for
	// a run of the generator.
	Scripted string `json:"scripted,omitempty"`
	// Resources are what the lock protected, in write order, each with
	// its fencing mode and containers; AuditLogName the audit log's
	// resource ("" without --audit-log).
	Resources    []ResourceInfo `json:"resources,omitempty"`
	AuditLogName string         `json:"audit_log,omitempty"`
	// Profile says what the target's profile changes from the general
	// defaults, and why (targets.Profile.Why); flags may override it.
	Profile  string `json:"profile,omitempty"`
	MaxLease string `json:"max_lease,omitempty"` // targets.MaxLease with this TTL and lock-delay
	// Images are the image tags the run used, by kind (base, etcd,
	// worker, ...); a user's own server image (--image target=REF) is
	// under ImageTarget.
	Images       map[string]string `json:"images"`
	ImageIDs     map[string]string `json:"image_ids,omitempty"`
	Servers      []NodeInfo        `json:"servers"`
	ClusterReady string            `json:"cluster_ready"`
	// Rerun is set on a run that fencecheck rerun made: the run it repeats
	// and the fault schedule it replayed.
	Rerun *RerunInfo `json:"rerun,omitempty"`
}

// SetFencecheck records this binary's version and revision
// (buildinfo.Read), for the test.json of a run it makes.
func (f *Found) SetFencecheck() {
	b := buildinfo.Read()
	f.Fencecheck, f.FencecheckRevision = b.Version, b.RevisionString()
}

// MarshalJSON writes the Spec's keys and Found's in one object.
func (t TestInfo) MarshalJSON() ([]byte, error) {
	sp, err := json.Marshal(t.Spec)
	if err != nil {
		return nil, err
	}
	fd, err := json.Marshal(t.Found)
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	for _, b := range [][]byte{sp, fd} {
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads test.json, this version's or an earlier one's.
func (t *TestInfo) UnmarshalJSON(b []byte) error {
	var f Found
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var s spec.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if len(s.Resource) == 0 {
		for _, r := range f.Resources {
			s.Resource = append(s.Resource, r.Name)
		}
	}
	s.AuditLog = s.AuditLog || f.AuditLogName != ""
	if ref := f.Images[ImageTarget]; ref != "" && len(s.Image) == 0 {
		s.Image = map[string]string{ImageTarget: ref}
	}
	t.Spec, t.Found = s, f
	return nil
}

// RerunInfo is what a rerun repeats: the run directory (absolute) and run
// id of the original, and its recorded fault schedule, replayed in order
// instead of the seeded random choice, one step a line in words
// (nemesis.Step's String).
type RerunInfo struct {
	Of       string        `json:"of"`
	RunID    runtime.RunID `json:"run_id,omitempty"`
	Schedule string        `json:"schedule"` // "replayed"
	Faults   []string      `json:"faults"`
}

// ResourceInfo is one resource of the run.
type ResourceInfo struct {
	Name    string     `json:"name"`
	Fencing string     `json:"fencing"`
	Nodes   []NodeInfo `json:"nodes,omitempty"`
}

// NodeInfo is one container of the run.
type NodeInfo struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Tier is the server's role in a target with more than one kind of
	// server (targets.NodeSpec.Tier); absent for the servers clients use.
	Tier string `json:"tier,omitempty"`
}

// WorkloadResult is a workload's checker result; its JSON fields appear at
// the top level of results.json (for lock-append "valid", "checkers",
// "lost_updates", "fence_rejections", "overlaps").
type WorkloadResult interface {
	// Verdict is the workload's verdict; SetVerdict overrides it (an
	// interrupted run's valid becomes unknown).
	Verdict() checkers.Validity
	SetVerdict(checkers.Validity)
	// Summary is the result in workload-neutral figures: what matrix,
	// trends, JUnit, rerun and sweep read, never the workload's own type.
	// Its figures are at the JSON names checkers.Summary lists, so that
	// RawResult's Summary of the written result is the same.
	Summary() checkers.Summary
}

// Results is results.json: the workload's checker result, plus the
// workload's name, the faults of the run and a few figures.
type Results struct {
	Workload string `json:"workload"`
	// Result is the workload's checker result. Read back from results.json
	// it is a RawResult, which the workload decodes (workloads.Workload's
	// Decode) where its fields are needed.
	Result WorkloadResult `json:"-"`
	// Faults are the nemesis's fault windows, from the history.
	Faults []history.Fault `json:"faults"`
	// FaultHits counts the faults aimed at a critical section and whether
	// each was in place while its holder waited there.
	FaultHits *FaultHits `json:"fault_hits,omitempty"`
	// Workers says how many clients kept completing operations once the
	// faults began.
	Workers *Workers `json:"workers,omitempty"`
	// Liveness is how long the lock stayed unavailable after each
	// kill-holder and server kill (nil: the run had none). It is
	// informational: it never changes the verdict.
	Liveness *checkers.LivenessResult `json:"liveness,omitempty"`
	// Events is the number of history events; CheckTime how long the
	// checkers took.
	Events    int    `json:"events"`
	CheckTime string `json:"check_time"`
	// Elapsed is the wall time of the whole run, set-up and teardown
	// included.
	Elapsed string `json:"elapsed,omitempty"`
	// Records are what the run recorded beside its history (the leaders
	// the servers named, the data it kept, ...: internal/base/record), each at
	// its kind's key among results.json's own, between "elapsed" and
	// "interrupted".
	Records     record.Set `json:"-"`
	Interrupted bool       `json:"interrupted,omitempty"`
	Note        string     `json:"note,omitempty"`
	// CheckedBy is the fencecheck that wrote this file, the run's or
	// check's (buildinfo.Info's String: version and revision); test.json
	// names the one that made the run.
	CheckedBy string `json:"checked_by,omitempty"`
}

// Valid is the run's verdict: the workload result's, or unknown without one.
func (r *Results) Valid() checkers.Validity {
	if r.Result == nil {
		return checkers.Unknown
	}
	return r.Result.Verdict()
}

// SetValid overrides the verdict (an interrupted run's valid is unknown).
func (r *Results) SetValid(v checkers.Validity) {
	if r.Result != nil {
		r.Result.SetVerdict(v)
	}
}

// resultsHead and resultsTail are Results's own fields before and after
// its records, for JSON: results.json keeps the order it had when the
// records were named fields.
type resultsHead struct {
	Workload  string                   `json:"workload"`
	Faults    []history.Fault          `json:"faults"`
	FaultHits *FaultHits               `json:"fault_hits,omitempty"`
	Workers   *Workers                 `json:"workers,omitempty"`
	Liveness  *checkers.LivenessResult `json:"liveness,omitempty"`
	Events    int                      `json:"events"`
	CheckTime string                   `json:"check_time"`
	Elapsed   string                   `json:"elapsed,omitempty"`
}

type resultsTail struct {
	Interrupted bool   `json:"interrupted,omitempty"`
	Note        string `json:"note,omitempty"`
	CheckedBy   string `json:"checked_by,omitempty"`
}

// MarshalJSON writes the workload result's fields, then Results's own
// fields with its records among them, in one object.
func (r Results) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(resultsHead{r.Workload, r.Faults, r.FaultHits, r.Workers, r.Liveness, r.Events, r.CheckTime, r.Elapsed})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(resultsTail{r.Interrupted, r.Note, r.CheckedBy})
	if err != nil {
		return nil, err
	}
	recs, err := encodeRecords(r.Records)
	if err != nil {
		return nil, err
	}
	wl := []byte(`{"valid":"unknown"}`)
	if r.Result != nil {
		if wl, err = json.Marshal(r.Result); err != nil {
			return nil, err
		}
	}
	if len(wl) < 2 || wl[0] != '{' {
		wl = []byte("{}")
	}
	return splice(wl, head, recs, tail), nil
}

// encodeRecords is the records as one JSON object, in the set's order. A
// record cannot take one of results.json's own names.
func encodeRecords(s record.Set) ([]byte, error) {
	b := []byte{'{'}
	for i, r := range s {
		if slices.Contains(ownKeys, r.Key()) {
			return nil, fmt.Errorf("store: record %s: results.json has a field of that name", r.Key())
		}
		v, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("store: record %s: %w", r.Key(), err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(r.Key())
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// splice joins JSON objects into one: their members, in order.
func splice(objs ...[]byte) []byte {
	out := []byte{'{'}
	for _, o := range objs {
		inner := o[1 : len(o)-1]
		if len(inner) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, '}')
}

// UnmarshalJSON reads what MarshalJSON writes: the records of the
// registered kinds (record.Register) by their keys, and the workload's
// part as a RawResult.
func (r *Results) UnmarshalJSON(b []byte) error {
	var head resultsHead
	var tail resultsTail
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &tail); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range ownKeys {
		delete(all, k)
	}
	recs, err := record.Decode(all)
	if err != nil {
		return fmt.Errorf("store: results.json: %w", err)
	}
	*r = Results{Workload: head.Workload, Faults: head.Faults, FaultHits: head.FaultHits, Workers: head.Workers, Liveness: head.Liveness,
		Events: head.Events, CheckTime: head.CheckTime, Elapsed: head.Elapsed, Records: recs,
		Interrupted: tail.Interrupted, Note: tail.Note, CheckedBy: tail.CheckedBy}
	raw := RawResult(all)
	if _, err := raw.verdict(); err != nil {
		return err
	}
	r.Result = raw
	return nil
}

// ownKeys are the JSON names of Results's own fields: resultsHead's and
// resultsTail's tags, so that a field added there is one of them.
var ownKeys = jsonNames(resultsHead{}, resultsTail{})

// jsonNames are the JSON names of the fields of the structs vs.
func jsonNames(vs ...any) []string {
	var out []string
	for _, v := range vs {
		t := reflect.TypeOf(v)
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			out = append(out, name)
		}
	}
	return out
}

// FaultHits counts the faults aimed at a critical section (pause-holder,
// partition-client): Hit were in place while the holder waited at its
// failpoint, Missed were not.
type FaultHits struct {
	Aimed  int `json:"aimed"`
	Hit    int `json:"hit"`
	Missed int `json:"missed"`
}

// Workers is what the clients did once faults began: Count clients, of
// which Idle completed no operation after the first fault started.
type Workers struct {
	Count int `json:"count"`
	Idle  int `json:"idle_after_first_fault"`
}

// RawResult is a workload result read back from results.json, undecoded:
// its fields by JSON name.
type RawResult map[string]json.RawMessage

func (r RawResult) verdict() (checkers.Validity, error) {
	var v checkers.Validity
	raw, ok := r["valid"]
	if !ok {
		return checkers.Unknown, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return checkers.Unknown, fmt.Errorf("store: results.json: %w", err)
	}
	return v, nil
}

// Verdict is the "valid" field (unknown when absent).
func (r RawResult) Verdict() checkers.Validity {
	v, _ := r.verdict()
	return v
}

// Summary reads the workload-neutral figures from the JSON names that
// checkers.Summary lists; a field that is absent or does not decode leaves
// its figure zero (Ops nil without "checkers"."stats").
func (r RawResult) Summary() checkers.Summary {
	s := checkers.Summary{Verdict: r.Verdict()}
	var lu struct {
		Acknowledged int                    `json:"acknowledged"`
		Lost         int                    `json:"lost"`
		Elements     []checkers.LostElement `json:"elements"`
	}
	if json.Unmarshal(r["lost_updates"], &lu) == nil {
		s.Updates = true
		s.Acknowledged, s.Lost, s.Losses = lu.Acknowledged, lu.Lost, lu.Elements
	}
	_ = json.Unmarshal(r["fence_rejections"], &s.FenceRejections)
	var first int64
	if json.Unmarshal(r["first_lost_update_ns"], &first) == nil {
		s.FirstLostNS = &first
	}
	var c struct {
		Stats *struct {
			Ok   int `json:"ok"`
			Fail int `json:"fail"`
			Info int `json:"info"`
		} `json:"stats"`
	}
	if json.Unmarshal(r["checkers"], &c) == nil && c.Stats != nil {
		s.Ops = &checkers.OpCounts{OK: c.Stats.Ok, Fail: c.Stats.Fail, Info: c.Stats.Info}
	}
	return s
}

// SetVerdict sets the "valid" field.
func (r RawResult) SetVerdict(v checkers.Validity) {
	b, _ := json.Marshal(v)
	r["valid"] = b
}

// ClientDigest is what a client directory held: each file's hash (of its
// mode and contents) by relative path, and a hash over them all.
type ClientDigest struct {
	Hash  string            `json:"hash"`
	Files map[string]string `json:"files"`
}
