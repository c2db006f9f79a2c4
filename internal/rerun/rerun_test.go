package rerun

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/store"
)

// Quoted words come back out of a real shell as they went in.
func TestQuote(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		bare bool
	}{
		{"results/etcd-lock-append-none/20261130T091832.192Z", true},
		{"postgres=token,proxy=none", true},
		{"", false},
		{"my results/run", false},
		{"it's", false},
		{"$(reboot)", false},
		{"a\nb", false},
		{"*", false},
	} {
		q := Quote(tc.in)
		if (q == tc.in) != tc.bare {
			t.Errorf("Quote(%q) = %s: bare %v, want %v", tc.in, q, q == tc.in, tc.bare)
		}
		out, err := exec.Command(sh, "-c", "printf %s "+q).Output()
		if err != nil || string(out) != tc.in {
			t.Errorf("sh read %s as %q (%v), want %q", q, out, err, tc.in)
		}
	}
}

// A test.json that does not say how to make the run again is refused, with
// the reason; one that does gives the run's flags, seed last.
func TestRunArgs(t *testing.T) {
	ok := store.TestInfo{Target: "etcd", Workload: "lock-append", Fencing: "none", Nemesis: "pause-holder", TimeLimit: "10s", TTL: "2s", Concurrency: 5, Nodes: 3, Seed: 11}
	for _, tc := range []struct {
		name string
		edit func(*store.TestInfo)
		want string // the command, or the error
	}{
		{"plain", func(*store.TestInfo) {}, "fencecheck run --target etcd --workload lock-append --fencing none --nemesis pause-holder --time-limit 10s --ttl 2s --concurrency 5 --nodes 3 --seed 11"},
		{"resources", func(ti *store.TestInfo) {
			ti.Resources = []store.ResourceInfo{{Name: "postgres"}, {Name: "proxy"}}
			ti.Fencing, ti.AuditLog, ti.SideWriter = "postgres=token,proxy=none", "postgres", true
		}, "--resource postgres,proxy --fencing postgres=token,proxy=none --audit-log --side-writer --nemesis"},
		{"no nemesis", func(ti *store.TestInfo) { ti.Nemesis = "" }, "--nemesis none"},
		{"register", func(ti *store.TestInfo) {
			ti.Workload, ti.Fencing, ti.Keys, ti.ReadMode = "register", "", 8, "serializable"
		}, "--keys 8 --read-mode serializable --seed 11"},
		{"a version and a recipe", func(ti *store.TestInfo) {
			ti.TargetVersion, ti.Version, ti.Recipe = "debian 3.4.23", "debian", "lock-rpc"
		}, "--nodes 3 --version debian --recipe lock-rpc --seed 11"},
		{"the user's image", func(ti *store.TestInfo) {
			ti.Images = map[string]string{"base": "fencecheck/base:1", store.ImageTarget: "registry.example/etcd:v3.6.16"}
		}, "--nodes 3 --image target=registry.example/etcd:v3.6.16 --seed 11"},
		{"the user's image, by its id", func(ti *store.TestInfo) {
			ti.Images = map[string]string{store.ImageTarget: "registry.example/etcd:v3.6.16"}
			ti.ImageIDs = map[string]string{store.ImageTarget: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
		}, "--image target=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef --seed 11"},
		{"no seed", func(ti *store.TestInfo) { ti.Seed = 0 }, "records no seed"},
		{"no target", func(ti *store.TestInfo) { ti.Target = "" }, "names no target"},
		{"bad duration", func(ti *store.TestInfo) { ti.Work = "1 fortnight" }, `work "1 fortnight" is not a duration`},
		{"demo", func(ti *store.TestInfo) { ti.Scripted = "seed story" }, "run fencecheck demo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ti := ok
			tc.edit(&ti)
			args, err := RunArgs(ti)
			got := RunCommand(ti)
			if err != nil {
				if !errors.Is(err, ErrCannot) || !strings.Contains(err.Error(), tc.want) || got != "" {
					t.Errorf("error %v, command %q; want ErrCannot with %q", err, got, tc.want)
				}
				return
			}
			if !strings.Contains(got, tc.want) || got != "fencecheck run "+Join(args) {
				t.Errorf("command %q, want it to hold %q", got, tc.want)
			}
		})
	}
	if c := Command("/tmp/my results/etcd/1"); c != "fencecheck rerun '/tmp/my results/etcd/1' --runs 5" {
		t.Errorf("Command = %s", c)
	}
}
