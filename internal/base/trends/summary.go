package trends

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// JSONFile is the trends of a root of nights, at its root.
const JSONFile = "trends.json"

// Summary is the trends of a root of nights (trends.json): every cell of
// every night, night by night.
type Summary struct {
	Nights []NightInfo `json:"nights"`
	Cells  []Trend     `json:"cells"`
	// Regressions are the newest night's: each of its cells against the
	// last earlier night in which that cell ran to a verdict (for a cell
	// that must be valid, a verdict other than unknown).
	Regressions []Regression `json:"regressions"`
	// Unjudged says why the newest night cannot be judged (Unjudged's
	// error), when it cannot: the regressions are then the last readable
	// night's, and trends exits 2.
	Unjudged string `json:"unjudged,omitempty"`
}

// NightInfo is one night as the summary lists it.
type NightInfo struct {
	Dir      string    `json:"dir"`
	Started  time.Time `json:"started"`
	ExitCode int       `json:"exit_code"`
	Cells    int       `json:"cells"`
	Err      string    `json:"error,omitempty"`
}

// Trend is one cell across the nights.
type Trend struct {
	Key Key `json:"key"`
	// MustBeValid is the cell's in the newest night that has it.
	MustBeValid bool `json:"must_be_valid"`
	// Strip has one Mark per night of the summary, oldest first.
	Strip []Mark `json:"strip"`
	// Runs counts the nights the cell ran to a verdict.
	Runs int `json:"runs"`
	// Detected counts, for a cell that is not judged (unfenced), the
	// nights it lost updates (a register cell in a weak read mode: the
	// nights it was invalid); DetectionRate is Detected / Runs.
	Detected      *int     `json:"detected,omitempty"`
	DetectionRate *float64 `json:"detection_rate,omitempty"`
	// MedianFirstLostS is the median time to the first lost update over
	// the nights that lost one; MedianOpsPerS the median throughput over
	// the nights whose matrix.json records it.
	MedianFirstLostS *float64 `json:"median_first_lost_s,omitempty"`
	MedianOpsPerS    *float64 `json:"median_ops_per_s,omitempty"`
	// Regressions are every night's, oldest first.
	Regressions []Regression `json:"regressions,omitempty"`
}

// Mark is a cell on one night.
type Mark struct {
	// Verdict is the cell's, "" when the night did not have it.
	Verdict      string   `json:"verdict"`
	Lost         int      `json:"lost"`
	Acknowledged int      `json:"acknowledged"`
	FirstLostS   *float64 `json:"first_lost_s,omitempty"`
	OpsPerS      *float64 `json:"ops_per_s,omitempty"`
	Ran          string   `json:"ran,omitempty"`
	// Run is the run's directory relative to the root of nights.
	Run string `json:"run,omitempty"`
	// Regressed is the kind of regression on this night, if any.
	Regressed string `json:"regressed,omitempty"`
}

// Summarize follows every cell of the nights (oldest first) across them.
// Cells are listed in the newest night's order, then those only older
// nights have.
func Summarize(nights []Night) Summary {
	s := Summary{Nights: []NightInfo{}, Cells: []Trend{}, Regressions: []Regression{}}
	var keys []Key
	seen := map[Key]bool{}
	for i := len(nights) - 1; i >= 0; i-- {
		for _, c := range nights[i].Cells {
			if !seen[c.Key] {
				seen[c.Key] = true
				keys = append(keys, c.Key)
			}
		}
	}
	byKey := make([]map[Key]Cell, len(nights))
	for i, n := range nights {
		s.Nights = append(s.Nights, NightInfo{Dir: n.Dir, Started: n.Started, ExitCode: n.ExitCode, Cells: len(n.Cells), Err: n.Err})
		byKey[i] = n.byKey()
	}
	for _, k := range keys {
		t := Trend{Key: k, Strip: make([]Mark, len(nights))}
		var prev *Cell
		var prevDir string
		var firsts, ops []float64
		detected := 0
		for i, n := range nights {
			c, ok := byKey[i][k]
			if !ok {
				continue
			}
			m := Mark{Verdict: c.Verdict, Lost: c.Lost, Acknowledged: c.Acknowledged, FirstLostS: c.FirstLostS, OpsPerS: c.OpsPerS, Ran: c.Ran}
			if c.Run != "" {
				m.Run = n.Dir + "/" + c.Run
			}
			t.MustBeValid = c.MustBeValid
			if prev != nil {
				if r, ok := Regressed(*prev, c); ok {
					r.WasDir, r.NowDir = prevDir, n.Dir
					m.Regressed = r.Kind
					t.Regressions = append(t.Regressions, r)
					if i == len(nights)-1 {
						s.Regressions = append(s.Regressions, r)
					}
				}
			}
			t.Strip[i] = m
			if !c.RanToVerdict() {
				continue
			}
			t.Runs++
			// The next night is compared with this one, unless it decided
			// nothing: a cell that must be valid and is unknown (valid,
			// unknown, invalid is a fence that failed).
			if !c.MustBeValid || c.Verdict != Unknown {
				prev, prevDir = &c, n.Dir
			}
			// What an unjudged cell detects: lost updates (lock-append),
			// or, for a register cell in a weak read mode, reads the
			// model cannot explain (an invalid verdict).
			if c.Lost > 0 || (c.Key.Workload != "" && c.Verdict == Invalid) {
				detected++
			}
			if c.FirstLostS != nil {
				firsts = append(firsts, *c.FirstLostS)
			}
			if c.OpsPerS != nil {
				ops = append(ops, *c.OpsPerS)
			}
		}
		if !t.MustBeValid && t.Runs > 0 {
			rate := float64(detected) / float64(t.Runs)
			t.Detected, t.DetectionRate = &detected, &rate
		}
		t.MedianFirstLostS, t.MedianOpsPerS = median(firsts), median(ops)
		s.Cells = append(s.Cells, t)
	}
	return s
}

// median is the median of xs, nil for none.
func median(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + m) / 2
	}
	return &m
}

// WriteJSON writes the summary as trends.json in dir, replacing it
// atomically.
func WriteJSON(dir string, s Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("trends: %w", err)
	}
	return ReplaceFile(dir, JSONFile, append(b, '\n'))
}

// ReplaceFile writes b as dir/name through a temporary file renamed into
// place, so that a reader never sees half a file.
func ReplaceFile(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+"-*.tmp")
	if err != nil {
		return fmt.Errorf("trends: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := cmp.Or(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("trends: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("trends: %w", err)
	}
	return nil
}

// StripText is the cell's verdicts night by night as letters: V valid,
// I invalid, U unknown, E error, - not run (or not in that night); a
// regression is marked by a "!" after its letter.
func (t Trend) StripText() string {
	var b bytes.Buffer
	for _, m := range t.Strip {
		switch m.Verdict {
		case Valid:
			b.WriteByte('V')
		case Invalid:
			b.WriteByte('I')
		case Unknown:
			b.WriteByte('U')
		case Error:
			b.WriteByte('E')
		case Refused:
			b.WriteByte('R')
		default:
			b.WriteByte('-')
		}
		if m.Regressed != "" {
			b.WriteByte('!')
		}
	}
	return b.String()
}
