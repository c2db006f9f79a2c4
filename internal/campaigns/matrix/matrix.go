// Package matrix is fencecheck's matrix: a base spec times its axes
// expanded into cells (Cells, with the cells skipped and why), the cells
// run one after another (Run), shards of a matrix (Shard) and their merge
// (Merge), and what a matrix writes and prints: matrix.json,
// matrix-junit.xml, the comparison with a baseline and the summary table.
// The command line (internal/cli) parses the flags, calls it and prints.
package matrix

import (
	"path/filepath"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// File is the matrix's summary, at the root of its results directory
// (trends owns the file's type: the writer's and every reader's).
const File = trends.MatrixFile

// JUnitFile is the matrix's JUnit XML, at the root of its results
// directory: one test case per cell, red only for a cell that must be valid
// and is not (an unfenced cell's lost updates are its finding, not a
// failure).
const JUnitFile = "matrix-junit.xml"

// Exit codes, the command line's (as Jepsen's): 0 valid, 1 invalid, 2
// unknown, 254 bad arguments or input, 255 the harness itself failed. A
// matrix's is its cells' (Exit).
const (
	ExitValid   = cmdline.ExitValid
	ExitInvalid = cmdline.ExitInvalid
	ExitUnknown = cmdline.ExitUnknown
	ExitBadArgs = cmdline.ExitBadArgs
	ExitHarness = cmdline.ExitHarness
)

// errUsage marks bad arguments and bad input (exit 254): the worker's and
// the command line's.
var errUsage = cmdline.ErrUsage

// Job is a cell to run: its matrix.json record and its run's
// configuration.
type Job struct {
	trends.MatrixCell
	Config harness.Config
	// Refusal, when not nil, is why the cell cannot run, known before it
	// starts (clientproto.ErrNoTokens): Run records it refused, without a
	// run.
	Refusal error
}

// Records are the jobs' matrix.json records.
func Records(jobs []Job) []trends.MatrixCell {
	out := make([]trends.MatrixCell, len(jobs))
	for i, c := range jobs {
		out[i] = c.MatrixCell
	}
	return out
}

// fill records a finished run in its cell.
func (c *Job) fill(out *harness.Outcome) {
	r := out.Results
	// An interrupted run that found nothing is unknown already; one that
	// found a lost update stays invalid (harness.MarkInterrupted).
	c.Verdict = r.Valid().String()
	c.RunDir, _ = filepath.Abs(out.Run.Dir)
	c.Elapsed = r.Elapsed
	if r.Result != nil {
		sum := r.Result.Summary()
		c.Acknowledged, c.Lost, c.FenceRejections = sum.Acknowledged, sum.Lost, sum.FenceRejections
		if sum.FirstLostNS != nil {
			s := float64(*sum.FirstLostNS) / 1e9
			c.FirstLostS = &s
		}
		if ops := sum.Ops; ops != nil && !out.Interrupted && !r.Interrupted {
			secs := c.Config.TimeLimit.Seconds()
			c.OpsOK, c.OpsFail, c.OpsInfo, c.ClientS = &ops.OK, &ops.Fail, &ops.Info, &secs
		}
	}
	if l := r.Liveness; l != nil {
		for _, sum := range []*checkers.LivenessSummary{l.HolderCrash, l.ServerKill} {
			if sum != nil && sum.Count > 0 {
				s, ttls := sum.MedianS, sum.MedianTTLs
				c.RecoveryS, c.RecoveryTTLs = &s, &ttls
				break
			}
		}
	}
}

// Exit is the matrix's exit code: 255 if the harness failed on a cell,
// else 1 if a cell that must be valid is invalid, else 2 if one is unknown
// or was not run, or the matrix was interrupted, else 254 if every cell was
// refused (its configuration cannot run), else 0. A refused cell among
// others that ran changes nothing: it tested nothing, and nothing failed.
func Exit(cells []trends.MatrixCell, interrupted bool) int {
	code := ExitValid
	if interrupted {
		code = ExitUnknown
	}
	refused := 0
	for _, c := range cells {
		switch {
		case c.Verdict == trends.Error:
			return ExitHarness
		case c.Verdict == trends.Refused:
			refused++
		case !c.MustBeValid:
		case c.Verdict == checkers.Invalid.String():
			code = ExitInvalid
		case c.Verdict != checkers.Valid.String() && code == ExitValid:
			code = ExitUnknown
		}
	}
	if refused > 0 && refused == len(cells) && code == ExitValid {
		return ExitBadArgs
	}
	return code
}

// TargetWords is the cell's target as tables print it: with its name when
// the matrix gave it one (NAME=TARGET) and its version when the matrix has
// a version axis ("prod=etcd 3.4.3").
func TargetWords(c trends.MatrixCell) string {
	t := c.Target
	if c.Label != "" {
		t = c.Label + "=" + c.Target
	}
	if c.Version != "" {
		t += " " + c.Version
	}
	return t
}

// AxisWords is ", " and the cell's axes ("ttl=1s"), or "" when it has none.
func AxisWords(c trends.MatrixCell) string {
	if len(c.Axes) == 0 {
		return ""
	}
	return ", " + c.AxesText()
}

// ModeWords is the cell's mode in words: "fencing token", "linearizable
// reads".
func ModeWords(c trends.MatrixCell) string {
	if c.WorkloadName() == "register" {
		return c.ReadMode + " reads"
	}
	return "fencing " + c.Fencing
}
