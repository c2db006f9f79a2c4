package cli

// Integration tests of user client programs (--client-dir, client-check):
// the examples in examples/clients against real servers, and programs that
// break the protocol (clientproto/testdata/clients), which must fail the
// check with the offending line, or be retired in a run without hanging it
// or losing its history.

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// makeTestClients are the example clients whose images make test builds
// (the Makefile's TEST_CLIENTS: one Python and one Go library, the
// user's-own-image example, redsync, which the matrix tests use, and
// rueidislock, whose held answers the belief tests ask); the
// other clients of the zoo run in make test-all.
var makeTestClients = []string{"redis-py", "go-etcd", "sh-redis", "go-redsync", "go-rueidislock"}

// inMakeTest reports whether dir is an example client make test builds, or
// no example at all (a broken client of clientproto's testdata).
func inMakeTest(dir string) bool {
	if filepath.Dir(dir) != filepath.Dir(example("x")) {
		return true
	}
	return slices.Contains(makeTestClients, filepath.Base(dir))
}

// example is the path of an example client directory.
func example(name string) string { return filepath.Join("..", "..", "examples", "clients", name) }

func brokenClient(name string) string {
	return filepath.Join("..", "systems", "clientproto", "testdata", "clients", name)
}

func TestClientCheck(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, tc := range []struct {
		name, dir string
		args      []string
		code      int
		want      []string // in stdout
	}{
		{"redis-py", example("redis-py"), nil, exitValid, []string{"ok   held", "ok   exclusion", "OK  redis-py"}},
		{"redis-py-token", example("redis-py"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "tokens true", "token 2", "OK  redis-py"}},
		{"go-etcd", example("go-etcd"), nil, exitValid, []string{"ok   held", "ok   handover", "OK  etcd concurrency.Mutex"}},
		// Curator's InterProcessMutex in Java, compiled by the manifest's
		// image_build step with Debian's OpenJDK: the czxid token grows.
		{"curator", example("curator"), nil, exitValid, []string{"ok   held", "ok   exclusion", "ok   handover", "tokens false", "OK  Curator InterProcessMutex (Java)"}},
		{"curator-token", example("curator"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "Curator 5.4.0 InterProcessMutex", "tokens true", "ok   handover", "OK  Curator"}},
		// The zoo (docs/zoo.md): each library as its documentation gives
		// it, with its token under --fencing token.
		{"kazoo-token", example("kazoo"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "kazoo 2.8.0 Lock", "tokens true", "ok   handover", "OK  kazoo Lock"}},
		{"python-etcd3-token", example("python-etcd3"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "python-etcd3 0.12.0 Lock", "tokens true", "ok   exclusion", "OK  python-etcd3 Lock"}},
		{"python-consul-token", example("python-consul"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "python-consul 0.7.1 session lock", "tokens true", "ok   handover", "OK  python-consul"}},
		{"node-redis-token", example("node-redis"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "node-redis 4.5.1 SET NX PX lock", "tokens true", "ok   handover", "OK  node-redis"}},
		{"ruby-redis-token", example("ruby-redis"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "redis-rb 4.8.0 SET NX PX lock", "tokens true", "ok   handover", "OK  redis-rb"}},
		{"php-redis-token", example("php-redis"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "phpredis 5.3.7 SET NX PX lock", "tokens true", "ok   handover", "OK  phpredis"}},
		{"go-consul-token", example("go-consul"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "consul api v1.", "tokens true", "ok   handover", "OK  consul api Lock"}},
		{"go-zookeeper-token", example("go-zookeeper"), []string{"--fencing", "token"}, exitValid, []string{"ok   held", "go-zookeeper v1.", "tokens true", "ok   handover", "OK  go-zookeeper Lock"}},
		{"go-redsync", example("go-redsync"), nil, exitValid, []string{"redsync v4.", "tokens false", "ok   held", "ok   handover", "OK  redsync Mutex"}},
		{"go-rueidislock", example("go-rueidislock"), nil, exitValid, []string{"rueidislock v1.0.80", "tokens false", "ok   held", "ok   exclusion", "ok   handover", "OK  rueidislock"}},
		// tooz's etcd3gw driver: no token, held is the lock's acquired.
		{"tooz-etcd3gw", example("tooz-etcd3gw"), nil, exitValid, []string{"tooz 3.1.0 etcd3gw 2.0.0 Lock", "tokens false", "ok   held", "ok   exclusion", "ok   handover", "OK  tooz etcd3gw Lock"}},
		// client-go's Coordinated Leader Election on kubernetes-cle: the
		// apiserver elects among LeaseCandidates; the program reaches it
		// with the credentials init carries.
		{"client-go-cle", example("client-go-cle"), nil, exitValid, []string{"client-go v0.37.2 leader election, Coordinated", "tokens false", "ok   held", "ok   exclusion", "ok   handover", "OK  client-go leader election, Coordinated"}},
		// A user's own image (here fencecheck's base image, which has sh,
		// sed, date and redis-cli): the worker binary is added to it.
		{"sh-redis-own-image", example("sh-redis"), []string{"--client-image", images.BaseRef()}, exitValid, []string{"ok   held", "ok   exclusion", "token 2", "OK  sh + redis-cli lock"}},
		{"garbage", brokenClient("garbage"), []string{"--target", "redis"}, exitInvalid, []string{"FAIL init", `offending line: "hello, I am not JSON"`}},
		{"silent", brokenClient("silent"), []string{"--target", "redis", "--timeout", "2s"}, exitInvalid, []string{"FAIL init", "timeout: no reply within 2s"}},
		{"exits", brokenClient("exits"), []string{"--target", "redis"}, exitInvalid, []string{"ok   init", "FAIL acquire", "exit status 3", "giving up on request 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !inMakeTest(tc.dir) {
				suite.All(t, "the image of "+filepath.Base(tc.dir))
			}
			t.Parallel()
			start := time.Now()
			r := runCLI(t, nil, append([]string{"client-check", "--client-dir", tc.dir}, tc.args...)...)
			t.Logf("exit %d in %s:\n%s", r.code, time.Since(start).Round(time.Second), r.stdout)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.code, lastLines(r.stderr, 10))
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q", w)
				}
			}
		})
	}
}

// A program whose grants carry no token (redsync has none) cannot run
// with --fencing token. Its client.json declares it ("tokens": false), so
// the run is refused at once, exit 254, with no run directory; a copy
// without the declaration is refused where the program says so, at the
// workers' setup, before any operation, with exit 254 and the reason
// (once a worker crashed on this path and the run exited 255 with
// "setup: EOF").
func TestClientWithoutTokensRefusesTokenFencing(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	t.Run("declared", func(t *testing.T) {
		t.Parallel()
		res := t.TempDir()
		r := runCLI(t, nil, "run", "--target", "redlock", "--client-dir", example("go-redsync"), "--fencing", "token", "--time-limit", "5s", "--results", res, "--quiet")
		if r.code != 254 || !strings.Contains(r.stderr, "carry no fencing token") || !strings.Contains(r.stderr, "redsync Mutex (Go)") {
			t.Fatalf("exit %d, want 254 naming the program and the missing token: %s", r.code, lastLines(r.stderr, 5))
		}
		if r.cpu > refuseCPU {
			t.Errorf("used %s of CPU time to refuse, want under %s", r.cpu, refuseCPU)
		}
		if ents, _ := os.ReadDir(res); len(ents) > 0 {
			t.Errorf("the refused run wrote %s", ents[0].Name())
		}
	})
	t.Run("said at init", func(t *testing.T) {
		t.Parallel()
		dir := exampleCopy(t, "go-redsync", func(m string) string {
			undeclared := strings.Replace(m, `,
  "tokens": false`, "", 1)
			if undeclared == m {
				t.Fatal(`go-redsync's client.json has no "tokens": false to take out`)
			}
			return undeclared
		})
		res := t.TempDir()
		r := runCLI(t, nil, "run", "--target", "redlock", "--client-dir", dir, "--fencing", "token", "--time-limit", "5s", "--results", res, "--quiet")
		t.Cleanup(func() { assertRunsGone(t, res) })
		if r.code != 254 || !strings.Contains(r.stderr, "carry no fencing token") {
			t.Fatalf("exit %d, want 254 naming the missing token: %s", r.code, lastLines(r.stderr, 5))
		}
	})
}

// exampleCopy is a copy of the Go example client program name, in a
// directory of its own, whose client.json is edit's of the example's; its
// build step builds the program where it is, a package of fencecheck's
// module, into the copy.
func exampleCopy(t *testing.T, name string, edit func(manifest string) string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(example(name))); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, "client.json")
	b, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs(example(name))
	if err != nil {
		t.Fatal(err)
	}
	built := strings.Replace(edit(string(b)), "go build -trimpath -o client .", "go build -C "+src+" -trimpath -o $PWD/client .", 1)
	if err := os.WriteFile(m, []byte(built), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// seededRun runs 30 s with seed 1 and a results directory, and returns the
// run's directory, its results and its exit code, which must be a verdict
// (0 or 1).
func seededRun(t *testing.T, args ...string) (string, resultsJSON, cliResult) {
	t.Helper()
	res := t.TempDir()
	args = append([]string{"run", "--time-limit", "30s", "--results", res, "--seed", "1", "--quiet"}, args...)
	r := runCLI(t, nil, args...)
	t.Cleanup(func() { assertRunsGone(t, res) })
	if r.code != exitValid && r.code != exitInvalid {
		t.Fatalf("exit %d: %s", r.code, lastLines(r.stderr, 20))
	}
	dir := filepath.Join(res, "latest")
	return dir, readResults(t, dir), r
}

// redis-py's Lock under pause-holder: unfenced it loses updates; with the
// example's token (INCR in the grant's script) the resource refuses the
// stale writes. etcd's Mutex through the protocol gives the built-in
// recipe's verdicts (TestLockAppendFencingModes: etcd loses updates
// unfenced and refuses them with token fencing); seeds 1-5 of both are
// compared by the bench (README).
func TestClientProgramRuns(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, tc := range []struct {
		name     string
		args     []string
		fenced   bool
		program  string // the client in test.json
		selfName string // its name for itself, client_name in test.json
	}{
		{"redis-py/none", []string{"--target", "redis", "--client-dir", example("redis-py"), "--fencing", "none"}, false, "redis-py", "redis-py 4.3.4 Lock"},
		{"redis-py/token", []string{"--target", "redis", "--client-dir", example("redis-py"), "--fencing", "token"}, true, "redis-py", "redis-py 4.3.4 Lock"},
		{"go-etcd/none", []string{"--target", "etcd", "--client-dir", example("go-etcd"), "--fencing", "none"}, false, "etcd concurrency.Mutex", "etcd concurrency.Mutex (Go)"},
		{"go-etcd/token", []string{"--target", "etcd", "--client-dir", example("go-etcd"), "--fencing", "token"}, true, "etcd concurrency.Mutex", "etcd concurrency.Mutex (Go)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, got, r := seededRun(t, append(tc.args, "--nemesis", "pause-holder")...)
			t.Logf("exit %d, lost %d of %d, fence rejections %d, %s", r.code, got.LostUpdates.Lost, got.LostUpdates.Acknowledged,
				got.FenceRejections, r.elapsed.Round(time.Second))
			if tc.fenced {
				wantFenced(t, r, got)
			} else {
				wantLost(t, r, got)
			}
			var ti struct {
				Client     string `json:"client"`
				ClientName string `json:"client_name"`
			}
			b, _ := os.ReadFile(filepath.Join(dir, "test.json"))
			json.Unmarshal(b, &ti)
			if !strings.HasPrefix(ti.Client, tc.program) || (tc.program == "") != (ti.Client == "") {
				t.Errorf("test.json client %q, want %q...", ti.Client, tc.program)
			}
			// The program's own name, with its library's version.
			if !strings.HasPrefix(ti.ClientName, tc.selfName) {
				t.Errorf("test.json client_name %q, want %q...", ti.ClientName, tc.selfName)
			}
		})
	}
}

// A client program killed every 8 s (coreutils' timeout around redis-py's
// example) is retired and restarted: the run goes on, every operation it
// began is completed in the history, and token fencing still holds.
func TestClientProgramCrashesMidRun(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	fencecheckBinary(t)
	dir, got, r := seededRun(t, "--target", "redis", "--client-dir", example("redis-py"), "--fencing", "token",
		"--client-cmd", "timeout -s KILL 8 python3 -u lock.py", "--nemesis", "none", "--concurrency", "3")
	if r.code != exitValid || got.Valid != true || got.LostUpdates.Acknowledged < 10 {
		t.Fatalf("exit %d, valid %v, %d acknowledged; want a valid run that got work done: %s", r.code, got.Valid, got.LostUpdates.Acknowledged, lastLines(r.stderr, 10))
	}
	open := map[float64]bool{}
	invokes := 0
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Process any    `json:"process"`
			Type    string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		p, ok := e.Process.(float64)
		if !ok {
			continue // the nemesis
		}
		if e.Type == "invoke" {
			invokes++
			open[p] = true
		} else {
			delete(open, p)
		}
	}
	if len(open) != 0 {
		t.Errorf("operations of processes %v were never completed", open)
	}
	restarts := 0
	for _, w := range []string{"w1", "w2", "w3"} {
		b, _ := os.ReadFile(filepath.Join(dir, "logs", w+".log"))
		restarts += strings.Count(string(b), "client program retired")
	}
	t.Logf("%d operations, %d acknowledged, %d retirements of the client program", invokes, got.LostUpdates.Acknowledged, restarts)
	if restarts < 3 {
		t.Errorf("%d retirements in 30 s of a program killed every 8 s, want >= 3", restarts)
	}
}

// One client program on each target its client.json names: go-redsync
// names redlock and redis ("targets"), and a matrix without --target runs
// it on both, a cell each, on real servers: Redlock over five masters and
// redsync's lock on one Redis server, each run recording the program.
func TestMatrixClientOnEachTarget(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	t.Cleanup(func() { assertRunsGone(t, res) })
	r := runCLI(t, nil, "matrix", "--client-dir", example("go-redsync"), "--fencing", "none", "--strict", "--nemesis", "pause-holder",
		"--time-limit", "10s", "--seed", "1", "--results", res, "--quiet")
	t.Logf("matrix: exit %d in %s\n%s", r.code, r.elapsed.Round(time.Second), r.stdout)
	if r.code != exitValid && r.code != exitInvalid {
		t.Fatalf("exit %d, want a verdict: %s", r.code, lastLines(r.stderr, 10))
	}
	sum := readMatrix(t, res)
	got := map[string]bool{}
	for _, c := range sum.Cells {
		got[c.Target] = true
		if c.Verdict != "valid" && c.Verdict != "invalid" || c.RunDir == "" {
			t.Errorf("cell %s: verdict %q, run %q; want a verdict of a run", c.Target, c.Verdict, c.RunDir)
			continue
		}
		var info store.TestInfo
		if b, err := os.ReadFile(filepath.Join(c.RunDir, store.TestFile)); err != nil || json.Unmarshal(b, &info) != nil {
			t.Errorf("cell %s: test.json: %v", c.Target, err)
		} else if info.Target != c.Target || !strings.HasPrefix(info.ClientName, "redsync v4.") || info.ClientPath != example("go-redsync") {
			t.Errorf("cell %s: test.json target %q, client %q (%s), want the cell's target and redsync from %s", c.Target, info.Target, info.ClientName, info.ClientPath, example("go-redsync"))
		}
	}
	if len(sum.Cells) != 2 || !got["redlock"] || !got["redis"] {
		t.Errorf("cells %+v, want one on redlock and one on redis", sum.Cells)
	}
}

// The Makefile's TEST_CLIENTS, the client images make test builds, are
// the clients whose tests make test runs, each an example directory.
func TestMakeTestClients(t *testing.T) {
	b, err := os.ReadFile(repoFile("Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TEST_CLIENTS := "); ok {
			dirs = strings.Split(v, ",")
		}
	}
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(d))
		if _, err := os.Stat(filepath.Join(repoFile(d), "client.json")); err != nil {
			t.Errorf("TEST_CLIENTS names %s: %v", d, err)
		}
	}
	if !slices.Equal(names, makeTestClients) {
		t.Errorf("the Makefile's TEST_CLIENTS are %q, makeTestClients %q", names, makeTestClients)
	}
}
