package rerun

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
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
	ok := store.TestInfo{Spec: spec.Spec{Target: "etcd", Workload: "lock-append", Fencing: "none", Nemesis: "pause-holder", TimeLimit: 10 * time.Second, TTL: 2 * time.Second, WorkerKnobs: spec.WorkerKnobs{Concurrency: 5}, Nodes: 3, Seed: 11}}
	for _, tc := range []struct {
		name string
		edit func(*store.TestInfo)
		want string // the command, or the error
	}{
		{"plain", func(*store.TestInfo) {}, "fencecheck run --target etcd --workload lock-append --fencing none --nemesis pause-holder --concurrency 5 --nodes 3 --time-limit 10s --ttl 2s --seed 11"},
		{"resources", func(ti *store.TestInfo) {
			ti.Resource = []string{"postgres", "proxy"}
			ti.Fencing, ti.AuditLog, ti.SideWriter = "postgres=token,proxy=none", true, true
		}, "--resource postgres,proxy --fencing postgres=token,proxy=none --audit-log --side-writer --nemesis"},
		{"no nemesis", func(ti *store.TestInfo) { ti.Nemesis = "" }, "--nemesis none"},
		{"register", func(ti *store.TestInfo) {
			ti.Workload, ti.Fencing, ti.Keys, ti.ReadMode = "register", "", 8, "serializable"
		}, "--keys 8 --read-mode serializable --time-limit"},
		{"a version and a recipe", func(ti *store.TestInfo) {
			ti.TargetVersion, ti.Version, ti.Recipe = "debian 3.4.23", "debian", "lock-rpc"
		}, "--target etcd --version debian --recipe lock-rpc --workload"},
		{"the user's image", func(ti *store.TestInfo) {
			ti.Image = map[string]string{store.ImageTarget: "registry.example/etcd:v3.6.16"}
		}, "--fencing none --image target=registry.example/etcd:v3.6.16 --nemesis"},
		{"the user's image, by its id", func(ti *store.TestInfo) {
			ti.Image = map[string]string{store.ImageTarget: "registry.example/etcd:v3.6.16"}
			ti.ImageIDs = map[string]string{store.ImageTarget: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
		}, "--image target=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef --nemesis"},
		{"an image that reads back otherwise", func(ti *store.TestInfo) {
			ti.Image = map[string]string{store.ImageTarget: "a,b"}
		}, "flag -image"},
		{"the check's memory", func(ti *store.TestInfo) {
			m := uint64(512 << 20)
			ti.CheckMemory = &m
		}, "--check-memory 512MiB --seed 11"},
		{"no seed", func(ti *store.TestInfo) { ti.Seed = 0 }, "records no seed"},
		{"no target", func(ti *store.TestInfo) { ti.Target = "" }, "names no target"},
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
			back, err := spec.Parse(args)
			if err != nil || !slices.Equal(back.Args(), args) {
				t.Errorf("the command reads back as %q (%v), want %q", back.Args(), err, args)
			}
		})
	}
	if c := Command("/tmp/my results/etcd/1", ok); c != "fencecheck rerun '/tmp/my results/etcd/1' --runs 5" {
		t.Errorf("Command = %s", c)
	}
	attached := ok
	attached.Endpoints, attached.AuthFile, attached.TLSServerName = []string{"https://e:1"}, "/a", "n"
	if c := RunCommand(attached); !strings.Contains(c, "--endpoints ENDPOINTS") || !strings.Contains(c, "--auth-file FILE") ||
		!strings.Contains(c, "--tls-server-name NAME") || strings.Contains(c, "https://e:1") || strings.Contains(c, " /a") {
		t.Errorf("RunCommand of an attached run = %s: want placeholders, not test.json's servers and files", c)
	}
	if c := Command("/r", attached); c != "fencecheck rerun /r --runs 5 --endpoints ENDPOINTS --tls-server-name NAME --auth-file FILE" {
		t.Errorf("Command of an attached run = %s", c)
	}
}

// A stored run's servers and credentials never reach a rerun: they come
// from the rerun's own flags, which an attached run needs again.
func TestAttach(t *testing.T) {
	own := spec.Spec{Target: "etcd", Workload: "lock-append", Seed: 3}
	stored := own
	stored.Endpoints, stored.AuthFile = []string{"https://evil.example:2379"}, "/root/.ssh/id_ed25519"
	stored.TLSCA, stored.TLSServerName = "/etc/stored-ca.pem", "stored.example"
	for _, c := range []struct {
		name          string
		stored, given spec.Spec
		want          string // the error, or "" for none
	}{
		{"own servers, nothing given", own, spec.Spec{}, ""},
		{"own servers, endpoints given", own, spec.Spec{Endpoints: []string{"10.0.0.1:2379"}}, "with --endpoints: the run started its own servers"},
		{"attached, nothing given", stored, spec.Spec{}, "never from test.json: give --endpoints, and --tls-ca, --tls-server-name, --auth-file again"},
		{"attached, a credential missing", stored, spec.Spec{Endpoints: []string{"10.0.0.9:2379"}, Auth: "u:p", TLSCA: "/mine.pem"}, "give --tls-server-name again"},
		{"attached, the auth file missing", stored, spec.Spec{Endpoints: []string{"10.0.0.9:2379"}, TLSCA: "/mine.pem", TLSServerName: "x"}, "give --auth-file (or --auth) again"},
		{"attached, all given again", stored, spec.Spec{Endpoints: []string{"10.0.0.9:2379"}, Auth: "u:p", TLSCA: "/mine.pem", TLSServerName: "mine.example"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Attach(c.stored, c.given)
			if c.want != "" {
				if !errors.Is(err, ErrCannot) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%v, want ErrCannot saying %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Seed != c.stored.Seed || !slices.Equal(s.Endpoints, c.given.Endpoints) || s.AuthFile != c.given.AuthFile || s.Auth != c.given.Auth ||
				s.TLSCA != c.given.TLSCA || s.TLSServerName != c.given.TLSServerName || s.TLSCert != "" || s.TLSKey != "" {
				t.Errorf("%+v, want the stored run with the given servers and credentials", s)
			}
		})
	}
}
