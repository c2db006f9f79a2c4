package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/targets"
)

func TestMatrixCells(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o := parts.AddFlags(fs, matrixKnob)
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
		[]string{"pause-holder", "kill:leader,partition:halves"}), 7, 2, false, true, io.Discard)
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
		[]string{"pause-holder", "partition:resource"}), 7, 1, false, true, io.Discard); !errors.Is(err, nemesis.ErrCannotApply) || !errors.Is(err, targets.ErrBadConfig) {
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
		names[c.Config.Name] = true
	}
	for _, want := range []string{"etcd-pause-holder-none", "etcd-kill-leader-partition-halves-token", "redis-pause-holder-token"} {
		if !names[want] {
			t.Errorf("no run named %s in %v", want, names)
		}
	}
	// Each target gets its own profile: Consul's sessions last 10s at
	// least, with lock-delay 0, faults 2s apart and 45s runs; etcd's are
	// the general defaults.
	mixed, _, err := matrixCells(o, axes([]string{"etcd", "consul"}, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"}), 1, 1, false, true, io.Discard)
	if err != nil || len(mixed) != 2 || mixed[0].Config.TTL != 2*time.Second || mixed[1].Config.TTL != 10*time.Second {
		t.Errorf("etcd and consul with the default --ttl: %v", err)
	} else {
		e, c := mixed[0].Config, mixed[1].Config
		if e.TimeLimit != 30*time.Second || e.NemesisInterval != 3*time.Second || e.LockDelay != nil || e.ReadyTimeout != 30*time.Second {
			t.Errorf("etcd's profile: time limit %s, interval %s, lock-delay %v, ready %s", e.TimeLimit, e.NemesisInterval, e.LockDelay, e.ReadyTimeout)
		}
		if c.TimeLimit != 45*time.Second || c.NemesisInterval != 2*time.Second || c.LockDelay == nil || *c.LockDelay != 0 {
			t.Errorf("consul's profile: time limit %s, interval %s, lock-delay %v", c.TimeLimit, c.NemesisInterval, c.LockDelay)
		}
	}
	strict, _, _ := matrixCells(o, axes([]string{"etcd"}, []string{"lock-store"}, []string{"none"}, []string{"pause-holder"}), 1, 1, true, true, io.Discard)
	if len(strict) != 1 || !strict[0].MustBeValid {
		t.Errorf("--strict: %+v", strict)
	}
	// The resource axis: a fencing mode a resource lacks (the proxy's cas)
	// skips that cell and says why; the others run, each named by its
	// resource.
	rcells, skipped, err := matrixCells(o, axes([]string{"redis"}, []string{"postgres", "proxy", "postgres,proxy"}, []string{"none", "token", "cas"},
		[]string{"pause-holder"}), 1, 1, false, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcells) != 3+2+2 || len(skipped) != 2 || !strings.Contains(skipped[0], "proxy has no cas fencing (it has none, token)") {
		t.Fatalf("%d cells, skipped %q; want 7 cells and 2 skipped", len(rcells), skipped)
	}
	got := map[string]bool{}
	for _, c := range rcells {
		got[c.Config.Name] = true
		if len(c.Config.Resources) == 0 || c.Resource == "" {
			t.Errorf("cell %s has no resource", c.Config.Name)
		}
	}
	for _, want := range []string{"redis-pause-holder-postgres-cas", "redis-pause-holder-proxy-token", "redis-pause-holder-postgres-proxy-none"} {
		if !got[want] {
			t.Errorf("no cell named %s in %v", want, got)
		}
	}
}

// axes is a lock-append matrix's axes.
func axes(targets, resources, fencings, nemeses []string) matrix.Axes {
	return matrix.Axes{Targets: targets, Workloads: []string{"lock-append"}, Resources: resources, Fencings: fencings, Nemeses: nemeses}
}

// A flag given overrides the profile's field; the others stay the
// profile's.
func TestProfileOverride(t *testing.T) {
	fs := newFlags("run", io.Discard)
	o := parts.AddFlags(fs, nil)
	if err := fs.Parse([]string{"--time-limit", "20s", "--lock-delay", "15s", "--ready-timeout", "5s"}); err != nil {
		t.Fatal(err)
	}
	consul, _ := lookupTarget("consul")
	cfg, err := o.Config(consul, "lock-store", "none", "pause-holder", 1, "", io.Discard)
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
	o = parts.AddFlags(fs, matrixKnob)
	if cfg, err = o.Config(zk, "lock-store", "none", "pause-holder", 1, "", io.Discard); err != nil {
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
	o := parts.AddFlags(fs, matrixKnob)
	cells, skipped, err := matrixCells(o, matrix.Axes{
		Targets: []string{"etcd", "consul", "zookeeper", "redis"}, Workloads: []string{"lock-append", "register"},
		Resources: []string{"lock-store"}, Fencings: []string{"none", "token"}, Nemeses: []string{"partition:leader"},
	}, 1, 1, false, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]bool{}
	for _, c := range cells {
		if c.Workload != "register" {
			continue
		}
		judged[c.Target+" "+c.ReadMode] = c.MustBeValid
		if c.Config.Workload.Name() != "register" || c.Config.ReadMode != c.ReadMode || c.Fencing != "none" {
			t.Errorf("cell %+v: config workload %s read mode %s", c, c.Config.Workload.Name(), c.Config.ReadMode)
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
	cells, skipped, err = matrixCells(o, matrix.Axes{
		Targets: []string{"etcd", "consul"}, Workloads: []string{"register"}, Resources: []string{"lock-store"},
		ReadModes: []string{"stale"}, Nemeses: []string{"partition:leader"},
	}, 1, 1, false, true, io.Discard)
	if err != nil || len(cells) != 1 || cells[0].Target != "consul" || cells[0].Config.Name != "consul-register-partition-leader-stale" {
		t.Errorf("--read-mode stale: %v, %+v", err, cells)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "no read mode stale (it has linearizable, serializable)") {
		t.Errorf("skipped %q", skipped)
	}
	// The resource axis multiplies lock-append cells, not register cells,
	// which use the target's own store.
	cells, _, err = matrixCells(o, matrix.Axes{
		Targets: []string{"etcd"}, Workloads: []string{"lock-append", "register"}, Resources: []string{"lock-store", "proxy"},
		Fencings: []string{"token"}, Nemeses: []string{"pause-holder"},
	}, 1, 1, false, true, io.Discard)
	if err != nil || len(cells) != 2+2 {
		t.Errorf("two Resources: %v, %d cells, want 2 lock-append and 2 register", err, len(cells))
	}
	// An audit log is lock-append's: register cells are skipped, said so.
	fs = newFlags("matrix", io.Discard)
	o = parts.AddFlags(fs, matrixKnob)
	if err := fs.Parse([]string{"--audit-log"}); err != nil {
		t.Fatal(err)
	}
	cells, skipped, err = matrixCells(o, matrix.Axes{
		Targets: []string{"etcd"}, Workloads: []string{"lock-append", "register"}, Resources: []string{"postgres"},
		Fencings: []string{"token"}, Nemeses: []string{"pause-holder"},
	}, 1, 1, false, true, io.Discard)
	if err != nil || len(cells) != 1 || len(skipped) != 1 || !strings.Contains(skipped[0], "--audit-log") {
		t.Errorf("--audit-log: %v, %d cells, skipped %q", err, len(cells), skipped)
	}
}

// The version axis: each version of a versioned target is a cell of its
// own, named and recorded by its version, running that version's image; a
// target with one version runs it once.
func TestMatrixVersionCells(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o := parts.AddFlags(fs, matrixKnob)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	ax := axes([]string{"etcd", "redis"}, []string{"lock-store"}, []string{"none", "token"}, []string{"pause-holder"})
	ax.Versions = []string{"3.4.3", "debian"}
	cells, _, err := matrixCells(o, ax, 1, 1, false, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*2+2 {
		t.Fatalf("%d cells, want 6 (2 etcd versions and redis, 2 modes each)", len(cells))
	}
	images := map[string]string{}
	for _, c := range cells {
		images[c.Config.Name] = c.Config.Target.Image()
		if c.Target == "redis" && c.Version != "" {
			t.Errorf("redis cell with version %q", c.Version)
		}
	}
	for name, image := range map[string]string{"etcd-3.4.3-pause-holder-none": "etcd@3.4.3", "etcd-debian-pause-holder-token": "etcd@debian", "redis-pause-holder-none": "base"} {
		if images[name] != image {
			t.Errorf("cell %s: image %q, want %q (cells %v)", name, images[name], image, images)
		}
	}
	ax.Versions = []string{"3.3.0"}
	if _, _, err := matrixCells(o, ax, 1, 1, false, true, io.Discard); !errors.Is(err, targets.ErrBadConfig) || !strings.Contains(err.Error(), "available: 3.6.16") {
		t.Errorf("unknown version: %v", err)
	}
	// A version applies to the targets that have it; the others skip it.
	mixed := axes([]string{"etcd", "consul"}, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"})
	mixed.Versions = []string{"3.4.3", "1.13.9"}
	cells, skipped, err := matrixCells(o, mixed, 1, 1, false, true, io.Discard)
	if err != nil || len(cells) != 2 || cells[0].Version != "3.4.3" || cells[1].Version != "1.13.9" || cells[1].Config.Target.Image() != "consul@1.13.9" {
		t.Fatalf("etcd and consul, versions 3.4.3 and 1.13.9: %+v, %v", cells, err)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[1], "consul --version 3.4.3: it has 1.14.11, 1.13.9") {
		t.Errorf("skipped %q", skipped)
	}
}

// Two --target specs that give cells the same name would make one cell of
// two targets across nights: refused.
func TestMatrixLabelCollision(t *testing.T) {
	o := parts.AddFlags(newFlags("matrix", io.Discard), matrixKnob)
	for _, ts := range [][]string{{"redis", "redis=redis-nopersist"}, {"a=etcd", "a=consul"}, {"etcd", "etcd"}} {
		_, _, err := matrixCells(o, axes(ts, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"}), 1, 1, false, true, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "both name cells") {
			t.Errorf("--target %v: %v, want a refusal", ts, err)
		}
	}
	if _, _, err := matrixCells(o, axes([]string{"redis", "old=redis-nopersist"}, []string{"lock-store"}, []string{"token"}, []string{"pause-holder"}), 1, 1, false, true, io.Discard); err != nil {
		t.Errorf("distinct names: %v", err)
	}
}

// TestMatrixElectionCells: the workload axis takes election; each workload
// gets the fencing modes it takes (term is election's, token lock-append's)
// and the others are skipped with the reason; a target without an election
// recipe is skipped too.
func TestMatrixElectionCells(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o := parts.AddFlags(fs, matrixKnob)
	cells, skipped, err := matrixCells(o, matrix.Axes{
		Targets: []string{"etcd", "zookeeper", "redis"}, Workloads: []string{"lock-append", "election"},
		Resources: []string{"lock-store"}, Fencings: []string{"none", "token", "term"}, Nemeses: []string{"pause-holder"},
	}, 1, 1, false, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s %s %s %v %s", c.Target, c.WorkloadName(), c.Fencing, c.MustBeValid, c.Config.Name))
		if c.Config.Workload.Name() != c.WorkloadName() {
			t.Errorf("cell %s: config's workload %s", got[len(got)-1], c.Config.Workload.Name())
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

// matrix.json and sweep.json record the command from the parsed flags:
// --auth's value is redacted whatever its form on the command line (=,
// one dash, repeated, or after a flag that took "--auth" as its value).
func TestRecordedArgsHoldNoSecret(t *testing.T) {
	const secret = "runner:SECRET-recorded-args"
	forms := map[string][]string{
		"after a flag that took --auth": {"--tls-server-name", "--auth", "--auth", secret},
		"=":                             {"--auth=" + secret},
		"one dash":                      {"-auth", secret},
		"one dash =":                    {"-auth=" + secret},
		"repeated":                      {"--auth", "u:first-" + secret, "--auth", secret},
	}
	for name, form := range forms {
		t.Run("matrix "+name, func(t *testing.T) {
			res := t.TempDir()
			args := append([]string{"matrix", "--endpoints", "10.0.0.1:2379"}, form...)
			r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, append(args,
				"--fencing", "none,token", "--shard", "3/3", "--results", res, "--quiet")...)
			if r.code != exitValid {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			assertNoSecretIn(t, filepath.Join(res, "matrix.json"), "SECRET-recorded-args")
		})
	}
	t.Run("sweep", func(t *testing.T) {
		res := t.TempDir()
		r := runCLI(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "sweep", "--endpoints", "10.0.0.1:2379",
			"--tls-server-name", "--auth", "--auth", secret, "--pause", "1", "--runs", "1", "--fencing", "none", "--results", res, "--quiet")
		if r.code != exitHarness {
			t.Fatalf("exit %d, want %d (no Docker Engine): %s", r.code, exitHarness, r.stderr)
		}
		assertNoSecretIn(t, filepath.Join(res, "sweep.json"), "SECRET-recorded-args")
	})
}

// assertNoSecretIn fails unless the file exists, records REDACTED, and
// holds no secret.
func assertNoSecretIn(t *testing.T, path, secret string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), "REDACTED") {
		t.Errorf("%s: %s", filepath.Base(path), b)
	}
}

// matrix --cell N runs (here: lists) only the cells --list numbered N, in
// the matrix's numbering; a cell the matrix lacks, --cell with --shard, and
// a list that is not numbers are refused before anything runs.
func TestMatrixCell(t *testing.T) {
	base := []string{"matrix", "--target", "etcd", "--fencing", "none,token", "--nemesis", "pause-holder", "--nemesis", "kill"}
	code, all, stderr := runInProcess(append(base, "--list")...)
	if code != exitValid {
		t.Fatalf("--list: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(all), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 cells, got:\n%s", all)
	}
	code, some, stderr := runInProcess(append(base, "--cell", "3", "--cell", "1", "--list")...)
	if code != exitValid || some != lines[1]+"\n"+lines[3]+"\n" {
		t.Fatalf("--cell 3 --cell 1 --list: exit %d\n%s\nwant cells 1 and 3 of\n%s%s", code, some, all, stderr)
	}
	for _, bad := range [][]string{{"--cell", "4"}, {"--cell", "1", "--shard", "2/2"}, {"--cell", "one"}, {"--cell", "-1"}} {
		if code, _, stderr := runInProcess(append(append(base, bad...), "--list")...); code != exitBadArgs || !strings.Contains(stderr, "--cell") {
			t.Errorf("%v: exit %d, want %d naming --cell: %s", bad, code, exitBadArgs, stderr)
		}
	}
}
