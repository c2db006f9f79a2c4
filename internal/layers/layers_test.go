package layers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fencecheck/fencecheck"

// layers is every package of the module (by its path in the module, "."
// for the root), lowest layer first. A package may import packages of its
// own layer and of lower ones, never of a higher one. The order is the one
// the imports had when it was written down (docs/design.md, "Layers"); a
// new package goes into the lowest layer its imports allow, or into the
// layer whose peers it serves.
var layers = []layer{
	{"client programs (speak the client protocol, import nothing of fencecheck)", []string{
		"examples/clients/go-etcd", "examples/clients/go-consul", "examples/clients/go-zookeeper", "examples/clients/go-redsync",
	}},
	{"foundation (vocabularies and mechanisms)", []string{
		"targets", "internal/spec", "internal/images/kinds",
		"internal/history", "internal/history/lockappend", "internal/history/lockappend/histtest", "internal/history/register",
		"internal/images", "internal/runtime",
		"internal/harness/docker", "internal/harness/vdso", "internal/harness/netdelay", "internal/harness/lazydisk",
		"internal/trends",
	}},
	{"verdicts and files (no container, no network)", []string{
		"internal/checkers", "internal/history/jepsen",
		"internal/store", "internal/rerun", "internal/sweep",
	}},
	{"report", []string{
		"internal/report",
	}},
	{"systems (targets, resources, clients, faults)", []string{
		"internal/targets/etcd", "internal/targets/consul", "internal/targets/zookeeper", "internal/targets/kubernetes", "internal/targets/pgadvisory",
		"internal/targets/redis", "internal/targets/redis/redlock", "internal/targets/redis/sentinel",
		"internal/targets/targettest",
		"internal/resources", "internal/resources/lockstore", "internal/resources/postgres", "internal/resources/proxy",
		"internal/clientproto",
		"internal/nemesis",
	}},
	{"workloads, their views, the worker and the tables", []string{
		"internal/workloads", "internal/workloads/election", "internal/workloads/lockappend", "internal/workloads/register",
		"internal/workloads/election/view", "internal/workloads/lockappend/view", "internal/workloads/lockappend/lockappendtest", "internal/workloads/views",
		"internal/worker", "internal/tables",
	}},
	{"harness", []string{
		"internal/harness", "internal/harness/harnesstest",
	}},
	{"scripts and contract tests run on the harness", []string{
		"internal/scenarios",
		"internal/resources/resourcetest", "internal/targets/redis/internal/redistest",
	}},
	{"commands", []string{
		"internal/cli", "bench",
	}},
	{"public API", []string{
		".",
	}},
	{"programs and checks", []string{
		"cmd/fencecheck", "cmd/fencecheck-worker", "internal/layers",
	}},
}

// layer is a named set of packages.
type layer struct {
	name string
	pkgs []string
}

// pkg is what the test reads of `go list -json`.
type pkg struct {
	ImportPath string
	Imports    []string
	// TestImports and XTestImports are what the package's tests import
	// (in the package, and in package NAME_test).
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// rel is a package's path in the module, "." for the module's root, or ""
// for a package outside the module.
func rel(path string) string {
	switch {
	case path == module:
		return "."
	case strings.HasPrefix(path, module+"/"):
		return strings.TrimPrefix(path, module+"/")
	}
	return ""
}

// listModule lists every package of the module with its imports and its
// tests' (the layers check a package's own alone: a test may use a test kit
// of a higher layer), as the go command builds them.
func listModule(t *testing.T) []pkg {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(gomod)) == 0 {
		t.Fatalf("go env GOMOD: %q, %v (the test needs the go command on PATH, as go test sets it)", gomod, err)
	}
	cmd := exec.Command("go", "list", "-e", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	d := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := d.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package")
	}
	return pkgs
}

// check returns what breaks the order table sets for pkgs: a package in
// two layers, a package in none ("add it to a layer"), an import of a
// higher layer (naming both packages and their layers), and a package the
// table names that pkgs lack.
func check(pkgs []pkg, table []layer) []string {
	var problems []string
	of := map[string]int{}
	for i, l := range table {
		for _, p := range l.pkgs {
			if j, ok := of[p]; ok {
				problems = append(problems, fmt.Sprintf("%s is in two layers: %q and %q", p, table[j].name, l.name))
			}
			of[p] = i
		}
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		me := rel(p.ImportPath)
		seen[me] = true
		mine, ok := of[me]
		if !ok {
			problems = append(problems, fmt.Sprintf("package %s is in no layer: add it to a layer in internal/layers/layers_test.go (the lowest its imports allow) and to docs/design.md's Layers", me))
			continue
		}
		for _, imp := range p.Imports {
			it := rel(imp)
			if theirs, ok := of[it]; ok && it != "" && theirs > mine {
				problems = append(problems, fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s), a higher layer",
					me, mine+1, table[mine].name, it, theirs+1, table[theirs].name))
			}
		}
	}
	for _, l := range table {
		for _, p := range l.pkgs {
			if !seen[p] {
				problems = append(problems, fmt.Sprintf("the layers list %s, which go list does not find: remove it from internal/layers/layers_test.go", p))
			}
		}
	}
	return problems
}

// No package of the module imports a package of a higher layer, every
// package is in a layer, and every package the table names exists.
func TestLayers(t *testing.T) {
	for _, p := range check(listModule(t), layers) {
		t.Error(p)
	}
}

// The check names what breaks the order: an upward import, a package in no
// layer, one in two, and one that is gone.
func TestCheckNamesEachProblem(t *testing.T) {
	table := []layer{{"low", []string{"internal/a", "internal/gone"}}, {"high", []string{"internal/b", "internal/a"}}}
	pkgs := []pkg{
		{ImportPath: module + "/internal/a", Imports: []string{"fmt", module + "/internal/b"}},
		{ImportPath: module + "/internal/b"},
		{ImportPath: module + "/internal/new", Imports: []string{module + "/internal/b"}},
	}
	got := strings.Join(check(pkgs, table), "\n")
	for _, want := range []string{
		`internal/a is in two layers: "low" and "high"`,
		"package internal/new is in no layer: add it to a layer",
		"the layers list internal/gone, which go list does not find",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	// With a only in the low layer, its import of b is upward.
	table[1].pkgs = []string{"internal/b"}
	table[0].pkgs = []string{"internal/a"}
	got = strings.Join(check(pkgs[:2], table), "\n")
	if got != "internal/a (layer 1, low) imports internal/b (layer 2, high), a higher layer" {
		t.Errorf("problems: %q, want the upward import alone", got)
	}
	if got := check(pkgs[1:2], []layer{{"only", []string{"internal/b"}}}); len(got) != 0 {
		t.Errorf("a package importing nothing: %q", got)
	}
}

// On the module's real imports, the table with internal/cli moved below
// internal/harness fails on cli's import of the harness: go list's imports
// reach the check.
func TestLayersSeeTheRealImports(t *testing.T) {
	moved := []layer{{"cli, moved down", []string{"internal/cli"}}}
	for _, l := range layers {
		var rest []string
		for _, p := range l.pkgs {
			if p != "internal/cli" {
				rest = append(rest, p)
			}
		}
		moved = append(moved, layer{l.name, rest})
	}
	got := strings.Join(check(listModule(t), moved), "\n")
	if !strings.Contains(got, "internal/cli (layer 1, cli, moved down) imports internal/harness (layer ") {
		t.Errorf("cli below the harness: problems lack its import of the harness:\n%s", got)
	}
}

// sdkOwner is the one package that may import the Docker SDK: the
// container platform's implementation (internal/runtime's interfaces on
// the Docker Engine). Every other package reaches the platform through
// those interfaces.
const sdkOwner = "internal/harness/docker"

// sdkPrefix begins the import path of every package of the Docker SDK
// (github.com/docker/docker/client, .../api/types/container, ...) and of
// its companions (github.com/docker/go-connections, ...).
const sdkPrefix = "github.com/docker/"

// checkSDK returns a problem for each package but sdkOwner that imports a
// package under sdkPrefix, in its own files or in its tests', naming both.
func checkSDK(pkgs []pkg) []string {
	var problems []string
	for _, p := range pkgs {
		me := rel(p.ImportPath)
		if me == sdkOwner {
			continue
		}
		for _, files := range []struct {
			what    string
			imports []string
		}{{"", p.Imports}, {" (in its tests)", p.TestImports}, {" (in its package _test)", p.XTestImports}} {
			for _, imp := range files.imports {
				if strings.HasPrefix(imp, sdkPrefix) {
					problems = append(problems, fmt.Sprintf("%s imports %s%s: only %s talks to the Docker Engine; use internal/runtime's interfaces (or add what is missing to them and to %s)",
						me, imp, files.what, sdkOwner, sdkOwner))
				}
			}
		}
	}
	return problems
}

// No package but the container platform's implementation imports the
// Docker SDK, in its own files or in its tests'.
func TestOnlyTheRuntimeImportsTheSDK(t *testing.T) {
	pkgs := listModule(t)
	for _, p := range checkSDK(pkgs) {
		t.Error(p)
	}
	// The check reads what it means to: the implementation imports the SDK.
	for _, p := range pkgs {
		if rel(p.ImportPath) == sdkOwner && !slices.ContainsFunc(p.Imports, func(imp string) bool { return strings.HasPrefix(imp, sdkPrefix) }) {
			t.Errorf("%s imports no package under %s: go list's imports do not reach the check (%q)", sdkOwner, sdkPrefix, p.Imports)
		}
	}
}

// The check names each package that imports the SDK, whether in its own
// files, in its tests or in its package _test, and leaves the
// implementation alone.
func TestCheckSDKNamesEachImporter(t *testing.T) {
	sdk := "github.com/docker/docker/client"
	pkgs := []pkg{
		{ImportPath: module + "/" + sdkOwner, Imports: []string{sdk}, TestImports: []string{sdk}, XTestImports: []string{sdk}},
		{ImportPath: module + "/internal/a", Imports: []string{"fmt", sdk}},
		{ImportPath: module + "/internal/b", TestImports: []string{"github.com/docker/go-connections/nat"}},
		{ImportPath: module + "/internal/c", XTestImports: []string{sdk}},
		{ImportPath: module + "/internal/d", Imports: []string{module + "/" + sdkOwner, module + "/internal/runtime"}},
	}
	got := checkSDK(pkgs)
	want := []string{
		"internal/a imports github.com/docker/docker/client: ",
		"internal/b imports github.com/docker/go-connections/nat (in its tests): ",
		"internal/c imports github.com/docker/docker/client (in its package _test): ",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %q, want it to begin %q", i, got[i], want[i])
		}
	}
}
