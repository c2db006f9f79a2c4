package matrix

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func TestMatrixExit(t *testing.T) {
	cell := func(fencing, verdict string) trends.MatrixCell {
		return trends.MatrixCell{Fencing: fencing, Verdict: verdict, MustBeValid: fencing != "none"}
	}
	for _, c := range []struct {
		name        string
		cells       []trends.MatrixCell
		interrupted bool
		want        int
	}{
		{"all valid", []trends.MatrixCell{cell("none", "valid"), cell("token", "valid")}, false, ExitValid},
		{"unfenced lost updates are the finding, not a failure", []trends.MatrixCell{cell("none", "invalid"), cell("token", "valid"), cell("cas", "valid")}, false, ExitValid},
		{"a fence that failed", []trends.MatrixCell{cell("none", "invalid"), cell("token", "invalid"), cell("cas", "valid")}, false, ExitInvalid},
		{"unknown fenced cell", []trends.MatrixCell{cell("token", "unknown"), cell("cas", "valid")}, false, ExitUnknown},
		{"invalid outranks unknown", []trends.MatrixCell{cell("token", "unknown"), cell("cas", "invalid")}, false, ExitInvalid},
		{"not run after Ctrl-C", []trends.MatrixCell{cell("token", "valid"), cell("cas", "not run")}, false, ExitUnknown},
		{"unfenced unknown is not judged", []trends.MatrixCell{cell("none", "unknown"), cell("token", "valid")}, false, ExitValid},
		{"harness error anywhere", []trends.MatrixCell{cell("none", "error"), cell("token", "invalid")}, false, ExitHarness},
		{"a refused cell among valid ones", []trends.MatrixCell{cell("none", "invalid"), cell("token", "refused"), cell("none", "valid")}, false, ExitValid},
		{"a refused cell does not hide a failed fence", []trends.MatrixCell{cell("token", "refused"), cell("cas", "invalid")}, false, ExitInvalid},
		{"every cell refused", []trends.MatrixCell{cell("token", "refused"), cell("token", "refused")}, false, ExitBadArgs},
		{"strict judges unfenced cells", []trends.MatrixCell{{Fencing: "none", Verdict: "invalid", MustBeValid: true}}, false, ExitInvalid},
		{"interrupted with only unfenced cells left", []trends.MatrixCell{cell("token", "valid"), cell("none", "not run")}, true, ExitUnknown},
		{"interrupted after a fence failed", []trends.MatrixCell{cell("token", "invalid"), cell("cas", "not run")}, true, ExitInvalid},
	} {
		if got := Exit(c.cells, c.interrupted); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

func TestPrintMatrix(t *testing.T) {
	first, rec, ttls := 7.6, 2.13, 1.07
	var b bytes.Buffer
	Print(&b, []trends.MatrixCell{
		{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Seed: 1, Verdict: "invalid", Acknowledged: 97, Lost: 4, FirstLostS: &first},
		{Target: "etcd", Nemesis: "pause-holder", Fencing: "token", Seed: 1, Verdict: "valid", MustBeValid: true, Acknowledged: 95, FenceRejections: 4},
		{Target: "etcd", Nemesis: "kill-holder", Fencing: "token", Seed: 1, Verdict: "valid", MustBeValid: true, Acknowledged: 30, RecoveryS: &rec, RecoveryTTLs: &ttls},
	}, ExitValid)
	out := b.String()
	for _, want := range []string{"invalid*", "4/97", "7.6s", "lost updates in 1 of 1", "PASS", "recovery", "2.1s 1.07TTL"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A cell takes its recovery column from the run's liveness block: the
// holder crashes' median if it measured any, else the server kills'.
func TestMatrixCellRecovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		liveness *checkers.LivenessResult
		want     *float64
	}{
		{"none", nil, nil},
		{"holder crash", &checkers.LivenessResult{HolderCrash: &checkers.LivenessSummary{Count: 2, MedianS: 2.5, MedianTTLs: 1.25},
			ServerKill: &checkers.LivenessSummary{Count: 1, MedianS: 9, MedianTTLs: 4.5}}, ptr(2.5)},
		{"server kill only", &checkers.LivenessResult{HolderCrash: &checkers.LivenessSummary{Unrecovered: 1},
			ServerKill: &checkers.LivenessSummary{Count: 1, MedianS: 9, MedianTTLs: 4.5}}, ptr(9.0)},
		{"nothing measured", &checkers.LivenessResult{ServerKill: &checkers.LivenessSummary{NotWaited: 1}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Job
			c.fill(&harness.Outcome{Run: &store.Run{Dir: t.TempDir()},
				Results: &store.Results{Result: &lockappend.Result{Valid: checkers.Valid}, Liveness: tc.liveness}})
			switch {
			case tc.want == nil && c.RecoveryS != nil:
				t.Errorf("recovery %v, want none", *c.RecoveryS)
			case tc.want != nil && (c.RecoveryS == nil || *c.RecoveryS != *tc.want || c.RecoveryTTLs == nil || *c.RecoveryTTLs != *tc.want/2):
				t.Errorf("recovery %v / %v TTLs, want %v s, %v TTLs", c.RecoveryS, c.RecoveryTTLs, *tc.want, *tc.want/2)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestMatrixFileRoundTrip: what matrix writes, merge and trends read back
// whole, through the one type; an election cell keeps its fencing in its
// key; a matrix.json of before the workload axis still reads.
func TestMatrixFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ok, s := 40, 10.0
	first := 1.5
	sum := trends.Matrix{Started: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), Args: []string{"--workload", "lock-append,election"},
		Cells: []trends.MatrixCell{
			{Cell: 0, Target: "etcd", Resource: "lock-store", Nemesis: "pause-holder", Fencing: "token", Seed: 1, Verdict: "valid", MustBeValid: true,
				Acknowledged: 40, OpsOK: &ok, ClientS: &s, Run: "etcd-pause-holder-token/x"},
			{Cell: 1, Workload: "election", Label: "prod", Target: "zookeeper", Version: "3.9", Resource: "lock-store", Nemesis: "pause-holder",
				Fencing: "term", Seed: 1, Verdict: "invalid", MustBeValid: true, Acknowledged: 9, Lost: 1, FenceRejections: 2, FirstLostS: &first},
			{Cell: 2, Workload: "register", ReadMode: "linearizable", Target: "etcd", Resource: "lock-store", Nemesis: "kill", Fencing: "none",
				Seed: 1, Verdict: "valid", MustBeValid: true},
		},
		ExitCode: 1, TotalCells: 3}
	if err := Write(dir, sum); err != nil {
		t.Fatal(err)
	}
	back, err := readShardMatrix(dir)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := sum.Encode()
	b2, _ := back.Encode()
	if !bytes.Equal(b1, b2) {
		t.Errorf("read back differs:\n%s\nwrote:\n%s", b2, b1)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	night, err := trends.ReadNight(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range night.Cells {
		keys = append(keys, c.Key.String())
	}
	want := []string{"etcd lock-store pause-holder token #1", "prod election lock-store pause-holder term #1", "etcd register lock-store kill linearizable #1"}
	if !slices.Equal(keys, want) || night.Cells[0].OpsPerS == nil || *night.Cells[0].OpsPerS != 4 || night.Cells[1].Ran != "zookeeper" || night.Cells[1].Lost != 1 {
		t.Errorf("night's cells %q, want %q; %+v", keys, want, night.Cells)
	}
	for i, c := range sum.Cells {
		if CellKey(c) != CellKey(back.Cells[i]) {
			t.Errorf("cell %d: %s read back as %s", i, CellKey(c), CellKey(back.Cells[i]))
		}
	}
	// Before the workload axis: no workload, no ops.
	old := `{"started":"2025-01-01T00:00:00Z","args":[],"strict":false,"cells":[{"cell":0,"target":"etcd","resource":"lock-store","nemesis":"pause-holder","fencing":"none","seed":3,"verdict":"invalid","must_be_valid":false,"acknowledged":10,"lost":2,"fence_rejections":0}],"exit_code":0,"total_cells":1}`
	if err := os.WriteFile(filepath.Join(dir, File), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := readShardMatrix(dir)
	if err != nil || len(m.Cells) != 1 || m.Cells[0].WorkloadName() != "lock-append" || m.Cells[0].ID().String() != "etcd lock-store pause-holder none" {
		t.Errorf("old matrix.json: %v %+v", err, m)
	}
}

// A refused cell is a skipped case of matrix-junit.xml, saying why; it is
// neither a failure nor an error.
func TestMatrixJUnitRefused(t *testing.T) {
	dir := t.TempDir()
	cells := []trends.MatrixCell{
		{Target: "redis", Fencing: "token", Verdict: "refused", MustBeValid: true, Error: "worker w1: setup: bad configuration: the client program's leases carry no fencing token"},
		{Target: "redis", Fencing: "none", Verdict: "invalid"},
	}
	if err := WriteJUnit(dir, cells); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `failures="0" errors="0"`) || !strings.Contains(s, `<skipped type="refused" message="the cell&#39;s configuration cannot run: worker w1: setup: bad configuration: the client program&#39;s leases carry no fencing token">`) {
		t.Errorf("matrix-junit.xml:\n%s", s)
	}
}

// Merge keeps cells that differ only by an axis apart: each keeps its
// axes, and a shard whose cell has another TTL is of another matrix.
func TestMergeKeepsAxes(t *testing.T) {
	withTTL := func(i int, ttl string) trends.MatrixCell {
		c := cell(i, "token", "valid")
		c.Axes = map[string]string{"ttl": ttl}
		return c
	}
	a := writeShard(t, "1/2", 2, withTTL(0, "1s"))
	b := writeShard(t, "2/2", 2, withTTL(1, "2s"))
	m, err := Merge(t.TempDir(), []string{a, b}, io.Discard)
	if err != nil || len(m.Cells) != 2 || m.Cells[0].Axes["ttl"] != "1s" || m.Cells[1].Axes["ttl"] != "2s" || m.Cells[0].ID() == m.Cells[1].ID() {
		t.Fatalf("merged: %v, %+v", err, m.Cells)
	}
	other := writeShard(t, "1/2", 2, withTTL(0, "2s"))
	half := t.TempDir()
	if _, err := Merge(half, []string{a}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(t.TempDir(), []string{half, other}, io.Discard); err == nil || !strings.Contains(err.Error(), "not shards of one matrix") {
		t.Fatalf("cell 0 with TTL 1s and 2s: %v", err)
	}
}
