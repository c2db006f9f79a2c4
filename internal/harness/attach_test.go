package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/targets"
)

// What a user gives for attached servers reads into credentials, and what
// cannot be used is refused with the flag's name before anything starts.
func TestAttachedCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	authFile := write("auth", "app:pa:ss\nignored\n")
	cfg := Config{Spec: spec.Spec{Endpoints: []string{"10.0.0.1:6379"}, AuthFile: authFile}}
	cr, err := cfg.credentials()
	if err != nil || cr == nil || cr.Username != "app" || cr.Password != "pa:ss" {
		t.Fatalf("--auth-file: %+v, %v", cr, err)
	}
	cfg.Spec.AuthFile, cfg.Spec.Auth = "", ":only-a-password"
	if cr, err := cfg.credentials(); err != nil || cr.Username != "" || cr.Password != "only-a-password" {
		t.Errorf("--auth :PW: %+v, %v", cr, err)
	}
	cfg.Spec.Auth = ""
	if cr, err := cfg.credentials(); err != nil || cr != nil {
		t.Errorf("nothing given: %+v, %v; want no credentials", cr, err)
	}
	for _, c := range []struct {
		s    spec.Spec
		want string
	}{
		{spec.Spec{Auth: "no-colon"}, "--auth is USER:PASSWORD"},
		{spec.Spec{Auth: "a:b", AuthFile: authFile}, "--auth and --auth-file"},
		{spec.Spec{AuthFile: write("empty", "\n")}, "first line is empty"},
		{spec.Spec{TLSCert: write("c.pem", "x")}, "--tls-cert and --tls-key go together"},
		{spec.Spec{TLSCA: filepath.Join(dir, "missing.pem")}, "--tls-ca"},
		{spec.Spec{TLSCA: write("bad-ca.pem", "not a certificate")}, "no PEM certificate"},
	} {
		cfg := Config{Spec: c.s}
		_, err := cfg.credentials()
		if !errors.Is(err, targets.ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a bad configuration saying %q", c.s, err, c.want)
		}
	}
}

// A secret file others may read (--auth-file, --tls-key) is warned of,
// once, naming the flag and the file; one only its owner reads is not.
func TestWorldReadableCredentialFileWarned(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.auth")
	closed := filepath.Join(dir, "closed.auth")
	for p, mode := range map[string]os.FileMode{open: 0o644, closed: 0o600} {
		if err := os.WriteFile(p, []byte("runner:pw\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		file string
		want string
	}{
		{closed, ""},
		{open, "--auth-file " + open + " can be read by every user of this machine (mode 0644)"},
		{open, ""}, // once a process
	} {
		var log bytes.Buffer
		cfg := Config{Spec: spec.Spec{Endpoints: []string{"10.0.0.1:6379"}, AuthFile: c.file},
			Log: slog.New(slog.NewTextHandler(&log, nil))}
		if _, err := cfg.credentials(); err != nil {
			t.Fatal(err)
		}
		if got := log.String(); c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("--auth-file %s: log %q, want %q", c.file, got, c.want)
		}
	}
}

// FuzzParseAuthFile: any content of --auth-file reads as USER:PASSWORD
// from its first line, or is refused without quoting it.
func FuzzParseAuthFile(f *testing.F) {
	for _, s := range []string{"runner:pw\n", ":token\r\nrest", "", "\n", "no-colon", "u:", ":", "a:b:c", "\xff:\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		user, pw, err := ParseAuthFile(b)
		line, _, _ := bytes.Cut(b, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if err != nil {
			if msg := err.Error(); msg != "the first line is empty" && msg != "the first line is not USER:PASSWORD (a password alone: :PASSWORD)" {
				t.Fatalf("an error that depends on the content: %v", err)
			}
			return
		}
		if pw == "" || user+":"+pw != string(line) {
			t.Fatalf("%q read as %q, %q", b, user, pw)
		}
	})
}

// A name that resolves to a loopback address is refused like one: the
// workers' containers would reach themselves there.
func TestForeignAddrsRefuseLoopback(t *testing.T) {
	_, err := foreignAddrs(context.Background(), []targets.Node{{Name: "s1", Addr: "http://localhost:2379"}})
	if err == nil || !strings.Contains(err.Error(), "localhost resolves to 127.0.0.1") || !strings.Contains(err.Error(), "not reachable from the workers' containers") {
		t.Errorf("localhost: %v", err)
	}
}

// silent is an attached target whose servers never answer (a blackholed
// endpoint): Ready waits until its context ends.
type silent struct{ targets.Target }

func (silent) Name() string { return "silent" }
func (silent) Ready(ctx context.Context, _ []targets.Node) error {
	<-ctx.Done()
	return fmt.Errorf("dial tcp: %w", ctx.Err())
}

// Attached servers that never answer: "cluster never became ready" names
// them, not only the client library's "context deadline exceeded".
func TestNeverReadyNamesTheEndpoints(t *testing.T) {
	eps := []string{"https://etcd-1.staging:2379", "10.0.0.2:2379"}
	c := newCluster(ClusterConfig{Target: silent{}, Endpoints: eps, ReadyTimeout: 50 * time.Millisecond})
	c.Nodes, c.foreign = targets.AttachedNodes(eps), map[string]string{"s1": "10.0.0.1", "s2": "10.0.0.2"}
	err := c.awaitReady(context.Background())
	want := "cluster never became ready within 50ms: the servers at https://etcd-1.staging:2379, 10.0.0.2:2379 (--endpoints) did not answer"
	if !errors.Is(err, ErrHarness) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("%v, want an error saying %q", err, want)
	}
}

// counting attaches to existing servers and counts its attaches.
type counting struct {
	targets.Target
	attaches *int
}

func (counting) Name() string { return "counting" }
func (c counting) Attach(endpoints []string, _ *targets.Credentials) (targets.Target, []targets.Node, error) {
	*c.attaches++
	return c, targets.AttachedNodes(endpoints), nil
}

// A configuration validated twice (by the CLI, then by Run) attaches
// once, and its cluster takes what it attached to; other endpoints or
// another target attach again.
func TestAttachOnce(t *testing.T) {
	n := 0
	cfg := Config{Target: counting{attaches: &n}, Spec: spec.Spec{Endpoints: []string{"10.0.0.1:2379", "10.0.0.2:2379"}}}
	for range 2 {
		if err := cfg.validateAttached(); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Fatalf("attached %d times, want once", n)
	}
	cl := newCluster(cfg.clusterConfig("r", "", nil))
	if err := cl.attach(); err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(cl.Nodes) != 2 || cl.foreign["s2"] != "10.0.0.2" {
		t.Errorf("the cluster attached again or took other servers: %d attaches, nodes %v, addresses %v", n, cl.Nodes, cl.foreign)
	}
	cfg.Endpoints = []string{"10.0.0.3:2379"}
	if err := cfg.validateAttached(); err != nil || n != 2 || len(cfg.attached.Nodes) != 1 {
		t.Errorf("other endpoints: %v, %d attaches, nodes %v; want a second attach to one node", err, n, cfg.attached.Nodes)
	}
	if err := newCluster(ClusterConfig{Target: counting{attaches: &n}, Endpoints: cfg.Endpoints}).attach(); err == nil {
		t.Error("a cluster of endpoints never attached started")
	}
}
