package experiment

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/rerun"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

func none(string) bool { return false }

// A run file's schedule reads into steps, each with its line; written back
// as JSON, it reads the same.
func TestSchedule(t *testing.T) {
	file := "target: etcd\nnemesis: pause-holder,kill\nschedule:\n  - fault: pause-holder\n    after: 3.2s\n    hold: 5.583s\n    role: holder\n    nodes: [w1]\n  - {fault: kill, after: 500ms, nodes: [n2]}\n"
	f, err := Parse([]byte(file), "x.yaml", Run)
	if err != nil {
		t.Fatal(err)
	}
	want := []history.FaultStep{
		{Fault: "pause-holder", After: 3200 * time.Millisecond, Hold: 5583 * time.Millisecond, Role: "holder", Nodes: []string{"w1"}},
		{Fault: "kill", After: 500 * time.Millisecond, Nodes: []string{"n2"}},
	}
	if !reflect.DeepEqual(f.Schedule, want) || !reflect.DeepEqual(f.StepLines, []int{4, 9}) {
		t.Fatalf("schedule %+v lines %v; want %+v lines [4 9]", f.Schedule, f.StepLines, want)
	}
	b, err := json.Marshal(map[string]any{"target": "etcd", ScheduleKey: want})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(b, "x.json", Run)
	if err != nil || !reflect.DeepEqual(g.Schedule, want) {
		t.Fatalf("%s read back as %+v, %v", b, g, err)
	}
	if f, err := Parse([]byte("target: etcd\nschedule: []\n"), "x.yaml", Run); err != nil || f.Schedule == nil || len(f.Schedule) != 0 {
		t.Errorf("an empty schedule: %+v, %v; want an empty, non-nil schedule (replay no fault)", f, err)
	}
	if f, err := Parse([]byte("target: etcd\n"), "x.yaml", Run); err != nil || f.Schedule != nil {
		t.Errorf("no schedule: %+v, %v; want nil (faults drawn)", f, err)
	}
}

// A bad file is refused naming the file, the line and the field, and the
// error is ErrFile (exit 254).
func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		kind Kind
		file string
		want string
	}{
		{"unknown field", Run, "target: etcd\nttl: 2s\ntl: 3\n", "x.yaml:3: tl: unknown field"},
		{"a flag's name", Run, "target: etcd\ntime-limit: 5s\n", `x.yaml:2: time-limit: unknown field (did you mean "time_limit"?)`},
		{"duration as a number", Run, "ttl: 2\n", "x.yaml:1: ttl: 2 is not a value of --ttl: want a duration"},
		{"count as a string", Run, "target: etcd\nconcurrency: \"5\"\n", `x.yaml:2: concurrency: "5" is not a value of --concurrency: want a whole number`},
		{"boolean as a word", Run, "side_writer: yes\n", `x.yaml:1: side_writer: "yes" is not a value of --side-writer: want true or false`},
		{"not a duration", Run, "work: soon\n", `x.yaml:1: work: "soon" is not a value of --work: not a duration`},
		{"out of bounds", Run, "concurrency: 65\n", "x.yaml:1: concurrency: 65 is not a value of --concurrency: --concurrency 65: at most 64"},
		{"a list in a run file", Run, "target: etcd\nttl: [1s, 2s]\n", "x.yaml:2: ttl: a list is a matrix's axis (matrix -f); a run takes one value"},
		{"a list of a knob that is not an axis", Matrix, "target: [etcd, consul]\nacquire_timeout:\n  - 1s\n  - 2s\n", "x.yaml:2: acquire_timeout: not an axis"},
		{"a bad value in a list", Matrix, "ttl:\n  - 1s\n  - 0s5\n", `x.yaml:3: ttl: "0s5" is not a value of --ttl`},
		{"an empty list", Matrix, "ttl: []\n", "x.yaml:1: ttl: an empty list"},
		{"the secret", Run, "target: redis\nendpoints: redis://h:6379\nauth: user:pw\n", "x.yaml:3: auth: a secret is never read from a file"},
		{"the secret in a matrix", Matrix, "auth: user:pw\n", "x.yaml:1: auth: a secret is never read from a file"},
		{"twice", Run, "ttl: 2s\nttl: 3s\n", "x.yaml:2: ttl: given twice (first on line 1)"},
		{"not a mapping", Run, "- ttl\n", "x.yaml:1: want a mapping of fields"},
		{"empty", Run, "", "x.yaml: empty"},
		{"a comment alone", Run, "# nothing\n", "x.yaml: empty"},
		{"an empty document", Run, "---\n", "x.yaml:2: want a mapping of fields (docs/experiments.md), not null"},
		{"two documents", Run, "ttl: 2s\n---\nttl: 3s\n", "x.yaml:2: a second document"},
		{"not YAML", Run, "ttl: [2s\n", "x.yaml: not YAML or JSON"},
		{"a record in a matrix file", Matrix, "target: etcd\nrun_id: abc\n", "x.yaml:2: run_id: what a stored run recorded, not a setting"},
		{"a version YAML reads as a number", Run, "version: 3.6\n", `x.yaml:1: version: 3.6 is not a value of --version: want a string: quote it ("3.6")`},
		{"an image as a string", Run, "image: foo\n", "x.yaml:1: image: \"foo\" is not a value of --image: want a mapping of KIND: IMAGE"},
		{"an image of an unknown kind", Run, "image:\n  worker: foo\n", "x.yaml:2: image: a mapping is not a value of --image: no image kind \"worker\""},
		{"JSON, wrong type", Run, "{\n  \"target\": \"etcd\",\n  \"ttl\": 2,\n  \"seed\": 1\n}\n", "x.yaml:3: ttl: 2 is not a value of --ttl"},
		{"a schedule in a matrix file", Matrix, "target: etcd\nschedule: []\n", "x.yaml:2: schedule: a schedule replays one run's faults"},
		{"a schedule not a list", Run, "schedule: pause-holder\n", "x.yaml:1: schedule: want a list of steps"},
		{"a step not a mapping", Run, "schedule:\n  - pause-holder\n", "x.yaml:2: schedule: step 1: want a mapping"},
		{"a step without its fault", Run, "schedule:\n  - {fault: kill, after: 1s}\n  - {after: 2s}\n", "x.yaml:3: schedule: step 2: a step names its fault"},
		{"a step without after", Run, "schedule:\n  - {fault: kill}\n", `x.yaml:2: schedule: step 1: step kill: "after"`},
		{"a step with a bad duration", Run, "schedule:\n  - {fault: kill, after: 1s, hold: soon}\n", `x.yaml:2: schedule: step 1: a step is {fault, after, hold, role, nodes}: history: "soon" is not a duration`},
		{"a step with a negative hold", Run, "schedule:\n  - {fault: kill, after: 1s, hold: -2s}\n", "x.yaml:2: schedule: step 1: step kill: a negative duration"},
		{"a step with an unknown role", Run, "schedule:\n  - {fault: kill, after: 1s, role: boss}\n", `step 1: step kill: role "boss"`},
		{"a step with an unknown field", Run, "schedule:\n  - {fault: kill, after: 1s, at: 3s}\n", `step 1: a step is {fault, after, hold, role, nodes}: json: unknown field "at"`},
		{"JSON, unknown key", Run, "{\n  \"target\": \"etcd\",\n\n  \"tll\": \"2s\"\n}\n", "x.yaml:4: tll: unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file), "x.yaml", c.kind)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrFile) {
				t.Errorf("error %v; want ErrFile with %q", err, c.want)
			}
		})
	}
}

// A run file sets the knobs it names over spec.Default, and the flags the
// command line gave override it.
func TestRunFile(t *testing.T) {
	f, err := Parse([]byte(`# an experiment
target: consul
ttl: 10s
lock_delay: 0s
concurrency: 3
side_writer: true
resource: lock-store,postgres
check_memory: 512MiB
seed: 7
image:
  target: myconsul:1
# client_dir is the command line's alone (spec.FileNever)
audit_log: true
version: null
`), "run.yaml", Run)
	if err != nil {
		t.Fatal(err)
	}
	given := spec.Default()
	given.TTL, given.Nodes, given.Results = 15*time.Second, 5, "/tmp/r" // --ttl 15s --nodes 5 --results /tmp/r
	set := map[string]bool{"ttl": true, "nodes": true, "results": true}
	sp, err := f.Spec(given, func(fl string) bool { return set[fl] })
	if err != nil {
		t.Fatal(err)
	}
	mem := uint64(512 << 20)
	zero := time.Duration(0)
	want := spec.Default()
	want.Target, want.TTL, want.LockDelay, want.Concurrency, want.SideWriter = "consul", 15*time.Second, &zero, 3, true
	want.Resource, want.CheckMemory, want.Seed, want.Nodes, want.Results = []string{"lock-store", "postgres"}, &mem, 7, 5, "/tmp/r"
	want.Image, want.AuditLog = map[string]string{"target": "myconsul:1"}, true
	if !reflect.DeepEqual(sp, want) {
		t.Errorf("spec\n%+v\nwant\n%+v", sp, want)
	}
	if given.Image != nil {
		t.Errorf("the file's image went into the command line's Spec: %v", given.Image)
	}
	lines := map[string]int{}
	for _, fd := range f.Fields {
		lines[fd.Knob.FileKey()] = fd.Line
	}
	if lines["target"] != 2 || lines["image"] != 10 || lines["audit_log"] != 13 {
		t.Errorf("lines %v", lines)
	}
}

// A matrix file's lists are its axes, each value as the flag takes it.
func TestMatrixFile(t *testing.T) {
	f, err := Parse([]byte("target: [etcd, redis]\nnemesis:\n  - pause-holder\n  - kill,partition\nttl: 2s\nside_writer: [false, true]\n"), "m.yaml", Matrix)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, fd := range f.Fields {
		got = append(got, fd.Knob.Flag+"="+strings.Join(fd.Values, "|"))
	}
	want := []string{"target=etcd|redis", "nemesis=pause-holder|kill,partition", "ttl=2s", "side-writer=false|true"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields %q, want %q", got, want)
	}
}

// Every stored run's test.json is a run file, read as a stored run: the
// Spec it gives is the one rerun repeats from store's decoder, with what
// test.json does not record (--results) from the command line.
func TestStoredRunsAreRunFiles(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "cli", "testdata", "runs", "*", store.TestFile))
	if len(dirs) < 5 {
		t.Fatalf("found %d stored runs", len(dirs))
	}
	for _, p := range dirs {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(b, p, Run)
			if err != nil {
				t.Fatal(err)
			}
			if !f.Stored {
				t.Error("not read as a stored run")
			}
			given := spec.Default()
			given.Results = "/r"
			got, err := f.Spec(given, none)
			if err != nil {
				t.Fatal(err)
			}
			var test store.TestInfo
			if err := json.Unmarshal(b, &test); err != nil {
				t.Fatal(err)
			}
			want, err := rerun.Spec(test)
			if err != nil {
				t.Fatal(err)
			}
			want.Results = "/r"
			if !reflect.DeepEqual(got, want) {
				t.Errorf("spec\n%+v\nrerun's\n%+v", got, want)
			}
			// A flag overrides it, and a stored run stays one read as such.
			given.TimeLimit = 5 * time.Second
			if got, _ := f.Spec(given, func(fl string) bool { return fl == "time-limit" }); got.TimeLimit != 5*time.Second || got.Seed != test.Seed {
				t.Errorf("with --time-limit 5s: time limit %s, seed %d", got.TimeLimit, got.Seed)
			}
			if g, err := Parse(b, p, Stored); err != nil || !g.Stored {
				t.Errorf("as Stored: %v", err)
			}
		})
	}
}

// A run's servers and credentials (spec.Knob.Attach) are the command
// line's, never a file's: a file that names them without --endpoints given
// is refused at the field's line, and with it the file's are not used.
func TestAttachOnlyFromTheCommandLine(t *testing.T) {
	file := "target: redis\nendpoints: redis://evil:6379\nauth_file: /home/me/.secret\n"
	f, err := Parse([]byte(file), "x.yaml", Run)
	if err != nil {
		t.Fatal(err) // auth_file may be given
	}
	_, err = f.Spec(spec.Default(), none)
	if err == nil || !strings.Contains(err.Error(), "x.yaml:2: endpoints: the servers a run attaches to and the credentials it presents are never taken from a file") {
		t.Errorf("without --endpoints: %v", err)
	}
	given := spec.Default()
	given.Endpoints = []string{"redis://mine:6379"}
	if _, err := f.Spec(given, func(fl string) bool { return fl == "endpoints" }); err == nil || !strings.Contains(err.Error(), "--auth-file") {
		t.Errorf("without the file's credential given again: %v", err)
	}
	given.AuthFile = "/mine"
	sp, err := f.Spec(given, func(fl string) bool { return fl == "endpoints" || fl == "auth-file" })
	if err != nil {
		t.Fatal(err)
	}
	if sp.Endpoints[0] != "redis://mine:6379" || sp.AuthFile != "/mine" {
		t.Errorf("endpoints %v, auth file %q: want the command line's", sp.Endpoints, sp.AuthFile)
	}
	// A file that names none: the command line attaches as it likes.
	g, _ := Parse([]byte("target: redis\n"), "y.yaml", Run)
	if sp, err := g.Spec(given, none); err != nil || sp.AuthFile != "/mine" {
		t.Errorf("a file without servers and --endpoints: %v, %+v", err, sp)
	}
	// A stored run's: rerun's rule (rerun.Attach), the same message.
	b, err := os.ReadFile(filepath.Join("..", "..", "cli", "testdata", "runs", "etcd-none-pause-holder", store.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"target": "etcd",`, `"target": "etcd", "endpoints": "https://evil:2379", "tls_ca": "/etc/ssl/private/key.pem",`, 1))
	h, err := Parse(b, "test.json", Run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Spec(spec.Default(), none); err == nil || !strings.Contains(err.Error(), "never from test.json") {
		t.Errorf("a stored attached run without --endpoints: %v", err)
	}
	given = spec.Default()
	given.Endpoints, given.TLSCA = []string{"https://mine:2379"}, "/mine.pem"
	sp, err = h.Spec(given, none)
	if err != nil || sp.Endpoints[0] != "https://mine:2379" || sp.TLSCA != "/mine.pem" {
		t.Errorf("a stored attached run with its flags given: %v, %v %q", err, sp.Endpoints, sp.TLSCA)
	}
}

// Locate points an error about the configuration at the fields it names.
func TestLocate(t *testing.T) {
	f, err := Parse([]byte("workload: register\nside_writer: true\nwork: 1s\nwork_cpu: true\n"), "x.yaml", Run)
	if err != nil {
		t.Fatal(err)
	}
	got := f.Locate(errors.New("--side-writer and --work-cpu: no")).Error()
	if want := "x.yaml: line 2 (side_writer), line 4 (work_cpu): --side-writer and --work-cpu: no"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	var nf *File
	if nf.Locate(nil) != nil || f.Locate(nil) != nil {
		t.Error("nil")
	}
}

// An alias is refused: it could make a cycle (servers: &a [*a]) or a value
// that grows exponentially as it is read.
func TestAliasRefused(t *testing.T) {
	for _, file := range []string{"run_id: x\nservers: &a [*a]\n", "ttl: &a 2s\nwork: *a\n"} {
		if _, err := Parse([]byte(file), "x.yaml", Run); err == nil || !strings.Contains(err.Error(), "an alias") {
			t.Errorf("%q: %v", file, err)
		}
	}
}

// A FIFO is refused, not waited on; a file over MaxSize is refused.
func TestReadRefusesFIFOAndLarge(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, Run); done <- err }()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read waited on a FIFO")
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("name: "+strings.Repeat("x", MaxSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(big, Run); err == nil || !strings.Contains(err.Error(), "an experiment file is at most") {
		t.Errorf("a large file: %v", err)
	}
}

// A stored run of the user's own server image is repeated on the image
// its test.json records by id (rerun.Spec), not by its tag.
func TestStoredRunImageByID(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "cli", "testdata", "runs", "etcd-none-pause-holder", store.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	const id = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	m["image"] = map[string]any{"target": "my/etcd:3.6"}
	m["images"].(map[string]any)["target"] = "my/etcd:3.6"
	m["image_ids"].(map[string]any)["target"] = id
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b, "test.json", Run)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := f.Spec(spec.Default(), none)
	if err != nil || sp.Image["target"] != id {
		t.Errorf("image %v (%v), want the recorded id %s", sp.Image, err, id)
	}
}
