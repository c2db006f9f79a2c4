package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/experiment"
)

// writeFile writes content to a file of its own and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const examples = "../../examples/experiments"

// matrix -f: the file's lists are the matrix's axes, and a flag given on
// the command line replaces the file's field.
func TestMatrixFileCells(t *testing.T) {
	nightly := filepath.Join(examples, "nightly.yaml")
	for _, c := range []struct {
		args  []string
		cells int
		want  []string
	}{
		// 2 targets, 2 fencing modes, 2 nemeses, 2 TTLs.
		{nil, 16, []string{"etcd\tlock-append\tlock-store\tkill:leader,partition:leader\ttoken\t1\tmust be valid\tttl=4s", "zookeeper\tlock-append\tlock-store\tpause-holder\tnone"}},
		{[]string{"--target", "etcd"}, 8, []string{"etcd\tlock-append\tlock-store\tpause-holder\tnone\t1\treported\tttl=2s"}},
		{[]string{"--ttl", "3s", "--seed", "9"}, 8, []string{"zookeeper\tlock-append\tlock-store\tpause-holder\ttoken\t9\tmust be valid\n"}},
	} {
		code, stdout, stderr := runInProcess(append([]string{"matrix", "-f", nightly, "--list"}, c.args...)...)
		if code != exitValid {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		if n := strings.Count(stdout, "\n"); n != c.cells {
			t.Errorf("%v: %d cells, want %d:\n%s", c.args, n, c.cells, stdout)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: no %q in\n%s", c.args, w, stdout)
			}
		}
	}
}

// run -f: the file's knobs make the run's configuration, and a flag given
// on the command line replaces the file's field.
func TestRunFileConfig(t *testing.T) {
	file := filepath.Join(examples, "etcd-pause-holder.yaml")
	cfg, _, _, err := runConfig([]string{"-f", file, "--seed", "9", "--ttl", "3s"}, os.Stderr, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Target.Name() != "etcd" || cfg.Fencing != "token" || cfg.Nemesis != "pause-holder" || cfg.TimeLimit != 30*time.Second || cfg.Seed != 9 || cfg.TTL != 3*time.Second {
		t.Errorf("target %s, fencing %s, nemesis %s, time limit %s, seed %d, ttl %s", cfg.Target.Name(), cfg.Fencing, cfg.Nemesis, cfg.TimeLimit, cfg.Seed, cfg.TTL)
	}
}

// run -f with a schedule replays it: the run's Replay holds the file's
// steps; without one, faults are drawn (no Replay).
func TestRunFileSchedule(t *testing.T) {
	file := writeFile(t, "x.yaml", "target: etcd\nnemesis: pause-holder,kill:leader\nschedule:\n  - {fault: kill:leader, after: 2s, hold: 1s, role: leader}\n  - {fault: pause-holder, after: 500ms, role: holder}\n")
	cfg, _, _, err := runConfig([]string{"-f", file}, os.Stderr, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Replay == nil || cfg.Replay.Of != file || len(cfg.Replay.Steps) != 2 || cfg.Replay.Steps[0].Fault != "kill:leader" || cfg.Replay.Steps[1].After != 500*time.Millisecond {
		t.Fatalf("replay %+v; want the file's two steps", cfg.Replay)
	}
	cfg, _, _, err = runConfig([]string{"-f", filepath.Join(examples, "etcd-pause-holder.yaml")}, os.Stderr, os.Stderr)
	if err != nil || cfg.Replay != nil {
		t.Errorf("a file without a schedule: replay %+v, %v; want none", cfg.Replay, err)
	}
}

// A bad file exits 254 at once, naming the file, the line and the field;
// an impossible combination of knobs names the lines of the fields.
func TestExperimentFileRefusals(t *testing.T) {
	for _, c := range []struct {
		name, cmd, file string
		args            []string
		want            string
	}{
		{"unknown field", "run", "target: etcd\nnemesis: pause-holder\nttll: 2s\n", nil, ":3: ttll: unknown field"},
		{"wrong type", "run", "target: etcd\nconcurrency: five\n", nil, `:2: concurrency: "five" is not a value of --concurrency: want a whole number`},
		{"a list in a run file", "run", "ttl: [2s, 3s]\n", nil, ":1: ttl: a list is a matrix's axis"},
		{"the secret", "run", "target: redis\nauth: :pw\n", nil, ":2: auth: a secret is never read from a file"},
		{"servers from a file", "run", "target: redis\nendpoints: redis://10.0.0.1:6379\n", nil, ":2: endpoints: the servers a run attaches to and the credentials it presents are never taken from a file"},
		{"an impossible combination", "run", "target: etcd\nworkload: register\nside_writer: true\n", nil, "line 3 (side_writer): bad configuration: --side-writer: the register workload has no side writer"},
		{"out of the target's bounds", "run", "target: zookeeper\nttl: 30s\n", nil, "line 2 (ttl): bad configuration: zookeeper session timeouts are between 2 and 20 ticks"},
		{"a flag's bad value over a good file", "run", "ttl: 2s\n", []string{"--ttl", "30s", "--target", "zookeeper"}, "between 2 and 20 ticks"},
		{"a step of no fault", "run", "target: etcd\nnemesis: pause-holder\nschedule:\n  - {fault: pause-everything, after: 1s}\n", nil, `:4: schedule: step 1: `},
		{"a step not of the nemesis", "run", "target: etcd\nnemesis: pause-holder\nschedule:\n  - {fault: pause-holder, after: 1s}\n  - {fault: kill, after: 1s}\n", nil, ":5: schedule: step 2: kill is not one of the run's nemesis (pause-holder)"},
		{"matrix: a schedule", "matrix", "target: [etcd]\nschedule: []\n", nil, ":2: schedule: a schedule replays one run's faults"},
		{"matrix: an axis list of a knob that is not an axis", "matrix", "target: [etcd]\nfencing: [token]\nrpc_timeout: [1s, 2s]\n", nil, ":3: rpc_timeout: not an axis"},
		{"matrix: the cells' name", "matrix", "name: nightly\n", nil, ":1: name: not a matrix's"},
		{"matrix: a stored run's record", "matrix", "run_id: abc\n", nil, ":1: run_id: what a stored run recorded"},
		{"matrix: a bad value in a list", "matrix", "fencing: [token]\nttl: [2s, 1h1m]\n", nil, `:2: ttl: "1h1m" is not a value of --ttl: --ttl 1h1m0s: at most 1h0m0s`},
		{"matrix: an impossible cell", "matrix", "target: [etcd, consul]\nfencing: [token]\nttl: 2s\n", nil, "line 3 (ttl): consul (nemesis pause-holder, fencing token): bad configuration: consul sessions have a TTL of at least 10s"},
		{"matrix: servers from a file", "matrix", "target: redis\ntls_ca: /etc/hostname\n", nil, ":2: tls_ca: the servers a run attaches to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, "x.yaml", c.file)
			res := t.TempDir()
			args := []string{c.cmd, "-f", p, "--results", res}
			if c.cmd == "matrix" {
				args = append(args, "--list")
			}
			code, stdout, stderr := runInProcess(append(args, c.args...)...)
			if code != exitBadArgs || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, p) {
				t.Errorf("exit %d, stderr %q; want 254 naming %s and %q\nstdout: %s", code, stderr, p, c.want, stdout)
			}
			noRunWritten(t, res)
		})
	}
}

// Every field of the matrix schema is a flag of matrix, and every field
// of the run schema a flag of run, or the schedule a run replays: the
// schemas name what the commands take.
func TestSchemasNameFlags(t *testing.T) {
	for kind, cmd := range map[experiment.Kind]string{experiment.Run: "run", experiment.Matrix: "matrix"} {
		var sch struct{ Properties map[string]any }
		if err := json.Unmarshal(experiment.Schema(kind), &sch); err != nil {
			t.Fatal(err)
		}
		_, _, help := runInProcess(cmd, "-h")
		recorded := map[string]bool{}
		for _, k := range experiment.RecordedKeys() {
			recorded[k] = true
		}
		n := 0
		for _, k := range spec.Knobs {
			if _, ok := sch.Properties[k.FileKey()]; !ok {
				continue
			}
			n++
			if !strings.Contains(help, "\n  -"+k.Flag+" ") && !strings.Contains(help, "\n  -"+k.Flag+"\n") {
				t.Errorf("%s's schema has %s, and %s has no -%s", cmd, k.FileKey(), cmd, k.Flag)
			}
		}
		for p := range sch.Properties {
			if _, knob := experiment.KnobOf(p); !knob && !recorded[p] && (p != experiment.ScheduleKey || cmd != "run") {
				t.Errorf("%s's schema has %s: no knob", cmd, p)
			}
		}
		if n < 30 {
			t.Errorf("%s's schema: %d knobs", cmd, n)
		}
	}
}
