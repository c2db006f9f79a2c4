package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/store"
)

func TestMatrixExit(t *testing.T) {
	cell := func(fencing, verdict string) matrixCell {
		return matrixCell{Fencing: fencing, Verdict: verdict, MustBeValid: fencing != "none"}
	}
	for _, c := range []struct {
		name        string
		cells       []matrixCell
		interrupted bool
		want        int
	}{
		{"all valid", []matrixCell{cell("none", "valid"), cell("token", "valid")}, false, exitValid},
		{"unfenced lost updates are the finding, not a failure", []matrixCell{cell("none", "invalid"), cell("token", "valid"), cell("cas", "valid")}, false, exitValid},
		{"a fence that failed", []matrixCell{cell("none", "invalid"), cell("token", "invalid"), cell("cas", "valid")}, false, exitInvalid},
		{"unknown fenced cell", []matrixCell{cell("token", "unknown"), cell("cas", "valid")}, false, exitUnknown},
		{"invalid outranks unknown", []matrixCell{cell("token", "unknown"), cell("cas", "invalid")}, false, exitInvalid},
		{"not run after Ctrl-C", []matrixCell{cell("token", "valid"), cell("cas", "not run")}, false, exitUnknown},
		{"unfenced unknown is not judged", []matrixCell{cell("none", "unknown"), cell("token", "valid")}, false, exitValid},
		{"harness error anywhere", []matrixCell{cell("none", "error"), cell("token", "invalid")}, false, exitHarness},
		{"strict judges unfenced cells", []matrixCell{{Fencing: "none", Verdict: "invalid", MustBeValid: true}}, false, exitInvalid},
		{"interrupted with only unfenced cells left", []matrixCell{cell("token", "valid"), cell("none", "not run")}, true, exitUnknown},
		{"interrupted after a fence failed", []matrixCell{cell("token", "invalid"), cell("cas", "not run")}, true, exitInvalid},
	} {
		if got := matrixExit(c.cells, c.interrupted); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

func TestMatrixCells(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o := addRunFlags(fs)
	var tl listFlag
	fs.Var(&tl, "target", "")
	if err := fs.Parse([]string{"--target", "etcd", "--target", "redis,redis-nopersist"}); err != nil {
		t.Fatal(err)
	}
	if want := (listFlag{"etcd", "redis", "redis-nopersist"}); tl.String() != want.String() {
		t.Errorf("repeated list flag: %v, want %v", tl, want)
	}
	cells, _, err := matrixCells(o, []string{"etcd", "redis"}, []string{"lock-store"}, []string{"none", "token"},
		[]string{"pause-holder", "kill:leader,partition:halves"}, 7, 2, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*2*2*2 {
		t.Fatalf("%d cells, want 16", len(cells))
	}
	names := map[string]bool{}
	for _, c := range cells {
		if c.MustBeValid != (c.Fencing != "none") {
			t.Errorf("%+v: must be valid exactly when fenced", c)
		}
		if c.Seed != 7 && c.Seed != 8 {
			t.Errorf("seed %d, want 7 or 8", c.Seed)
		}
		names[c.cfg.Name] = true
	}
	for _, want := range []string{"etcd-pause-holder-none", "redis-kill-leader-partition-halves-token"} {
		if !names[want] {
			t.Errorf("no run named %s in %v", want, names)
		}
	}
	// Each target gets its own default lease: Consul's sessions last 10s at
	// least, etcd's default is 2s.
	mixed, _, err := matrixCells(o, []string{"etcd", "consul"}, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"}, 1, 1, false, io.Discard)
	if err != nil || len(mixed) != 2 || mixed[0].cfg.TTL != 2*time.Second || mixed[1].cfg.TTL != 10*time.Second {
		t.Errorf("etcd and consul with the default --ttl: %v", err)
	}
	strict, _, _ := matrixCells(o, []string{"etcd"}, []string{"lock-store"}, []string{"none"}, []string{"pause-holder"}, 1, 1, true, io.Discard)
	if len(strict) != 1 || !strict[0].MustBeValid {
		t.Errorf("--strict: %+v", strict)
	}
	// The resource axis: a fencing mode a resource lacks (the proxy's cas)
	// skips that cell and says why; the others run, each named by its
	// resource.
	rcells, skipped, err := matrixCells(o, []string{"redis"}, []string{"postgres", "proxy", "postgres,proxy"}, []string{"none", "token", "cas"},
		[]string{"pause-holder"}, 1, 1, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcells) != 3+2+2 || len(skipped) != 2 || !strings.Contains(skipped[0], "proxy has no cas fencing (it has none, token)") {
		t.Fatalf("%d cells, skipped %q; want 7 cells and 2 skipped", len(rcells), skipped)
	}
	got := map[string]bool{}
	for _, c := range rcells {
		got[c.cfg.Name] = true
		if len(c.cfg.Resources) == 0 || c.Resource == "" {
			t.Errorf("cell %s has no resource", c.cfg.Name)
		}
	}
	for _, want := range []string{"redis-pause-holder-postgres-cas", "redis-pause-holder-proxy-token", "redis-pause-holder-postgres-proxy-none"} {
		if !got[want] {
			t.Errorf("no cell named %s in %v", want, got)
		}
	}
}

func TestPrintMatrix(t *testing.T) {
	first, rec, ttls := 7.6, 2.13, 1.07
	var b bytes.Buffer
	printMatrix(&b, []matrixCell{
		{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Seed: 1, Verdict: "invalid", Acknowledged: 97, Lost: 4, FirstLostS: &first},
		{Target: "etcd", Nemesis: "pause-holder", Fencing: "token", Seed: 1, Verdict: "valid", MustBeValid: true, Acknowledged: 95, FenceRejections: 4},
		{Target: "etcd", Nemesis: "kill-holder", Fencing: "token", Seed: 1, Verdict: "valid", MustBeValid: true, Acknowledged: 30, RecoveryS: &rec, RecoveryTTLs: &ttls},
	}, exitValid)
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
			var c matrixCell
			c.fill(&harness.Outcome{Run: &store.Run{Dir: t.TempDir()},
				Results: &store.Results{Result: &checkers.LockAppendResult{Valid: checkers.Valid}, Liveness: tc.liveness}})
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
