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

// layers are the module's folders, lowest layer first: a package's layer
// is the layer of the folder of the table that holds it (the package's own
// folder, or one above it), so a new package needs no edit here. A folder
// of the table never holds another (its subfolders share its layer), and
// "." is the root package alone. A package may import packages of its own
// layer and of lower ones, never of a higher one. docs/design.md
// ("Layers") says what each layer is for.
var layers = []layer{
	{"client programs and the test tools (import nothing of fencecheck)", []string{
		"examples", "scripts",
	}},
	{"foundation (vocabularies and mechanisms)", []string{
		"targets", "internal/base",
	}},
	{"verdicts and files (no container, no network)", []string{
		"internal/verdicts",
	}},
	{"report", []string{
		"internal/report",
	}},
	{"systems (lock services, resources, the servers they run, client programs, faults)", []string{
		"internal/systems",
	}},
	{"clients: workloads, their views, the worker and the tables", []string{
		"internal/clients",
	}},
	{"harness", []string{
		"internal/harness",
	}},
	{"campaigns (scripts, the matrix, sweeps, shrinking, the zoo, a command's runs) and the test kits, run on the harness", []string{
		"internal/campaigns", "internal/testkit",
	}},
	{"commands", []string{
		"internal/cli", "bench",
	}},
	{"public API", []string{
		".",
	}},
	{"programs and checks", []string{
		"cmd", "internal/layers",
	}},
}

// layer is a named set of folders.
type layer struct {
	name    string
	folders []string
}

// holds reports whether folder holds the package at path p (both relative
// to the module's root): "." holds the root package alone.
func holds(folder, p string) bool {
	if folder == "." {
		return p == "."
	}
	return p == folder || strings.HasPrefix(p, folder+"/")
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

// check returns what breaks the order table sets for pkgs: a folder in
// two layers or inside another folder of the table, a package in no
// folder of the table ("put it in a folder"), an import of a higher layer
// (naming both packages and their layers), and a folder that holds no
// package.
func check(pkgs []pkg, table []layer) []string {
	var problems []string
	type entry struct {
		folder string
		layer  int
	}
	var folders []entry
	for i, l := range table {
		for _, f := range l.folders {
			for _, e := range folders {
				switch {
				case e.folder == f:
					problems = append(problems, fmt.Sprintf("%s is in two layers: %q and %q", f, table[e.layer].name, l.name))
				case holds(e.folder, f) || holds(f, e.folder):
					problems = append(problems, fmt.Sprintf("%s and %s are both in the table, one inside the other: a folder's packages share its layer, so name the outer one only", e.folder, f))
				}
			}
			folders = append(folders, entry{f, i})
		}
	}
	layerOf := func(p string) (int, bool) {
		for _, e := range folders {
			if holds(e.folder, p) {
				return e.layer, true
			}
		}
		return 0, false
	}
	used := map[string]bool{}
	for _, p := range pkgs {
		me := rel(p.ImportPath)
		mine, ok := layerOf(me)
		if !ok {
			problems = append(problems, fmt.Sprintf("package %s is in no layer: put it in a folder of its layer, or add its top folder to a layer in internal/layers/layers_test.go (the lowest its imports allow) and to docs/design.md's Layers", me))
			continue
		}
		for _, e := range folders {
			if holds(e.folder, me) {
				used[e.folder] = true
			}
		}
		for _, imp := range p.Imports {
			it := rel(imp)
			if theirs, ok := layerOf(it); ok && it != "" && theirs > mine {
				problems = append(problems, fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s), a higher layer",
					me, mine+1, table[mine].name, it, theirs+1, table[theirs].name))
			}
		}
	}
	for _, e := range folders {
		if !used[e.folder] {
			problems = append(problems, fmt.Sprintf("the layers list %s, which holds no package go list finds: remove it from internal/layers/layers_test.go", e.folder))
		}
	}
	return problems
}

// No package of the module imports a package of a higher layer, every
// package is in a layer's folder, and every folder the table names holds a
// package.
func TestLayers(t *testing.T) {
	for _, p := range check(listModule(t), layers) {
		t.Error(p)
	}
}

// The check names what breaks the order: an upward import, a package in no
// layer, a folder in two, a folder inside another, and one that holds no
// package; and a package deep in a folder takes the folder's layer.
func TestCheckNamesEachProblem(t *testing.T) {
	table := []layer{{"low", []string{"internal/a", "internal/gone", "internal/c"}}, {"high", []string{"internal/b", "internal/a", "internal/c/d"}}}
	pkgs := []pkg{
		{ImportPath: module + "/internal/a", Imports: []string{"fmt", module + "/internal/b"}},
		{ImportPath: module + "/internal/b"},
		{ImportPath: module + "/internal/c/d"},
		{ImportPath: module + "/internal/new", Imports: []string{module + "/internal/b"}},
	}
	got := strings.Join(check(pkgs, table), "\n")
	for _, want := range []string{
		`internal/a is in two layers: "low" and "high"`,
		"internal/c and internal/c/d are both in the table, one inside the other",
		"package internal/new is in no layer: put it in a folder of its layer",
		"the layers list internal/gone, which holds no package go list finds",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	// With a only in the low layer, its import of b is upward; a package
	// deep in the high folder is in the high layer.
	table = []layer{{"low", []string{"internal/a"}}, {"high", []string{"internal/b"}}}
	pkgs = []pkg{
		{ImportPath: module + "/internal/a", Imports: []string{"fmt", module + "/internal/b/x/y"}},
		{ImportPath: module + "/internal/b"},
		{ImportPath: module + "/internal/b/x/y", Imports: []string{module + "/internal/a"}},
	}
	got = strings.Join(check(pkgs, table), "\n")
	if got != "internal/a (layer 1, low) imports internal/b/x/y (layer 2, high), a higher layer" {
		t.Errorf("problems: %q, want the upward import alone", got)
	}
	if got := check(pkgs[1:2], []layer{{"only", []string{"internal/b"}}}); len(got) != 0 {
		t.Errorf("a package importing nothing: %q", got)
	}
	// "." is the root package alone, not every package below it.
	if got := check([]pkg{{ImportPath: module + "/internal/z"}}, []layer{{"root", []string{"."}}}); !strings.Contains(strings.Join(got, "\n"), "package internal/z is in no layer") {
		t.Errorf(`"." holds more than the root package: %q`, got)
	}
}

// On the module's real imports, the table with internal/cli moved below
// internal/harness fails on cli's import of the harness: go list's imports
// reach the check.
func TestLayersSeeTheRealImports(t *testing.T) {
	moved := []layer{{"cli, moved down", []string{"internal/cli"}}}
	for _, l := range layers {
		var rest []string
		for _, f := range l.folders {
			if f != "internal/cli" {
				rest = append(rest, f)
			}
		}
		moved = append(moved, layer{l.name, rest})
	}
	got := strings.Join(check(listModule(t), moved), "\n")
	if !strings.Contains(got, "internal/cli (layer 1, cli, moved down) imports internal/harness (layer ") {
		t.Errorf("cli below the harness: problems lack its import of the harness:\n%s", got)
	}
}

// apart are folders of one layer whose packages must not import each
// other's: the first's may not import the second's.
var apart = [][2]string{
	{"internal/systems/lockservices", "internal/systems/resources"},
}

// checkApart returns a problem for each import from the first folder of a
// pair of apart into the second.
func checkApart(pkgs []pkg, pairs [][2]string) []string {
	var problems []string
	for _, p := range pkgs {
		me := rel(p.ImportPath)
		for _, pair := range pairs {
			if !holds(pair[0], me) {
				continue
			}
			for _, imp := range p.Imports {
				if it := rel(imp); it != "" && holds(pair[1], it) {
					problems = append(problems, fmt.Sprintf("%s imports %s: nothing under %s imports a package under %s (put what both need in a folder of their own, as internal/systems/servers/pgserver)", me, it, pair[0], pair[1]))
				}
			}
		}
	}
	return problems
}

// No target imports a resource package; and the check sees such an import.
func TestTargetsImportNoResource(t *testing.T) {
	for _, p := range checkApart(listModule(t), apart) {
		t.Error(p)
	}
	bad := []pkg{{ImportPath: module + "/internal/systems/lockservices/x", Imports: []string{module + "/internal/systems/resources/postgres", module + "/targets"}}}
	if got := checkApart(bad, apart); len(got) != 1 || !strings.Contains(got[0], "internal/systems/lockservices/x imports internal/systems/resources/postgres") {
		t.Errorf("a target importing a resource: %q", got)
	}
}

// sdkOwner is the one package that may import the Docker SDK: the
// container platform's implementation (internal/base/runtime's interfaces on
// the Docker Engine). Every other package reaches the platform through
// those interfaces.
const sdkOwner = "internal/base/platform/docker"

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
					problems = append(problems, fmt.Sprintf("%s imports %s%s: only %s talks to the Docker Engine; use internal/base/runtime's interfaces (or add what is missing to them and to %s)",
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
		{ImportPath: module + "/internal/d", Imports: []string{module + "/" + sdkOwner, module + "/internal/base/runtime"}},
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
