package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/spec"
)

// knobMatrix parses matrix's run flags and lists from args, and builds the
// cells of the lock-append matrix etcd x lock-store x fencings x
// pause-holder (the workloads given, lock-append when none).
func knobMatrix(t *testing.T, args []string, fencings []string, workloads ...string) []matrixRun {
	t.Helper()
	fs := newFlags("matrix", io.Discard)
	o, lists := addMatrixRunFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	ax := axes([]string{"etcd"}, []string{"lock-store"}, fencings, []string{"pause-holder"})
	if len(workloads) > 0 {
		ax.workloads = workloads
	}
	ax.knobs = knobAxes(lists)
	cells, _, err := matrixCells(o, ax, 1, 1, false, io.Discard)
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
		want := map[string]string{"ttl": c.cfg.TTL.String(), "concurrency": map[int]string{2: "2", 3: "3"}[c.cfg.Concurrency]}
		if len(c.Axes) != 2 || c.Axes["ttl"] != want["ttl"] || c.Axes["concurrency"] != want["concurrency"] ||
			(c.cfg.TTL != time.Second && c.cfg.TTL != 2*time.Second) {
			t.Errorf("cell %s: axes %v, TTL %s, concurrency %d", c.cfg.Name, c.Axes, c.cfg.TTL, c.cfg.Concurrency)
		}
		suffix := "-concurrency-" + c.Axes["concurrency"] + "-ttl-" + c.Axes["ttl"]
		if !strings.HasSuffix(c.cfg.Name, suffix) {
			t.Errorf("cell name %s, want it to end in %s", c.cfg.Name, suffix)
		}
		names[c.cfg.Name] = true
		ids[c.ID().String()] = true
	}
	if len(names) != len(cells) || len(ids) != len(cells) {
		t.Errorf("%d names, %d identities for %d cells: %v %v", len(names), len(ids), len(cells), names, ids)
	}
	if got := cells[0].cfg.Name; got != "etcd-pause-holder-none-concurrency-2-ttl-1s" {
		t.Errorf("first cell %s", got)
	}
	// The table, the JUnit names and --list show them.
	var b bytes.Buffer
	printMatrix(&b, records(cells), exitValid)
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
		if c.Axes != nil || c.cfg.TTL != 3*time.Second || !c.cfg.SideWriter || c.cfg.Name != plain[i].cfg.Name || c.ID() != plain[i].ID() {
			t.Errorf("cell %d: axes %v, TTL %s, side writer %v, name %s, id %s; want those of %s, %s", i, c.Axes, c.cfg.TTL, c.cfg.SideWriter, c.cfg.Name, c.ID(), plain[i].cfg.Name, plain[i].ID())
		}
	}
	if b, err := json.Marshal(records(one)); err != nil || strings.Contains(string(b), "axes") {
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
			if _, ok := c.Axes["locks"]; ok || c.cfg.SideWriter {
				t.Errorf("register cell %s: axes %v, side writer %v", c.cfg.Name, c.Axes, c.cfg.SideWriter)
			}
		} else if c.Axes["locks"] == "" || c.cfg.Locks != map[string]int{"1": 1, "2": 2}[c.Axes["locks"]] {
			t.Errorf("lock-append cell %s: axes %v, locks %d", c.cfg.Name, c.Axes, c.cfg.Locks)
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

// Merge keeps cells that differ only by an axis apart: each keeps its
// axes, and a shard whose cell has another TTL is of another matrix.
func TestMergeKeepsAxes(t *testing.T) {
	withTTL := func(i int, ttl string) matrixCell {
		c := cell(i, "token", "valid")
		c.Axes = map[string]string{"ttl": ttl}
		return c
	}
	a := writeShard(t, "1/2", 2, withTTL(0, "1s"))
	b := writeShard(t, "2/2", 2, withTTL(1, "2s"))
	m, err := mergeShards(t.TempDir(), []string{a, b}, io.Discard)
	if err != nil || len(m.Cells) != 2 || m.Cells[0].Axes["ttl"] != "1s" || m.Cells[1].Axes["ttl"] != "2s" || m.Cells[0].ID() == m.Cells[1].ID() {
		t.Fatalf("merged: %v, %+v", err, m.Cells)
	}
	other := writeShard(t, "1/2", 2, withTTL(0, "2s"))
	half := t.TempDir()
	if _, err := mergeShards(half, []string{a}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := mergeShards(t.TempDir(), []string{half, other}, io.Discard); err == nil || !strings.Contains(err.Error(), "not shards of one matrix") {
		t.Fatalf("cell 0 with TTL 1s and 2s: %v", err)
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
	ax.knobs = knobAxes(lists)
	var stderr bytes.Buffer
	cells, skipped, err := matrixCells(o, ax, 1, 1, false, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range cells {
		got[c.Target+" "+c.Axes["client-dir"]] = c.cfg.Name
		if (c.cfg.ClientProgram != nil) != (c.Axes["client-dir"] != "builtin") {
			t.Errorf("cell %s: client program %v", c.cfg.Name, c.cfg.ClientProgram)
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
