package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/rerun"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// The schedules of runs recorded on real clusters, as rerun reads them: the
// faults in order, aimed at a role where they were (the holder, the
// leader), with their recorded holds, and quiet times that end where each
// fault began (a holder fault: where its holder reached its failpoint).
func TestRecordedSchedules(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		fault string
		role  string
		holds []string
	}{
		{"etcd-none-pause-holder", "pause-holder", nemesis.RoleHolder, []string{"5.583s", "4.75s", "4.707s", "5.145s"}},
		{"consul-none-pause-holder", "pause-holder", nemesis.RoleHolder, []string{"34.132s", "51.483s", "1m2.559s"}},
		{"consul-register-default-partition", "partition:leader", nemesis.RoleLeader, []string{"1m0.671s", "27.04s"}},
		{"redis-nopersist-token-kill", "kill:one", "", []string{"2.954s", "3.395s", "2.798s", "2.48s", "3.309s"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := copyRun(t, filepath.Join("testdata", "runs", tc.dir))
			events, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			steps, err := nemesis.Recorded(events)
			if err != nil {
				t.Fatal(err)
			}
			faults, _ := history.Faults(events)
			if len(steps) != len(tc.holds) || len(faults) != len(steps) {
				t.Fatalf("%d steps of %d faults, want %d: %v", len(steps), len(faults), len(tc.holds), steps)
			}
			prev := events[0].Time
			for i, s := range steps {
				if s.Fault != tc.fault || s.Role != tc.role || s.Hold.String() != tc.holds[i] {
					t.Errorf("step %d: %s, want %s on role %q held %s", i+1, s, tc.fault, tc.role, tc.holds[i])
				}
				if strings.Join(s.Nodes, ",") != strings.Join(faults[i].Nodes, ",") {
					t.Errorf("step %d: nodes %v, recorded %v", i+1, s.Nodes, faults[i].Nodes)
				}
				gap := time.Duration(faults[i].Start - prev)
				switch {
				case s.Role == nemesis.RoleHolder && (s.After > gap || s.After < gap-time.Second):
					t.Errorf("step %d: after %s; its holder reached its failpoint within a second before the fault began %s after the last stop", i+1, s.After, gap)
				case s.Role != nemesis.RoleHolder && s.After != max(0, gap-faults[i].Health.Before.D()):
					t.Errorf("step %d: after %s, want the recorded quiet time %s less its health check %s", i+1, s.After, gap, faults[i].Health.Before)
				}
				prev = faults[i].Stop
			}
		})
	}
}

// A recorded run's test.json, made into run flags and parsed by run, gives
// back the configuration it records, and the schedule to replay.
func TestRerunConfigFromTestJSON(t *testing.T) {
	for _, rr := range recordedRuns {
		t.Run(rr.dir, func(t *testing.T) {
			dir := copyRun(t, filepath.Join("testdata", "runs", rr.dir))
			var test store.TestInfo
			b, err := os.ReadFile(filepath.Join(dir, store.TestFile))
			if err != nil || json.Unmarshal(b, &test) != nil {
				t.Fatalf("test.json: %v", err)
			}
			cfg, err := parts.RerunConfig(t.Context(), dir, t.TempDir(), spec.Spec{}, runs.ClientOpts{}, os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ what, got, want string }{
				{"target", cfg.Target.Name(), test.Target},
				{"workload", cfg.Workload.Name(), test.Workload},
				{"name", cfg.Name, test.Name + "-rerun"},
			} {
				if c.got != c.want {
					t.Errorf("%s: %q, test.json says %q", c.what, c.got, c.want)
				}
			}
			// Every knob test.json records comes back as recorded.
			for _, k := range spec.Knobs {
				if k.Key == "" || k.Flag == "name" || k.IsZero(&test.Spec) {
					continue
				}
				if got, want := k.Value(&cfg.Spec).String(), k.Value(&test.Spec).String(); got != want {
					t.Errorf("--%s: %q, test.json says %q", k.Flag, got, want)
				}
			}
			if test.Workload == "register" {
				if cfg.Keys != test.Keys || cfg.ReadMode != test.ReadMode {
					t.Errorf("register: %d keys, %s reads; test.json: %d, %s", cfg.Keys, cfg.ReadMode, test.Keys, test.ReadMode)
				}
			} else if f := resources.DescribeFencings(cfg.Resources, cfg.Fencings); f != test.Fencing {
				t.Errorf("fencing %q, test.json says %q", f, test.Fencing)
			}
			events, _ := history.ReadFile(filepath.Join(dir, store.HistoryFile))
			faults, _ := history.Faults(events)
			if cfg.Replay == nil || len(cfg.Replay.Steps) != len(faults) || cfg.Replay.RunID != test.RunID {
				t.Fatalf("replay %+v, want the %d recorded faults of run %s", cfg.Replay, len(faults), test.RunID)
			}
		})
	}
}

// editRun is a copy of the recorded etcd-none-pause-holder run whose file
// has from replaced by to.
func editRun(t *testing.T, file string, from, to string) string {
	t.Helper()
	dir := copyRun(t, filepath.Join("testdata", "runs", "etcd-none-pause-holder"))
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), from) {
		t.Fatalf("%s has no %q", file, from)
	}
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), from, to)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A client program's run is repeated with the command and the image it
// ran with (test.json's client_cmd and client_image), the directory given
// again; the printed run command carries them, the directory a
// placeholder.
func TestRerunClientCommandAndImage(t *testing.T) {
	const cmd, image = "sh client.sh --verbose", "my/client:1"
	dir := editRun(t, store.TestFile, `"workload": "lock-append",`, `"workload": "lock-append", "client": "garbage (sh)", "client_program_dir": "/elsewhere/garbage", "client_cmd": "`+cmd+`", "client_image": "`+image+`",`)
	var stderr strings.Builder
	cfg, err := parts.RerunConfig(t.Context(), dir, t.TempDir(), spec.Spec{}, runs.ClientOpts{Dir: clientDirFixture}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.ClientProgram
	if p == nil || !p.Program.Shell || !slices.Equal(p.Program.Cmd, []string{cmd}) || p.Manifest.Image != image {
		t.Fatalf("client program %+v, want the recorded command %q in image %q", p, cmd, image)
	}
	if abs, _ := filepath.Abs(clientDirFixture); p.HostDir != abs {
		t.Errorf("client directory %s, want the one given again (%s), never test.json's", p.HostDir, abs)
	}
	if want := "--client-cmd 'sh client.sh --verbose' --client-image my/client:1"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say the program starts as recorded (%s): %s", want, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, store.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	var test store.TestInfo
	if err := json.Unmarshal(b, &test); err != nil {
		t.Fatal(err)
	}
	c := rerun.RunCommand(test)
	if !strings.Contains(c, "--client-cmd 'sh client.sh --verbose'") || !strings.Contains(c, "--client-image my/client:1") || !strings.HasSuffix(c, "--client-dir DIR") || strings.Contains(c, "elsewhere") {
		t.Errorf("run command %q: want the recorded command and image, --client-dir DIR and not test.json's directory", c)
	}
}

// rerun refuses, with the reason and exit 254 before anything starts, what
// it cannot repeat.
func TestRerunRefuses(t *testing.T) {
	edit := editRun
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		args []string
		want string
	}{
		{"not a run", func(t *testing.T) string { return t.TempDir() }, nil, "has no history.jsonl"},
		{"no runs", func(t *testing.T) string {
			return copyRun(t, filepath.Join("testdata", "runs", "etcd-none-pause-holder"))
		}, []string{"--runs", "0"}, "--runs must be at least 1"},
		{"unknown target", func(t *testing.T) string { return edit(t, store.TestFile, `"target": "etcd"`, `"target": "etcd9"`) }, nil, `unknown target "etcd9"`},
		{"unknown resource", func(t *testing.T) string {
			return edit(t, store.TestFile, `"fencing": "none",`, `"fencing": "none", "resources": [{"name": "mongo", "fencing": "none"}],`)
		}, nil, `unknown resource "mongo"`},
		{"unknown fault in test.json", func(t *testing.T) string {
			return edit(t, store.TestFile, `"nemesis": "pause-holder"`, `"nemesis": "meteor"`)
		}, nil, `unknown nemesis "meteor"`},
		{"unknown fault in the history", func(t *testing.T) string {
			return edit(t, store.HistoryFile, `"fault":"pause-holder","nodes":["w3"]`, `"fault":"meteor","nodes":["w3"]`)
		}, nil, `the recorded fault "meteor"`},
		{"bad duration", func(t *testing.T) string { return edit(t, store.TestFile, `"ttl": "2s"`, `"ttl": "two"`) }, nil, `ttl: "two" is not a value of --ttl`},
		{"scripted demo", func(t *testing.T) string {
			return edit(t, store.TestFile, `"workload": "lock-append",`, `"workload": "lock-append", "scripted": "seed story",`)
		}, nil, "run fencecheck demo"},
		{"client program", func(t *testing.T) string {
			return edit(t, store.TestFile, `"workload": "lock-append",`, `"workload": "lock-append", "client": "redis-py (python3 client.py)",`)
		}, nil, "does not record its --client-dir"},
		// A client program's run records its directory, but a rerun runs
		// only a directory given again (test.json may come from anyone,
		// and the program's build step runs on this machine), and only
		// with the files the run used.
		{"client program, its directory not given again", func(t *testing.T) string {
			return edit(t, store.TestFile, `"workload": "lock-append",`, `"workload": "lock-append", "client": "c (./c)", "client_program_dir": "`+clientDirFixture+`",`)
		}, nil, "give its directory again (--client-dir DIR)"},
		{"client program, a file changed", func(t *testing.T) string {
			return edit(t, store.TestFile, `"workload": "lock-append",`, `"workload": "lock-append", "client": "c (./c)", "client_program_dir": "`+clientDirFixture+`", "client_files": {"hash": "0", "files": {"client.json": "0"}},`)
		}, []string{"--client-dir", clientDirFixture}, "its files changed since the run (first: client.json)"},
		{"--client-dir for a run without one", func(t *testing.T) string {
			return copyRun(t, filepath.Join("testdata", "runs", "etcd-none-pause-holder"))
		}, []string{"--client-dir", clientDirFixture}, "ran no client program"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := t.TempDir()
			code, stdout, stderr := runInProcess(append([]string{"rerun", tc.dir(t), "--results", res}, tc.args...)...)
			if code != exitBadArgs || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 254 and %q\nstdout: %s", code, stderr, tc.want, stdout)
			}
			noRunWritten(t, res)
		})
	}
}

func TestRerunExit(t *testing.T) {
	for _, tc := range []struct {
		invalid, unknown, failed int
		interrupted              bool
		want                     int
	}{
		{0, 0, 0, false, exitValid},
		{1, 0, 0, false, exitInvalid},
		{1, 2, 1, true, exitInvalid}, // a reproduction stands
		{0, 1, 1, false, exitHarness},
		{0, 1, 0, false, exitUnknown},
		{0, 0, 0, true, exitUnknown}, // cut short: nothing proven
	} {
		if got := runs.RerunExit(tc.invalid, tc.unknown, tc.failed, tc.interrupted); got != tc.want {
			t.Errorf("runs.RerunExit(%d invalid, %d unknown, %d failed, interrupted %v) = %d, want %d",
				tc.invalid, tc.unknown, tc.failed, tc.interrupted, got, tc.want)
		}
	}
}

// clientDirFixture is a client directory for rerun's tests (it never runs).
const clientDirFixture = "../systems/clientproto/testdata/clients/garbage"
