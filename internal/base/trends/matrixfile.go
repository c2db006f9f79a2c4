package trends

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Matrix is matrix.json, the matrix's summary at the root of its results
// directory: the one type that matrix and merge write and that trends,
// merge and --baseline read.
type Matrix struct {
	Started  time.Time    `json:"started"`
	Args     []string     `json:"args"`
	Strict   bool         `json:"strict"`
	Cells    []MatrixCell `json:"cells"`
	ExitCode int          `json:"exit_code"`
	// TotalCells is the whole matrix's number of cells; Shard says which of
	// them this directory holds ("2/4", or how many shards were merged).
	TotalCells int    `json:"total_cells"`
	Shard      string `json:"shard,omitempty"`
	// Baseline is the comparison with --baseline's matrix, when one was
	// given; ExitCode is then 1 if a cell regressed (255 stays 255).
	Baseline *Comparison `json:"baseline,omitempty"`
	// Duplicates are the cells merge found in more than one of its shard
	// directories (a re-run's results downloaded beside an earlier
	// attempt's), and which copy it kept: the newest that ran.
	Duplicates []Duplicate `json:"duplicates,omitempty"`
}

// Duplicate is a cell that more than one shard directory of a merge held:
// the copy merge kept and those it left out.
type Duplicate struct {
	Cell    int        `json:"cell"`
	Kept    CellCopy   `json:"kept"`
	Dropped []CellCopy `json:"dropped"`
}

// CellCopy is one shard directory's copy of a cell: the directory as merge
// was given it, the cell's run there ("" without one), when it started
// (its run's stamp, else its shard's start) and its verdict.
type CellCopy struct {
	Shard   string    `json:"shard"`
	Run     string    `json:"run,omitempty"`
	Started time.Time `json:"started"`
	Verdict string    `json:"verdict"`
}

// MatrixCell is one run of a matrix, as matrix.json records it. Fields
// added later (label, workload, ops_ok, client_s, ...) are absent from
// older files, and read as zero.
type MatrixCell struct {
	// Cell is the cell's position in the whole matrix (0-based), the same
	// in every shard.
	Cell int `json:"cell"`
	// Label is the name the cell's target has in this matrix and across
	// nights (--target LABEL=TARGET), when it is not the target's own.
	Label string `json:"label,omitempty"`
	// Workload is the cell's workload ("" in matrices made before the
	// workload axis: lock-append); ReadMode is a register cell's read
	// mode, in place of a fencing mode.
	Workload string `json:"workload,omitempty"`
	ReadMode string `json:"read_mode,omitempty"`
	Target   string `json:"target"`
	// Version is the target's --version ("" its default).
	Version  string `json:"version,omitempty"`
	Resource string `json:"resource"`
	Nemesis  string `json:"nemesis"`
	Fencing  string `json:"fencing"`
	// Axes are the cell's values of the knobs the matrix varied besides
	// those above (matrix --ttl 1s,2s: {"ttl": "1s"}), by flag name; absent
	// when the matrix varied none (a knob given one value is not an axis).
	Axes map[string]string `json:"axes,omitempty"`
	Seed uint64            `json:"seed"`
	// Verdict is "valid", "invalid" or "unknown"; "error" when the harness
	// failed (Error says why), "refused" when the cell's configuration
	// cannot run (Error says why), "not run" after Ctrl-C.
	Verdict string `json:"verdict"`
	// MustBeValid: a fenced cell, a register cell whose read mode the
	// target promises linearizable (or every cell, with --strict). Only
	// these decide the exit code; an unfenced cell's lost updates, and a
	// weak read mode's stale reads, are the findings the matrix exists to
	// show.
	MustBeValid     bool     `json:"must_be_valid"`
	Acknowledged    int      `json:"acknowledged"`
	Lost            int      `json:"lost"`
	FenceRejections int      `json:"fence_rejections"`
	FirstLostS      *float64 `json:"first_lost_s,omitempty"`
	// OpsOK, OpsFail and OpsInfo count the run's operations by outcome;
	// ClientS is how long its clients ran operations (the time limit), so
	// that OpsOK / ClientS is its throughput. Absent from an interrupted
	// run, and from matrix.json files written before they were added.
	OpsOK   *int     `json:"ops_ok,omitempty"`
	OpsFail *int     `json:"ops_fail,omitempty"`
	OpsInfo *int     `json:"ops_info,omitempty"`
	ClientS *float64 `json:"client_s,omitempty"`
	// RecoveryS and RecoveryTTLs are the cell's liveness (results.json's
	// liveness): the median time until the lock was granted again after
	// a holder crash (kill-holder), or else after a server kill, in
	// seconds and TTLs; nil when the cell measured none.
	RecoveryS    *float64 `json:"recovery_s,omitempty"`
	RecoveryTTLs *float64 `json:"recovery_ttls,omitempty"`
	Elapsed      string   `json:"elapsed,omitempty"`
	RunDir       string   `json:"run_dir,omitempty"`
	// Run is the run's directory relative to the results directory (merge
	// finds it there, wherever the shard's directory was moved).
	Run   string `json:"run,omitempty"`
	Error string `json:"error,omitempty"`
	// Story is the first story the cell's report tells, in the one line
	// its header gives it (how a stale write lost updates, or was fenced),
	// for a cell that ran to a verdict other than valid; absent when the
	// report tells none, and from matrix.json files written before it.
	Story string `json:"story,omitempty"`
}

// WorkloadName is the cell's workload ("lock-append" for cells of
// matrices made before the workload axis).
func (c MatrixCell) WorkloadName() string { return cmp.Or(c.Workload, "lock-append") }

// Mode is the cell's fencing mode, or a register cell's read mode.
func (c MatrixCell) Mode() string {
	if c.WorkloadName() == "register" {
		return c.ReadMode
	}
	return c.Fencing
}

// ID is the cell's identity, the same across nights and shards: its
// target (the name the matrix gave it, else the target at its version),
// workload ("" for lock-append), resource, nemesis, mode (Mode) and axes
// (AxesText). Run is
// 0: the cell's run number among cells of one ID is its place in the
// matrix (ReadNight numbers them). The seed is not part of it.
func (c MatrixCell) ID() Key {
	target := c.Target
	if c.Version != "" {
		target += "@" + c.Version
	}
	k := Key{Target: cut(cmp.Or(c.Label, target)), Resource: cut(c.Resource), Nemesis: cut(c.Nemesis), Fencing: cut(c.Mode())}
	if c.WorkloadName() != "lock-append" {
		k.Workload = cut(c.Workload)
	}
	k.Axes = cut(c.AxesText())
	return k
}

// AxesText is the cell's axes as one string, "concurrency=2 ttl=1s" (by
// flag name; "" when it has none).
func (c MatrixCell) AxesText() string {
	flags := make([]string, 0, len(c.Axes))
	for f := range c.Axes {
		flags = append(flags, f)
	}
	slices.Sort(flags)
	for i, f := range flags {
		flags[i] = f + "=" + c.Axes[f]
	}
	return strings.Join(flags, " ")
}

// Throughput is OpsOK / ClientS, nil when the cell does not say.
func (c MatrixCell) Throughput() *float64 {
	if c.OpsOK == nil || c.ClientS == nil || *c.ClientS <= 0 {
		return nil
	}
	v := float64(*c.OpsOK) / *c.ClientS
	return &v
}

// Encode is m as matrix.json holds it: indented JSON and a newline.
func (m Matrix) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// DecodeMatrix reads a matrix.json's contents (at most MaxCells cells).
// The error wraps ErrBadMatrix.
func DecodeMatrix(b []byte) (Matrix, error) {
	var m Matrix
	if err := json.Unmarshal(b, &m); err != nil {
		return Matrix{}, fmt.Errorf("%w: %w", ErrBadMatrix, err)
	}
	if len(m.Cells) > MaxCells {
		return Matrix{}, fmt.Errorf("%w: %d cells, at most %d", ErrBadMatrix, len(m.Cells), MaxCells)
	}
	return m, nil
}
