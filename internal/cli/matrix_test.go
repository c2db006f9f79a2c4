package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/checkers"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/nemesis"
	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/internal/trends"
	"github.com/fencecheck/fencecheck/internal/workloads/lockappend"
	"github.com/fencecheck/fencecheck/targets"
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
		{"a refused cell among valid ones", []matrixCell{cell("none", "invalid"), cell("token", "refused"), cell("none", "valid")}, false, exitValid},
		{"a refused cell does not hide a failed fence", []matrixCell{cell("token", "refused"), cell("cas", "invalid")}, false, exitInvalid},
		{"every cell refused", []matrixCell{cell("token", "refused"), cell("token", "refused")}, false, exitBadArgs},
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
	o := addRunFlags(fs, matrixKnob)
	var tl listFlag
	fs.Var(&tl, "target", "")
	if err := fs.Parse([]string{"--target", "etcd", "--target", "redis,redis-nopersist"}); err != nil {
		t.Fatal(err)
	}
	if want := (listFlag{"etcd", "redis", "redis-nopersist"}); tl.String() != want.String() {
		t.Errorf("repeated list flag: %v, want %v", tl, want)
	}
	// A fault that cannot apply to a target skips that target's cells of
	// its --nemesis, and says why: halves of one Redis server.
	cells, skippedFaults, err := matrixCells(o, axes([]string{"etcd", "redis"}, []string{"lock-store"}, []string{"none", "token"},
		[]string{"pause-holder", "kill:leader,partition:halves"}), 7, 2, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*2*2+2*2 {
		t.Fatalf("%d cells, want 12", len(cells))
	}
	if len(skippedFaults) != 1 || !strings.Contains(skippedFaults[0], "redis, resource lock-store, nemesis kill:leader,partition:halves: --nemesis partition:halves: cannot apply to this run: a partition between servers needs 2 servers; this redis run has 1") {
		t.Errorf("skipped %q, want the redis partition's cells", skippedFaults)
	}
	// A --nemesis that applies to no cell at all is a bad argument.
	if _, _, err := matrixCells(o, axes([]string{"etcd", "redis"}, []string{"lock-store"}, []string{"none"},
		[]string{"pause-holder", "partition:resource"}), 7, 1, false, io.Discard); !errors.Is(err, nemesis.ErrCannotApply) || !errors.Is(err, targets.ErrBadConfig) {
		t.Errorf("partition:resource on the lock-store only: %v, want a bad argument", err)
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
	for _, want := range []string{"etcd-pause-holder-none", "etcd-kill-leader-partition-halves-token", "redis-pause-holder-token"} {
		if !names[want] {
			t.Errorf("no run named %s in %v", want, names)
		}
	}
	// Each target gets its own profile: Consul's sessions last 10s at
	// least, with lock-delay 0, faults 2s apart and 45s runs; etcd's are
	// the general defaults.
	mixed, _, err := matrixCells(o, axes([]string{"etcd", "consul"}, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"}), 1, 1, false, io.Discard)
	if err != nil || len(mixed) != 2 || mixed[0].cfg.TTL != 2*time.Second || mixed[1].cfg.TTL != 10*time.Second {
		t.Errorf("etcd and consul with the default --ttl: %v", err)
	} else {
		e, c := mixed[0].cfg, mixed[1].cfg
		if e.TimeLimit != 30*time.Second || e.NemesisInterval != 3*time.Second || e.LockDelay != nil || e.ReadyTimeout != 30*time.Second {
			t.Errorf("etcd's profile: time limit %s, interval %s, lock-delay %v, ready %s", e.TimeLimit, e.NemesisInterval, e.LockDelay, e.ReadyTimeout)
		}
		if c.TimeLimit != 45*time.Second || c.NemesisInterval != 2*time.Second || c.LockDelay == nil || *c.LockDelay != 0 {
			t.Errorf("consul's profile: time limit %s, interval %s, lock-delay %v", c.TimeLimit, c.NemesisInterval, c.LockDelay)
		}
	}
	strict, _, _ := matrixCells(o, axes([]string{"etcd"}, []string{"lock-store"}, []string{"none"}, []string{"pause-holder"}), 1, 1, true, io.Discard)
	if len(strict) != 1 || !strict[0].MustBeValid {
		t.Errorf("--strict: %+v", strict)
	}
	// The resource axis: a fencing mode a resource lacks (the proxy's cas)
	// skips that cell and says why; the others run, each named by its
	// resource.
	rcells, skipped, err := matrixCells(o, axes([]string{"redis"}, []string{"postgres", "proxy", "postgres,proxy"}, []string{"none", "token", "cas"},
		[]string{"pause-holder"}), 1, 1, false, io.Discard)
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

// axes is a lock-append matrix's axes.
func axes(targets, resources, fencings, nemeses []string) matrixAxes {
	return matrixAxes{targets: targets, workloads: []string{"lock-append"}, resources: resources, fencings: fencings, nemeses: nemeses}
}

// A flag given overrides the profile's field; the others stay the
// profile's.
func TestProfileOverride(t *testing.T) {
	fs := newFlags("run", io.Discard)
	o := addRunFlags(fs, nil)
	if err := fs.Parse([]string{"--time-limit", "20s", "--lock-delay", "15s", "--ready-timeout", "5s"}); err != nil {
		t.Fatal(err)
	}
	consul, _ := lookupTarget("consul")
	cfg, err := o.config(consul, "lock-store", "none", "pause-holder", 1, "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TimeLimit != 20*time.Second || cfg.LockDelay == nil || *cfg.LockDelay != 15*time.Second || cfg.ReadyTimeout != 5*time.Second {
		t.Errorf("flags: time limit %s, lock-delay %v, ready %s", cfg.TimeLimit, cfg.LockDelay, cfg.ReadyTimeout)
	}
	if cfg.TTL != 10*time.Second || cfg.NemesisInterval != 2*time.Second {
		t.Errorf("profile: TTL %s, interval %s", cfg.TTL, cfg.NemesisInterval)
	}
	zk, _ := lookupTarget("zookeeper")
	fs = newFlags("run", io.Discard)
	o = addRunFlags(fs, matrixKnob)
	if cfg, err = o.config(zk, "lock-store", "none", "pause-holder", 1, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	if cfg.ReadyTimeout != 90*time.Second || cfg.TimeLimit != 30*time.Second || cfg.TTL != 2*time.Second {
		t.Errorf("zookeeper's profile: ready %s, time limit %s, TTL %s", cfg.ReadyTimeout, cfg.TimeLimit, cfg.TTL)
	}
}

// The register axis: each target's read modes take the fencing modes'
// place; a cell must be valid only in a mode the target promises
// linearizable; a target without registers, or a read mode it lacks, is
// skipped and said.
func TestMatrixRegisterCells(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o := addRunFlags(fs, matrixKnob)
	cells, skipped, err := matrixCells(o, matrixAxes{
		targets: []string{"etcd", "consul", "zookeeper", "redis"}, workloads: []string{"lock-append", "register"},
		resources: []string{"lock-store"}, fencings: []string{"none", "token"}, nemeses: []string{"partition:leader"},
	}, 1, 1, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, c := range cells {
		if c.Workload != "register" {
			continue
		}
		judged[c.Target+" "+c.ReadMode] = c.MustBeValid
		if c.cfg.Workload.Name() != "register" || c.cfg.ReadMode != c.ReadMode || c.Fencing != "none" {
			t.Errorf("cell %+v: config workload %s read mode %s", c, c.cfg.Workload.Name(), c.cfg.ReadMode)
		}
	}
	want := map[string]bool{
		"etcd linearizable": true, "etcd serializable": false,
		"consul default": false, "consul consistent": true, "consul stale": false,
		"zookeeper sync": false, "zookeeper local": false,
	}
	if len(judged) != len(want) {
		t.Errorf("register cells %v, want %v", judged, want)
	}
	for k, v := range want {
		if got, ok := judged[k]; !ok || got != v {
			t.Errorf("register cell %s: present %v, must be valid %v; want %v", k, ok, got, v)
		}
	}
	// One redis server cannot be partitioned: its lock-append cells are
	// skipped for the fault's precondition, its register cell for the
	// missing key-value store.
	if len(cells) != 3*2+len(want) {
		t.Errorf("%d cells, want %d", len(cells), 3*2+len(want))
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0], "cannot apply") || !strings.Contains(skipped[1], "redis register") || !strings.Contains(skipped[1], "no key-value store") {
		t.Errorf("skipped %q, want redis's lock-append cells (partition) and register cell", skipped)
	}
	// A chosen read mode: targets that lack it say so.
	cells, skipped, err = matrixCells(o, matrixAxes{
		targets: []string{"etcd", "consul"}, workloads: []string{"register"}, resources: []string{"lock-store"},
		readModes: []string{"stale"}, nemeses: []string{"partition:leader"},
	}, 1, 1, false, io.Discard)
	if err != nil || len(cells) != 1 || cells[0].Target != "consul" || cells[0].cfg.Name != "consul-register-partition-leader-stale" {
		t.Errorf("--read-mode stale: %v, %+v", err, cells)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "no read mode stale (it has linearizable, serializable)") {
		t.Errorf("skipped %q", skipped)
	}
	// The resource axis multiplies lock-append cells, not register cells,
	// which use the target's own store.
	cells, _, err = matrixCells(o, matrixAxes{
		targets: []string{"etcd"}, workloads: []string{"lock-append", "register"}, resources: []string{"lock-store", "proxy"},
		fencings: []string{"token"}, nemeses: []string{"pause-holder"},
	}, 1, 1, false, io.Discard)
	if err != nil || len(cells) != 2+2 {
		t.Errorf("two resources: %v, %d cells, want 2 lock-append and 2 register", err, len(cells))
	}
	// An audit log is lock-append's: register cells are skipped, said so.
	fs = newFlags("matrix", io.Discard)
	o = addRunFlags(fs, matrixKnob)
	if err := fs.Parse([]string{"--audit-log"}); err != nil {
		t.Fatal(err)
	}
	cells, skipped, err = matrixCells(o, matrixAxes{
		targets: []string{"etcd"}, workloads: []string{"lock-append", "register"}, resources: []string{"postgres"},
		fencings: []string{"token"}, nemeses: []string{"pause-holder"},
	}, 1, 1, false, io.Discard)
	if err != nil || len(cells) != 1 || len(skipped) != 1 || !strings.Contains(skipped[0], "--audit-log") {
		t.Errorf("--audit-log: %v, %d cells, skipped %q", err, len(cells), skipped)
	}
}

// The version axis: each version of a versioned target is a cell of its
// own, named and recorded by its version, running that version's image; a
// target with one version runs it once.
func TestMatrixVersionCells(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o := addRunFlags(fs, matrixKnob)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	ax := axes([]string{"etcd", "redis"}, []string{"lock-store"}, []string{"none", "token"}, []string{"pause-holder"})
	ax.versions = []string{"3.4.3", "debian"}
	cells, _, err := matrixCells(o, ax, 1, 1, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*2+2 {
		t.Fatalf("%d cells, want 6 (2 etcd versions and redis, 2 modes each)", len(cells))
	}
	images := map[string]string{}
	for _, c := range cells {
		images[c.cfg.Name] = c.cfg.Target.Image()
		if c.Target == "redis" && c.Version != "" {
			t.Errorf("redis cell with version %q", c.Version)
		}
	}
	for name, image := range map[string]string{"etcd-3.4.3-pause-holder-none": "etcd@3.4.3", "etcd-debian-pause-holder-token": "etcd@debian", "redis-pause-holder-none": "base"} {
		if images[name] != image {
			t.Errorf("cell %s: image %q, want %q (cells %v)", name, images[name], image, images)
		}
	}
	ax.versions = []string{"3.3.0"}
	if _, _, err := matrixCells(o, ax, 1, 1, false, io.Discard); !errors.Is(err, targets.ErrBadConfig) || !strings.Contains(err.Error(), "available: 3.6.16") {
		t.Errorf("unknown version: %v", err)
	}
	// A version applies to the targets that have it; the others skip it.
	mixed := axes([]string{"etcd", "consul"}, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"})
	mixed.versions = []string{"3.4.3", "1.13.9"}
	cells, skipped, err := matrixCells(o, mixed, 1, 1, false, io.Discard)
	if err != nil || len(cells) != 2 || cells[0].Version != "3.4.3" || cells[1].Version != "1.13.9" || cells[1].cfg.Target.Image() != "consul@1.13.9" {
		t.Fatalf("etcd and consul, versions 3.4.3 and 1.13.9: %+v, %v", cells, err)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[1], "consul --version 3.4.3: it has 1.14.11, 1.13.9") {
		t.Errorf("skipped %q", skipped)
	}
}

// Two --target specs that give cells the same name would make one cell of
// two targets across nights: refused.
func TestMatrixLabelCollision(t *testing.T) {
	o := addRunFlags(newFlags("matrix", io.Discard), matrixKnob)
	for _, ts := range [][]string{{"redis", "redis=redis-nopersist"}, {"a=etcd", "a=consul"}, {"etcd", "etcd"}} {
		_, _, err := matrixCells(o, axes(ts, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"}), 1, 1, false, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "both name cells") {
			t.Errorf("--target %v: %v, want a refusal", ts, err)
		}
	}
	if _, _, err := matrixCells(o, axes([]string{"redis", "old=redis-nopersist"}, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"}), 1, 1, false, io.Discard); err != nil {
		t.Errorf("distinct names: %v", err)
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
			var c matrixRun
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

// TestMatrixElectionCells: the workload axis takes election; each workload
// gets the fencing modes it takes (term is election's, token lock-append's)
// and the others are skipped with the reason; a target without an election
// recipe is skipped too.
func TestMatrixElectionCells(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o := addRunFlags(fs, matrixKnob)
	cells, skipped, err := matrixCells(o, matrixAxes{
		targets: []string{"etcd", "zookeeper", "redis"}, workloads: []string{"lock-append", "election"},
		resources: []string{"lock-store"}, fencings: []string{"none", "token", "term"}, nemeses: []string{"pause-holder"},
	}, 1, 1, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s %s %s %v %s", c.Target, c.WorkloadName(), c.Fencing, c.MustBeValid, c.cfg.Name))
		if c.cfg.Workload.Name() != c.WorkloadName() {
			t.Errorf("cell %s: config's workload %s", got[len(got)-1], c.cfg.Workload.Name())
		}
	}
	want := []string{
		"etcd lock-append none false etcd-pause-holder-none",
		"etcd lock-append token true etcd-pause-holder-token",
		"etcd election none false etcd-election-pause-holder-none",
		"etcd election term true etcd-election-pause-holder-term",
		"zookeeper lock-append none false zookeeper-pause-holder-none",
		"zookeeper lock-append token true zookeeper-pause-holder-token",
		"zookeeper election none false zookeeper-election-pause-holder-none",
		"zookeeper election term true zookeeper-election-pause-holder-term",
		"redis lock-append none false redis-pause-holder-none",
		"redis lock-append token true redis-pause-holder-token",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cells:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	all := strings.Join(skipped, "\n")
	for _, s := range []string{
		"lock-append cells, fencing term: the lock-append workload fences with none, token or cas",
		"election cells, fencing token: the election workload fences with none or term",
		"redis election: target redis has no leader-election recipe for the election workload",
	} {
		if !strings.Contains(all, s) {
			t.Errorf("skipped:\n%s\nwant a line with %q", all, s)
		}
	}
}

// TestMatrixFileRoundTrip: what matrix writes, merge and trends read back
// whole, through the one type; an election cell keeps its fencing in its
// key; a matrix.json of before the workload axis still reads.
func TestMatrixFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ok, s := 40, 10.0
	first := 1.5
	sum := matrixSummary{Started: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), Args: []string{"--workload", "lock-append,election"},
		Cells: []matrixCell{
			{Cell: 0, Target: "etcd", Resource: "lock-store", Nemesis: "pause-holder", Fencing: "token", Seed: 1, Verdict: "valid", MustBeValid: true,
				Acknowledged: 40, OpsOK: &ok, ClientS: &s, Run: "etcd-pause-holder-token/x"},
			{Cell: 1, Workload: "election", Label: "prod", Target: "zookeeper", Version: "3.9", Resource: "lock-store", Nemesis: "pause-holder",
				Fencing: "term", Seed: 1, Verdict: "invalid", MustBeValid: true, Acknowledged: 9, Lost: 1, FenceRejections: 2, FirstLostS: &first},
			{Cell: 2, Workload: "register", ReadMode: "linearizable", Target: "etcd", Resource: "lock-store", Nemesis: "kill", Fencing: "none",
				Seed: 1, Verdict: "valid", MustBeValid: true},
		},
		ExitCode: 1, TotalCells: 3}
	if err := writeMatrix(dir, sum); err != nil {
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
		if cellKey(c) != cellKey(back.Cells[i]) {
			t.Errorf("cell %d: %s read back as %s", i, cellKey(c), cellKey(back.Cells[i]))
		}
	}
	// Before the workload axis: no workload, no ops.
	old := `{"started":"2025-01-01T00:00:00Z","args":[],"strict":false,"cells":[{"cell":0,"target":"etcd","resource":"lock-store","nemesis":"pause-holder","fencing":"none","seed":3,"verdict":"invalid","must_be_valid":false,"acknowledged":10,"lost":2,"fence_rejections":0}],"exit_code":0,"total_cells":1}`
	if err := os.WriteFile(filepath.Join(dir, MatrixFile), []byte(old), 0o644); err != nil {
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
	cells := []matrixCell{
		{Target: "redis", Fencing: "token", Verdict: "refused", MustBeValid: true, Error: "worker w1: setup: bad configuration: the client program's leases carry no fencing token"},
		{Target: "redis", Fencing: "none", Verdict: "invalid"},
	}
	if err := writeMatrixJUnit(dir, cells); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, MatrixJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `failures="0" errors="0"`) || !strings.Contains(s, `<skipped type="refused" message="the cell&#39;s configuration cannot run: worker w1: setup: bad configuration: the client program&#39;s leases carry no fencing token">`) {
		t.Errorf("matrix-junit.xml:\n%s", s)
	}
}

// matrix.json records the command that made it, with --auth's value
// redacted (the matrix here is a shard with no cell: nothing starts).
func TestMatrixRecordsNoSecret(t *testing.T) {
	res := t.TempDir()
	const secret = "hunter2-matrix-secret"
	r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "matrix", "--endpoints", "10.0.0.1:2379", "--auth", "user:"+secret,
		"--fencing", "none,token", "--shard", "3/3", "--results", res, "--quiet")
	if r.code != exitValid {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(res, "matrix.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), "REDACTED") {
		t.Errorf("matrix.json: %s", b)
	}
}
