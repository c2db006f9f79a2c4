package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

// knobMatrix parses matrix's run flags and lists from args, and builds the
// cells of the lock-append matrix etcd x lock-store x fencings x
// pause-holder (the workloads given, lock-append when none).
func knobMatrix(t *testing.T, args []string, fencings []string, workloads ...string) []matrix.Job {
	t.Helper()
	fs := newFlags("matrix", io.Discard)
	o, lists := addMatrixRunFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	ax := axes([]string{"etcd"}, []string{"lock-store"}, fencings, []string{"pause-holder"})
	if len(workloads) > 0 {
		ax.Workloads = workloads
	}
	ax.Knobs = knobAxes(lists)
	cells, _, err := matrixCells(o, ax, 1, 1, false, true, io.Discard)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return cells
}

// Lists of two knobs multiply the cells by their product: each cell's
// configuration has its values, records them, and has a name and an
// identity of its own.
func TestMatrixKnobAxes(t *testing.T) {
	cells := knobMatrix(t, []string{"--ttl", "1s,2000ms", "--concurrency", "2", "--concurrency", "3"}, []string{"none", "token"})
	if len(cells) != 2*2*2 {
		t.Fatalf("%d cells, want 8 (2 modes x 2 TTLs x 2 concurrencies)", len(cells))
	}
	names, ids := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		want := map[string]string{"ttl": c.Config.TTL.String(), "concurrency": map[int]string{2: "2", 3: "3"}[c.Config.Concurrency]}
		if len(c.Axes) != 2 || c.Axes["ttl"] != want["ttl"] || c.Axes["concurrency"] != want["concurrency"] ||
			(c.Config.TTL != time.Second && c.Config.TTL != 2*time.Second) {
			t.Errorf("cell %s: axes %v, TTL %s, concurrency %d", c.Config.Name, c.Axes, c.Config.TTL, c.Config.Concurrency)
		}
		suffix := "-concurrency-" + c.Axes["concurrency"] + "-ttl-" + c.Axes["ttl"]
		if !strings.HasSuffix(c.Config.Name, suffix) {
			t.Errorf("cell name %s, want it to end in %s", c.Config.Name, suffix)
		}
		names[c.Config.Name] = true
		ids[c.ID().String()] = true
	}
	if len(names) != len(cells) || len(ids) != len(cells) {
		t.Errorf("%d names, %d identities for %d cells: %v %v", len(names), len(ids), len(cells), names, ids)
	}
	if got := cells[0].Config.Name; got != "etcd-pause-holder-none-concurrency-2-ttl-1s" {
		t.Errorf("first cell %s", got)
	}
	// The table, the JUnit names and --list show them.
	var b bytes.Buffer
	matrix.Print(&b, matrix.Records(cells), exitValid)
	if !strings.Contains(b.String(), "etcd concurrency=3 ttl=2s") {
		t.Errorf("table lacks the axes:\n%s", b.String())
	}
	var out, errb bytes.Buffer
	if code := run([]string{"matrix", "--ttl", "1s,2s", "--fencing", "token", "--list"}, &out, &errb); code != exitValid ||
		!strings.Contains(out.String(), "\tmust be valid\tttl=1s\n") || !strings.Contains(out.String(), "\tmust be valid\tttl=2s\n") {
		t.Errorf("--list: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// One value is the flag of run: every cell has it, unrecorded, and the
// cells keep their names and identities (matrix.json of before axes).
func TestMatrixKnobOneValue(t *testing.T) {
	plain := knobMatrix(t, nil, []string{"none", "token"})
	one := knobMatrix(t, []string{"--ttl", "3s", "--side-writer"}, []string{"none", "token"})
	if len(one) != len(plain) {
		t.Fatalf("%d cells, want %d", len(one), len(plain))
	}
	for i, c := range one {
		if c.Axes != nil || c.Config.TTL != 3*time.Second || !c.Config.SideWriter || c.Config.Name != plain[i].Config.Name || c.ID() != plain[i].ID() {
			t.Errorf("cell %d: axes %v, TTL %s, side writer %v, name %s, id %s; want those of %s, %s", i, c.Axes, c.Config.TTL, c.Config.SideWriter, c.Config.Name, c.ID(), plain[i].Config.Name, plain[i].ID())
		}
	}
	if b, err := json.Marshal(matrix.Records(one)); err != nil || strings.Contains(string(b), "axes") {
		t.Errorf("matrix.json's cells %s, %v: want no axes", b, err)
	}
}

// A knob of one workload (--locks: lock-append's) varies that workload's
// cells only; the others run once.
func TestMatrixWorkloadKnobAxis(t *testing.T) {
	cells := knobMatrix(t, []string{"--locks", "1,2", "--side-writer=false,true"}, []string{"token"}, "lock-append", "register")
	count := map[string]int{}
	for _, c := range cells {
		count[c.WorkloadName()]++
		if c.WorkloadName() == "register" {
			if _, ok := c.Axes["locks"]; ok || c.Config.SideWriter {
				t.Errorf("register cell %s: axes %v, side writer %v", c.Config.Name, c.Axes, c.Config.SideWriter)
			}
		} else if c.Axes["locks"] == "" || c.Config.Locks != map[string]int{"1": 1, "2": 2}[c.Axes["locks"]] {
			t.Errorf("lock-append cell %s: axes %v, locks %d", c.Config.Name, c.Axes, c.Config.Locks)
		}
	}
	// etcd's register cells: two read modes, side-writer=true skipped.
	if count["lock-append"] != 2*2 || count["register"] != 2 {
		t.Errorf("cells by workload %v, want 4 lock-append and 2 register", count)
	}
}

// A bad value of a list is a bad argument, named with its flag.
func TestMatrixKnobBadValue(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ttl", "1s,x"}, `-ttl: "x": not a duration`},
		{[]string{"--ttl", "1s,2h"}, `"2h": --ttl 2h0m0s: at most 1h0m0s`},
		{[]string{"--concurrency", "2,100"}, `"100": --concurrency 100: at most 64`},
		{[]string{"--ttl", "1s,1000ms"}, "1s given twice"},
		{[]string{"--locks", ""}, "-locks: empty list"},
		{[]string{"--side-writer=true,maybe"}, `"maybe"`},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"matrix", "--list"}, c.args...), &out, &errb); code != exitBadArgs || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, want 254 naming %q: %s", c.args, code, c.want, errb.String())
		}
	}
}

// Every knob declared an axis can vary in a matrix: one of matrix's own
// axes, or a list flag of its own (the knob table is all it takes).
func TestMatrixTakesEveryAxis(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	addMatrixRunFlags(fs)
	for _, k := range spec.Knobs {
		if !k.Axis || matrixOwn(k) || k.Flag == "workload" || k.Flag == "read-mode" {
			continue
		}
		f := fs.Lookup(k.Flag)
		if f == nil {
			t.Errorf("--%s: no flag", k.Flag)
			continue
		}
		switch f.Value.(type) {
		case *knobList, boolKnobList:
		default:
			t.Errorf("--%s: a %T, not a list", k.Flag, f.Value)
		}
	}
}

// --client-dir is an axis: builtin (the target's own recipe) and client
// directories, each cell running one; a client written for another target
// is skipped on this one, and said so.
func TestMatrixClientAxis(t *testing.T) {
	fs := newFlags("matrix", io.Discard)
	o, lists := addMatrixRunFlags(fs)
	args := []string{"--client-dir", "builtin," + example("go-etcd") + "," + example("curator")}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	ax := axes([]string{"etcd", "zookeeper"}, []string{"lock-store"}, []string{"none"}, []string{"pause-holder"})
	ax.Knobs = knobAxes(lists)
	var stderr bytes.Buffer
	cells, skipped, err := matrixCells(o, ax, 1, 1, false, true, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range cells {
		got[c.Target+" "+c.Axes["client-dir"]] = c.Config.Name
		if (c.Config.ClientProgram != nil) != (c.Axes["client-dir"] != "builtin") {
			t.Errorf("cell %s: client program %v", c.Config.Name, c.Config.ClientProgram)
		}
	}
	for _, want := range []string{"etcd builtin", "etcd " + example("go-etcd"), "zookeeper builtin", "zookeeper " + example("curator")} {
		if got[want] == "" {
			t.Errorf("no cell %q among %v", want, got)
		}
	}
	if len(cells) != 4 || len(skipped) != 2 {
		t.Errorf("%d cells, %d skipped (%v); want 4 and 2", len(cells), len(skipped), skipped)
	}
	for _, s := range skipped {
		if !strings.Contains(s, "is written for") {
			t.Errorf("skipped %q", s)
		}
	}
	if got["etcd builtin"] == got["etcd "+example("go-etcd")] {
		t.Errorf("the builtin and the client cells share the name %s", got["etcd builtin"])
	}
}

// A client program whose client.json names several targets runs on each:
// without --target, matrix's targets are those its client programs name
// (the old single "target" too), a cell per target and program, the
// built-in recipe on the same targets; the other targets are not run.
func TestMatrixClientTargets(t *testing.T) {
	write := func(manifest string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "client.json"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	two := write(`{"protocol": 1, "command": ["/bin/sh", "lock.sh"], "targets": ["redis", "zookeeper"]}`)
	one := write(`{"protocol": 1, "command": ["/bin/sh", "lock.sh"], "target": "etcd"}`)
	var out, errb bytes.Buffer
	if code := run([]string{"matrix", "--client-dir", "builtin," + two + "," + one, "--fencing", "none", "--strict", "--list"}, &out, &errb); code != exitValid {
		t.Fatalf("--list: exit %d\n%s", code, errb.String())
	}
	count := func(target, dir string) int {
		n := 0
		for _, l := range strings.Split(out.String(), "\n") {
			if f := strings.Split(l, "\t"); len(f) > 2 && f[1] == target && f[len(f)-1] == "client-dir="+dir {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		target, dir string
		want        int
	}{
		{"redis", two, 1}, {"zookeeper", two, 1}, {"etcd", two, 0},
		{"etcd", one, 1}, {"redis", one, 0}, {"zookeeper", one, 0},
		{"redis", "builtin", 1}, {"zookeeper", "builtin", 1}, {"etcd", "builtin", 1},
	} {
		if got := count(c.target, c.dir); got != c.want {
			t.Errorf("%s cells of %s: %d, want %d\n%s", c.target, c.dir, got, c.want, out.String())
		}
	}
}
