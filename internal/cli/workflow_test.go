package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The example nightly workflows (examples/ci) are valid YAML, and their
// fencecheck commands are the ones the tests run: each shard's matrix
// command parses and lists its cells (matrix --list), the shards together
// hold every cell of the unsharded matrix exactly once, and the merge
// command names the shards' results directories; the trends command's root
// of nights receives the merged results as a night.
func TestNightlyWorkflows(t *testing.T) {
	for _, tc := range []struct {
		file   string
		shards int
		// shardVars are the workflow's placeholders for I and N.
		index, total string
	}{
		{"github-nightly.yml", 4, "${{ matrix.shard }}", "4"},
		{"gitlab-nightly.yml", 4, "$CI_NODE_INDEX", "$CI_NODE_TOTAL"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatalf("not valid YAML: %v", err)
			}
			var matrixLine, trendsRoot, zooLine string
			var zooCmd []string
			var mergeCmd []string
			var lines []string
			walkStrings(doc, func(s string) {
				for _, line := range strings.Split(s, "\n") {
					lines = append(lines, strings.TrimSpace(line))
					if _, rest, ok := strings.Cut(line, "fencecheck trends "); ok {
						trendsRoot = strings.TrimSpace(rest)
					}
					if _, rest, ok := strings.Cut(line, "fencecheck matrix "); ok {
						if strings.Contains(rest, "--client-dir") {
							zooLine = strings.TrimSuffix(strings.TrimSpace(rest), "|| true")
						} else {
							matrixLine = strings.TrimSuffix(strings.TrimSpace(rest), "|| true")
						}
					}
					if _, rest, ok := strings.Cut(line, "fencecheck zoo "); ok {
						zooCmd = strings.Fields(rest)
					}
					if _, rest, ok := strings.Cut(line, "fencecheck merge "); ok {
						mergeCmd = strings.Fields(rest)
					}
				}
			})
			// Images come from the CI cache: loaded, built if missing,
			// saved, in that order, the same directory each time.
			var imageVerbs, imageDirs []string
			for _, l := range lines {
				if _, rest, ok := strings.Cut(l, "fencecheck images "); ok {
					f := strings.Fields(rest)
					imageVerbs = append(imageVerbs, f[0])
					if len(f) > 1 && (f[0] == "load" || f[0] == "save") {
						imageDirs = append(imageDirs, strings.TrimRight(f[1], ";"))
					}
				}
			}
			if i, j := slices.Index(imageVerbs, "load"), slices.Index(imageVerbs, "save"); i < 0 || j < i {
				t.Errorf("images commands %v: want images load, then images save", imageVerbs)
			}
			if len(imageDirs) < 2 || slices.Compact(slices.Clone(imageDirs))[0] != imageDirs[len(imageDirs)-1] || len(slices.Compact(slices.Clone(imageDirs))) != 1 {
				t.Errorf("images load and save use directories %v, want one", imageDirs)
			}
			if matrixLine == "" || mergeCmd == nil {
				t.Fatalf("no matrix or merge command found (matrix %q, merge %v)", matrixLine, mergeCmd)
			}
			list := func(args ...string) []string {
				t.Helper()
				var out, errb bytes.Buffer
				if code := run(append(append([]string{"matrix"}, args...), "--list"), &out, &errb); code != 0 {
					t.Fatalf("matrix %v --list: exit %d: %s", args, code, errb.String())
				}
				return strings.Split(strings.TrimSpace(out.String()), "\n")
			}
			subst := func(i int) (args []string, results string) {
				line := strings.ReplaceAll(strings.ReplaceAll(matrixLine, tc.index, fmt.Sprint(i)), tc.total, fmt.Sprint(tc.shards))
				cmd := strings.Fields(line)
				for j := 0; j < len(cmd); j++ {
					if cmd[j] == "--results" && j+1 < len(cmd) {
						j++
						results = cmd[j]
						continue
					}
					args = append(args, cmd[j])
				}
				return args, results
			}
			whole, _ := subst(1)
			i := slices.Index(whole, "--shard")
			all := list(slices.Delete(slices.Clone(whole), i, i+2)...)
			var got, dirs []string
			for s := 1; s <= tc.shards; s++ {
				args, results := subst(s)
				got = append(got, list(args...)...)
				dirs = append(dirs, results)
			}
			slices.Sort(got)
			slices.Sort(all)
			if !slices.Equal(got, all) {
				t.Errorf("the shards' cells (%d) are not the matrix's (%d), each once", len(got), len(all))
			}
			t.Logf("%d cells in %d shards; merge %v", len(all), tc.shards, mergeCmd)
			if mergeCmd[0] != "--results" || len(mergeCmd) != 2+tc.shards {
				t.Fatalf("merge %v: want --results OUT and the %d shard directories", mergeCmd, tc.shards)
			}
			for k, d := range dirs {
				if !strings.HasSuffix(mergeCmd[2+k], d) {
					t.Errorf("merge's directory %d is %s, the shard wrote %s", k+1, mergeCmd[2+k], d)
				}
			}
			// The zoo job: its matrix runs every client of examples/clients
			// (each on its own target), and zoo renders that matrix.
			if zooLine == "" || zooCmd == nil {
				t.Fatalf("no zoo matrix or zoo command (matrix %q, zoo %v)", zooLine, zooCmd)
			}
			var zooArgs []string
			zooResults := ""
			f := strings.Fields(strings.ReplaceAll(zooLine, "examples/clients/", filepath.Join("..", "..", "examples", "clients")+"/"))
			for j := 0; j < len(f); j++ {
				if f[j] == "--results" && j+1 < len(f) {
					j++
					zooResults = f[j]
					continue
				}
				zooArgs = append(zooArgs, f[j])
			}
			zooCells := list(zooArgs...)
			entries, _ := os.ReadDir(filepath.Join("..", "..", "examples", "clients"))
			for _, e := range entries {
				if e.Name() == "sh-redis" {
					continue // the example for --client-image, not a library
				}
				if !slices.ContainsFunc(zooCells, func(c string) bool { return strings.Contains(c, "examples/clients/"+e.Name()) }) {
					t.Errorf("the zoo matrix runs no cell of examples/clients/%s", e.Name())
				}
			}
			if zooCmd[len(zooCmd)-1] != zooResults {
				t.Errorf("zoo %v renders %s, not the zoo matrix's %s", zooCmd, zooCmd[len(zooCmd)-1], zooResults)
			}
			// The trends step keeps each night's merged results as a
			// directory of its root of nights.
			keep := "cp -r " + mergeCmd[1] + " " + trendsRoot + "/"
			if trendsRoot == "" || !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, keep) }) {
				t.Errorf("trends of %q: no step copies the merged results into it (%q)", trendsRoot, keep)
			}
		})
	}
}

// walkStrings calls f on every string in a decoded YAML document.
func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}
