package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// Every verb's -h and --help exit 0 and print its usage line (its
// positionals), its one-line description, its example and its flags; an
// unknown flag exits 254 naming it, after a positional too where the verb
// takes one (flags come before or after positionals alike). None of these
// starts a container: parsing fails or stops first.
func TestVerbsHelpAndFlags(t *testing.T) {
	// A positional each verb takes; "" for a verb that takes none.
	positional := map[string]string{
		"run": "", "demo": "", "matrix": "", "sweep": "", "version": "", "clean": "", "client-check": "",
		"merge": "shard-1", "trends": "nights", "check": "results/latest", "rerun": "results/latest", "shrink": "results/latest",
		"serve": "results", "zoo": "results", "images": "list",
		"proxy": "", // the worker's, parsed by package worker
	}
	var all []verb
	for _, v := range verbTable() {
		if !v.hidden() {
			all = append(all, v)
		}
	}
	if len(positional) != len(all) {
		t.Fatalf("the test knows %d verbs, there are %d", len(positional), len(all))
	}
	top := usage
	for _, v := range all {
		pos, ok := positional[v.name]
		if !ok {
			t.Errorf("%s: the test does not know it", v.name)
			continue
		}
		if v.desc == "" || strings.Contains(v.desc, "\n") || v.example == "" || !strings.HasPrefix(v.example, "fencecheck "+v.name) {
			t.Errorf("%s: want a one-line description and an example of it: %+v", v.name, v)
		}
		for _, l := range v.usageLines() {
			if !strings.Contains(top, "  "+l) {
				t.Errorf("the top-level usage lacks %q", l)
			}
		}
		for _, h := range []string{"-h", "--help"} {
			args := []string{v.name, h}
			if pos != "" {
				args = []string{v.name, pos, h} // after a positional too
			}
			code, stdout, stderr := runInProcess(args...)
			if code != 0 {
				t.Errorf("%v: exit %d, want 0: %s", args, code, stderr)
				continue
			}
			help := stdout + stderr
			for _, l := range v.usageLines() {
				if !strings.Contains(help, l+"\n") {
					t.Errorf("%v: no usage line %q:\n%s", args, l, help)
				}
			}
			desc := strings.ToUpper(v.desc[:1]) + v.desc[1:] + "."
			if !strings.Contains(help, desc) || !strings.Contains(help, "Example:\n  "+v.example+"\n") {
				t.Errorf("%v: lacks the description %q or the example %q:\n%s", args, desc, v.example, help)
			}
			if strings.Contains(help, "`") {
				t.Errorf("%v: a backquote (PrintDefaults takes `name` for the flag's placeholder):\n%s", args, help)
			}
			if v.name != "version" && !strings.Contains(help, "\nFlags:\n  -") {
				t.Errorf("%v: no flags:\n%s", args, help)
			}
		}
		args := []string{v.name, "--no-such-flag"}
		if pos != "" {
			args = []string{v.name, pos, "--no-such-flag"}
		}
		code, _, stderr := runInProcess(args...)
		if code != exitBadArgs || !strings.Contains(stderr, "flag provided but not defined: -no-such-flag") {
			t.Errorf("%v: exit %d, want 254 naming the flag: %s", args, code, stderr)
		}
	}
}

// The forms the issue found broken: check RUN --check-timeout D parses the
// flag (and then finds no run), zoo RESULTS --out F writes F.
func TestFlagsAfterPositionals(t *testing.T) {
	code, _, stderr := runInProcess("check", "/", "--check-timeout", "5s")
	if code != exitBadArgs || !strings.Contains(stderr, "not a run directory") {
		t.Errorf("check / --check-timeout 5s: exit %d: %s", code, stderr)
	}
	dir := zooResults(t, []trends.MatrixCell{{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none",
		Axes: map[string]string{"client-dir": "builtin"}, Verdict: "valid", Acknowledged: 9, Run: "zk/1"}}, nil)
	out := filepath.Join(t.TempDir(), "zoo.md")
	code, stdout, stderr := runInProcess("zoo", dir, "--out", out)
	if b, err := os.ReadFile(out); code != 0 || err != nil || !strings.Contains(string(b), "| built-in recipe (zookeeper) |") {
		t.Errorf("zoo RESULTS --out F: exit %d, %v: %s%s", code, err, stdout, stderr)
	}
	code, _, stderr = runInProcess("trends", t.TempDir(), "--nights", "0")
	if code != exitBadArgs || !strings.Contains(stderr, "--nights 0: between 1 and") {
		t.Errorf("trends ROOT --nights 0: exit %d: %s", code, stderr)
	}
}
