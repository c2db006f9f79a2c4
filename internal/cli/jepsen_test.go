package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/testkit/bound"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// check --jepsen-history on the Jepsen histories kept in the repository
// (testdata/jepsen at its root):
// the right verdict on each, each within 10 s. These run in process and
// need no Docker.

const (
	valid   = checkers.Valid
	invalid = checkers.Invalid
	unknown = checkers.Unknown
)

// etcdVerdicts is which of the jepsen-etcd histories are linearizable, as
// the test suite of Porcupine v1.3.1 states it (porcupine_test.go:
// TestEtcdJepsenNNN calls checkJepsen(t, NNN, true|false)): 23 are, 79 are
// not. Test 095 is not there ("etcd cluster failed to start up in test
// 95"): its log is empty, a history without a single operation, which shows
// nothing either way: unknown.
var etcdVerdicts = map[string]checkers.Validity{
	"etcd_000.log": invalid, "etcd_001.log": invalid, "etcd_002.log": valid, "etcd_003.log": invalid,
	"etcd_004.log": invalid, "etcd_005.log": valid, "etcd_006.log": invalid, "etcd_007.log": valid,
	"etcd_008.log": invalid, "etcd_009.log": invalid, "etcd_010.log": invalid, "etcd_011.log": invalid,
	"etcd_012.log": invalid, "etcd_013.log": invalid, "etcd_014.log": invalid, "etcd_015.log": invalid,
	"etcd_016.log": invalid, "etcd_017.log": invalid, "etcd_018.log": valid, "etcd_019.log": invalid,
	"etcd_020.log": invalid, "etcd_021.log": invalid, "etcd_022.log": invalid, "etcd_023.log": invalid,
	"etcd_024.log": invalid, "etcd_025.log": valid, "etcd_026.log": invalid, "etcd_027.log": invalid,
	"etcd_028.log": invalid, "etcd_029.log": invalid, "etcd_030.log": invalid, "etcd_031.log": valid,
	"etcd_032.log": invalid, "etcd_033.log": invalid, "etcd_034.log": invalid, "etcd_035.log": invalid,
	"etcd_036.log": invalid, "etcd_037.log": invalid, "etcd_038.log": valid, "etcd_039.log": invalid,
	"etcd_040.log": invalid, "etcd_041.log": invalid, "etcd_042.log": invalid, "etcd_043.log": invalid,
	"etcd_044.log": invalid, "etcd_045.log": valid, "etcd_046.log": invalid, "etcd_047.log": invalid,
	"etcd_048.log": valid, "etcd_049.log": valid, "etcd_050.log": invalid, "etcd_051.log": valid,
	"etcd_052.log": invalid, "etcd_053.log": valid, "etcd_054.log": invalid, "etcd_055.log": invalid,
	"etcd_056.log": valid, "etcd_057.log": invalid, "etcd_058.log": invalid, "etcd_059.log": invalid,
	"etcd_060.log": invalid, "etcd_061.log": invalid, "etcd_062.log": invalid, "etcd_063.log": invalid,
	"etcd_064.log": invalid, "etcd_065.log": invalid, "etcd_066.log": invalid, "etcd_067.log": valid,
	"etcd_068.log": invalid, "etcd_069.log": invalid, "etcd_070.log": invalid, "etcd_071.log": invalid,
	"etcd_072.log": invalid, "etcd_073.log": invalid, "etcd_074.log": invalid, "etcd_075.log": valid,
	"etcd_076.log": valid, "etcd_077.log": invalid, "etcd_078.log": invalid, "etcd_079.log": invalid,
	"etcd_080.log": valid, "etcd_081.log": invalid, "etcd_082.log": invalid, "etcd_083.log": invalid,
	"etcd_084.log": invalid, "etcd_085.log": invalid, "etcd_086.log": invalid, "etcd_087.log": valid,
	"etcd_088.log": invalid, "etcd_089.log": invalid, "etcd_090.log": invalid, "etcd_091.log": invalid,
	"etcd_092.log": valid, "etcd_093.log": invalid, "etcd_094.log": invalid, "etcd_095.log": unknown,
	"etcd_096.log": invalid, "etcd_097.log": invalid, "etcd_098.log": valid, "etcd_099.log": invalid,
	"etcd_100.log": valid, "etcd_101.log": valid, "etcd_102.log": valid,
}

// kvVerdicts: the file names say it.
var kvVerdicts = map[string]checkers.Validity{
	"c01-ok.txt": valid, "c01-bad.txt": invalid,
	"c10-ok.txt": valid, "c10-bad.txt": invalid,
	"c50-ok.txt": valid, "c50-bad.txt": invalid,
}

// jepsenTestdata returns the directory of the Jepsen histories.
func jepsenTestdata(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "jepsen")
	if _, err := os.Stat(filepath.Join(dir, "jepsen-etcd")); err != nil {
		t.Fatalf("the Jepsen histories are missing: %v", err)
	}
	return dir
}

// runInProcess runs the CLI in this process.
func runInProcess(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestJepsenHistories(t *testing.T) {
	dir := jepsenTestdata(t)
	// perFile bounds each check's CPU time (bound.SelfCPU: this test runs
	// alone, not in parallel), which a loaded machine does not stretch:
	// the slowest history takes about a second of it.
	const perFile = 10 * time.Second
	n := map[checkers.Validity]int{}
	for _, v := range etcdVerdicts {
		n[v]++
	}
	if len(etcdVerdicts) != 103 || n[valid] != 23 || n[invalid] != 79 || n[unknown] != 1 {
		t.Fatalf("the table has %d entries: %d valid, %d invalid, %d unknown", len(etcdVerdicts), n[valid], n[invalid], n[unknown])
	}
	var total, slowest time.Duration
	var slowestFile string
	for _, set := range []struct {
		sub, model string
		want       map[string]checkers.Validity
	}{
		{"jepsen-etcd", checkers.ModelCASRegister, etcdVerdicts},
		{"jepsen-kv", checkers.ModelKV, kvVerdicts},
	} {
		entries, err := os.ReadDir(filepath.Join(dir, set.sub))
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, e := range entries {
			files = append(files, e.Name())
		}
		var names []string
		for name := range set.want {
			names = append(names, name)
		}
		slices.Sort(names)
		if !slices.Equal(files, names) {
			t.Fatalf("%s holds %v, the table %v", set.sub, files, names)
		}
		for _, name := range names {
			path := filepath.Join(dir, set.sub, name)
			start := bound.SelfCPU()
			code, stdout, stderr := runInProcess("check", "--check-timeout", "60s", "--jepsen-history", path, "--model", set.model)
			took := bound.SelfCPU() - start
			total += took
			if took > slowest {
				slowest, slowestFile = took, name
			}
			want := set.want[name]
			if code != want.ExitCode() || !strings.HasPrefix(stdout, want.String()+"  "+path) {
				t.Errorf("%s: exit %d, want %d (%s)\n%s%s", name, code, want.ExitCode(), want, stdout, stderr)
			}
			if took > perFile {
				t.Errorf("%s: used %s of CPU time, want under %s", name, took, perFile)
			}
		}
	}
	t.Logf("109 histories in %s of CPU time, the slowest %s in %s", total.Round(time.Millisecond), slowestFile, slowest.Round(time.Millisecond))
}

func TestJepsenOutput(t *testing.T) {
	dir := jepsenTestdata(t)
	path := filepath.Join(dir, "jepsen-etcd", "etcd_002.log")
	code, stdout, _ := runInProcess("check", "--jepsen-history", path, "--model", "cas-register")
	want := "valid  " + path + " (jepsen cas-register history)\n" +
		"  linearizable     linearizable: 64 operations on 1 key (19 of them with an unknown outcome; 13 failed operations and reads with an unknown outcome left out)\n" +
		"  operations       77: 64 checked (19 of them info: maybe, at any time after their call), 13 left out (failed, or reads with an unknown outcome)\n" +
		"  keys             1, 1 checked to the end\n" +
		"  check time       "
	if code != exitValid || !strings.HasPrefix(stdout, want) {
		t.Errorf("exit %d, output\n%s\nwant it to start with\n%s", code, stdout, want)
	}
	code, stdout, _ = runInProcess("check", "--jepsen-history", filepath.Join(dir, "jepsen-etcd", "etcd_095.log"), "--model", "cas-register")
	if code != exitUnknown || !strings.Contains(stdout, "cannot tell: the history has no operations") {
		t.Errorf("etcd_095.log: exit %d\n%s", code, stdout)
	}
	// A kv history read as a register log has no operation: said so.
	code, stdout, _ = runInProcess("check", "--jepsen-history", filepath.Join(dir, "jepsen-kv", "c01-ok.txt"), "--model", "cas-register")
	if code != exitUnknown || !strings.Contains(stdout, "is it a cas-register history?") {
		t.Errorf("kv history as cas-register: exit %d\n%s", code, stdout)
	}
}

func TestJepsenVisualization(t *testing.T) {
	dir := jepsenTestdata(t)
	viz := filepath.Join(t.TempDir(), "viz.html")
	code, stdout, _ := runInProcess("check", "--viz", viz, "--jepsen-history", filepath.Join(dir, "jepsen-kv", "c10-bad.txt"), "--model", "kv")
	if code != exitInvalid || !strings.Contains(stdout, "  visualization    "+viz+"\n") {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	if fi, err := os.Stat(viz); err != nil || fi.Size() == 0 {
		t.Fatalf("visualization: %v", err)
	}
	os.Remove(viz)
	code, stdout, _ = runInProcess("check", "--viz", viz, "--jepsen-history", filepath.Join(dir, "jepsen-kv", "c10-ok.txt"), "--model", "kv")
	if _, err := os.Stat(viz); code != exitValid || err == nil || strings.Contains(stdout, "visualization") {
		t.Errorf("valid history: exit %d, visualization written (%v)\n%s", code, err == nil, stdout)
	}
	// The visualization is written beside its path, then renamed: nothing
	// else is left in the directory.
	if left, _ := os.ReadDir(filepath.Dir(viz)); len(left) != 0 {
		t.Errorf("left in the directory: %v", left)
	}
}

// Bad arguments and malformed input exit 254 at once (refusedEarly), naming
// the file and line. These run the real binary.
func TestJepsenBadInput(t *testing.T) {
	dir := jepsenTestdata(t)
	good := filepath.Join(dir, "jepsen-kv", "c01-ok.txt")
	tmp := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badLog := write("bad.log", "INFO  jepsen.core - starting\n"+
		"INFO  jepsen.util - 3\t:invoke\t:cas\t[3 0]\n"+
		"INFO  jepsen.util - 3\t:ok\t:cas\t[3 0\n")
	twice := write("twice.log", "INFO  jepsen.util - 3\t:invoke\t:read\tnil\n"+
		"INFO  jepsen.util - 3\t:invoke\t:read\tnil\n")
	badKV := write("bad.edn", `{:process 0, :type :invoke, :f :get, :key "1", :value nil}`+"\n"+
		`{:process 0, :type :ok, :f :get, :key "1", :value "x 0 y}`+"\n")
	noKey := write("nokey.edn", "\n\n"+`{:process 0, :type :invoke, :f :append, :value "x"}`+"\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"check", "--jepsen-history", good}, "needs --model (valid: cas-register, kv)"},
		{"unknown model", []string{"check", "--jepsen-history", good, "--model", "queue"}, `unknown model "queue" (valid: cas-register, kv)`},
		{"missing file", []string{"check", "--jepsen-history", filepath.Join(tmp, "none.log"), "--model", "kv"}, "no such file"},
		{"a directory", []string{"check", "--jepsen-history", tmp, "--model", "kv"}, "is a directory"},
		{"both", []string{"check", "--jepsen-history", good, "--model", "kv", tmp}, "RUN_DIR or --jepsen-history, not both"},
		{"neither", []string{"check", "--model", "kv"}, "--model, --viz and --force go with --jepsen-history"},
		{"negative timeout", []string{"check", "--check-timeout", "-1s", "--jepsen-history", good, "--model", "kv"}, "--check-timeout -1s"},
		{"malformed log line", []string{"check", "--jepsen-history", badLog, "--model", "cas-register"}, badLog + ":3: jepsen.util line: column 32: a vector is not closed"},
		{"two invocations", []string{"check", "--jepsen-history", twice, "--model", "cas-register"}, twice + ":2: process 3 invokes :read while its :read of line 1 is outstanding"},
		{"malformed map", []string{"check", "--jepsen-history", badKV, "--model", "kv"}, badKV + ":2: column "},
		{"map without key", []string{"check", "--jepsen-history", noKey, "--model", "kv"}, noKey + ":3: operation map without :key"},
		{"log as kv", []string{"check", "--jepsen-history", filepath.Join(dir, "jepsen-etcd", "etcd_000.log"), "--model", "kv"}, "etcd_000.log:1: want one operation map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			engine := newFakeEngine(t)
			r := runCLI(t, []string{engine.host}, c.args...)
			r.refusedEarly(t, engine, c.want)
		})
	}
}
