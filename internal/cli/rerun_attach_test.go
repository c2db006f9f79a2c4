package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// listener is a fake server that records every byte it receives and
// answers nothing.
type listener struct {
	l     net.Listener
	mu    sync.Mutex
	got   bytes.Buffer
	conns int
}

func listen(t *testing.T, addr string) *listener {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &listener{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			go func() {
				defer c.Close()
				b := make([]byte, 4096)
				for {
					n, err := c.Read(b)
					s.mu.Lock()
					s.got.Write(b[:n])
					s.mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *listener) addr() string { return s.l.Addr().String() }

// received is what reached the server: connections and bytes.
func (s *listener) received() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns, s.got.String()
}

// storedAttachedRun is a stored run (a recorded pause-holder run's
// history) whose test.json names a Redis server at endpoint and a local
// file holding secret as its --auth-file: what someone else may leave in a
// results directory.
func storedAttachedRun(t *testing.T, endpoint, secret string) string {
	t.Helper()
	authFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(authFile, []byte("admin:"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := copyRun(t, filepath.Join("testdata", "runs", "etcd-none-pause-holder"))
	b, err := os.ReadFile(filepath.Join(dir, "test.json"))
	if err != nil {
		t.Fatal(err)
	}
	var test map[string]any
	if err := json.Unmarshal(b, &test); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nodes", "images", "image_ids", "servers", "target_version"} {
		delete(test, k)
	}
	test["target"], test["endpoints"], test["auth_file"], test["ready_timeout"] = "redis", endpoint, authFile, "3s"
	if b, err = json.Marshal(test); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A stored run's servers and credentials are never used: rerun of a run
// whose test.json names a server and a local file as --auth-file sends no
// byte to that server (which once received "AUTH admin <the file's first
// line>"); it exits 254 naming the flags to give again. Given again, they
// are checked as run checks them (a loopback server is refused). The
// stored server listens at an address of this machine the workers reach
// (docker0's), so that only the rerun's refusal keeps it silent.
func TestRerunTakesNoStoredCredentials(t *testing.T) {
	const secret = "SECRET-of-the-machine"
	stored, loopback := listen(t, stagingAddr(t)), listen(t, "127.0.0.1")
	dir := storedAttachedRun(t, "redis://"+stored.addr(), secret)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"nothing given", nil, []string{"--endpoints", "--auth-file", "never from test.json"}},
		{"endpoints without the auth file the run had", []string{"--endpoints", "redis://10.0.0.1:6379"}, []string{"give --auth-file (or --auth)"}},
		{"given again, at a loopback address", []string{"--endpoints", "redis://" + loopback.addr(), "--auth-file", filepath.Join(t.TempDir(), "missing")},
			[]string{"127.0.0.1 is a loopback address"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := t.TempDir()
			r := runCLI(t, nil, append([]string{"rerun", dir, "--runs", "1", "--results", res, "--quiet"}, c.args...)...)
			assertRefusedQuietly(t, r, res, secret, c.want)
		})
	}
	time.Sleep(100 * time.Millisecond) // a connection in flight lands
	for name, srv := range map[string]*listener{"the server the stored run names": stored, "the loopback server": loopback} {
		if n, got := srv.received(); n > 0 || got != "" {
			t.Errorf("%s received %d connections: %q", name, n, got)
		}
	}
}

// assertRefusedQuietly checks that a command given a stored or handed
// server and credentials exited 254 saying want, without secret in its
// output and without writing anything under res.
func assertRefusedQuietly(t *testing.T, r cliResult, res, secret string, want []string) {
	t.Helper()
	if r.code != exitBadArgs {
		t.Errorf("exit %d, want %d: %s", r.code, exitBadArgs, lastLines(r.stderr, 3))
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", lastLines(r.stderr, 3), w)
		}
	}
	if strings.Contains(r.stderr+r.stdout, secret) {
		t.Errorf("the output holds the auth file's secret")
	}
	if ents, _ := os.ReadDir(res); len(ents) > 0 {
		t.Errorf("the refused command wrote %s", ents[0].Name())
	}
}

// Given again on rerun's command line, the servers and credentials are
// the ones used: the server named there receives the credentials of the
// file named there, and the stored run's server and file are untouched.
// (The fake server answers nothing: the rerun ends at set-up, 255, and
// leaves nothing of its run behind.)
func TestRerunAttachedUsesItsOwnCommandLine(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	const storedSecret, ownSecret = "SECRET-of-the-stored-run", "SECRET-given-again"
	ip := stagingAddr(t)
	stored, own := listen(t, ip), listen(t, ip)
	dir := storedAttachedRun(t, "redis://"+stored.addr(), storedSecret)
	authFile := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(authFile, []byte("runner:"+ownSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := t.TempDir()
	r := runCLI(t, nil, "rerun", dir, "--runs", "1", "--results", res, "--quiet", "--endpoints", "redis://"+own.addr(), "--auth-file", authFile)
	if r.code != exitHarness || !strings.Contains(r.stdout, "the servers at redis://"+own.addr()+" (--endpoints) did not answer") {
		t.Errorf("exit %d, want %d, naming the server given: %s", r.code, exitHarness, r.stdout)
	}
	if n, got := own.received(); n == 0 || !strings.Contains(got, "runner") || !strings.Contains(got, ownSecret) || strings.Contains(got, storedSecret) {
		t.Errorf("the server given received %d connections: %q; want the credentials given", n, got)
	}
	if n, got := stored.received(); n > 0 || got != "" {
		t.Errorf("the stored run's server received %d connections: %q", n, got)
	}
	test := readStoredTest(t, filepath.Join(res, "latest"))
	if test.AuthFile != authFile || len(test.Endpoints) != 1 || test.Endpoints[0] != "redis://"+own.addr() {
		t.Errorf("the rerun's test.json: auth_file %q, endpoints %v", test.AuthFile, test.Endpoints)
	}
	assertRunsGone(t, res)
}
