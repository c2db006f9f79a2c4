package cli

// Runs attached to servers fencecheck did not start (--endpoints), as a
// team's staging servers would be: an etcd that asks for client
// certificates and a Redis that asks for a password, each started here
// outside any run, on the host's network, with keys of "the team" in them.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/nemesis"

	consulapi "github.com/hashicorp/consul/api"
	goredis "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// stagingAddr is a host address the run's workers reach through their
// network's gateway: docker0's, else the host's first global IPv4 one.
// Staging servers listen there alone, not on every interface.
func stagingAddr(t *testing.T) string {
	t.Helper()
	var first string
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			ip, ok := a.(*net.IPNet)
			if !ok || ip.IP.To4() == nil || !ip.IP.IsGlobalUnicast() {
				continue
			}
			if i.Name == "docker0" {
				return ip.IP.String()
			}
			if first == "" {
				first = ip.IP.String()
			}
		}
	}
	if first == "" {
		t.Fatal("no host IPv4 address for staging servers")
	}
	return first
}

// freePort is a TCP port free on addr now.
func freePort(t *testing.T, addr string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startStaging starts one server container on the host's network, outside
// any run (its own runtime, removed when the test ends). Its image (one of
// fencecheck's: base, etcd, consul) is built first, or waited for, as a
// run's are: on a fresh machine make test's background lanes may not have
// made it yet.
func startStaging(t *testing.T, s runtime.ContainerSpec) {
	t.Helper()
	kind, _, _ := strings.Cut(strings.TrimPrefix(s.Image, "fencecheck/"), ":")
	if r := runCLI(t, nil, "images", "build", kind); r.code != 0 {
		t.Fatalf("images build %s (for %s): exit %d: %s", kind, s.Image, r.code, lastLines(r.stderr, 10))
	}
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := eng.NewRun(ctx, runtime.NewRunID(), images.BaseRef())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := rt.Teardown(); err != nil {
			t.Errorf("staging teardown: %v", err)
		}
		eng.Close()
	})
	s.Role, s.HostNetwork = runtime.RoleServer, true
	if _, err := rt.StartAll(ctx, []runtime.ContainerSpec{s}); err != nil {
		t.Fatal(err)
	}
}

// stagingRedis starts a Redis that asks for password, outside any run,
// and returns its address and a client of it (closed when the test ends),
// once the server has stored the team's own key "team:config" ("keep me"),
// which an attached run must leave alone.
func stagingRedis(t *testing.T, name, password string) (string, *goredis.Client) {
	t.Helper()
	ip := stagingAddr(t)
	port := freePort(t, ip)
	startStaging(t, runtime.ContainerSpec{Name: name, Image: images.BaseRef(),
		Cmd: []string{"redis-server", "--port", fmt.Sprint(port), "--bind", ip, "--requirepass", password, "--save", "", "--appendonly", "no"}})
	addr := net.JoinHostPort(ip, fmt.Sprint(port))
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, Password: password})
	t.Cleanup(func() { rdb.Close() })
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = rdb.Set(context.Background(), "team:config", "keep me", 0).Err(); err == nil {
			return addr, rdb
		}
	}
	t.Fatalf("the staging redis never served: %v", err)
	return "", nil
}

// pki is a certificate authority and the PEM files it signed, in a
// directory: ca.pem, server.pem and server-key.pem (for ip), client.pem
// and client-key.pem (CN user).
type pki struct{ dir string }

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func newPKI(t *testing.T, ip, user string) pki {
	t.Helper()
	p := pki{t.TempDir()}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(p.path(name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey := key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "staging CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	write("ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, tmpl x509.Certificate) {
		k := key()
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(serial), time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, &tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		write(name+".pem", "CERTIFICATE", der)
		write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	leaf("server", 2, x509.Certificate{Subject: pkix.Name{CommonName: "staging etcd"}, IPAddresses: []net.IP{net.ParseIP(ip)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	leaf("client", 3, x509.Certificate{Subject: pkix.Name{CommonName: user}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return p
}

func (p pki) read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(p.path(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// attachedRun is what every attached run must show: exit code want, the
// endpoints and no secret in test.json, the report saying the servers were
// not fencecheck's, and nothing of the run left on the machine.
func attachedRun(t *testing.T, res string, want int, secrets []string, args ...string) {
	t.Helper()
	r := runCLI(t, nil, append([]string{"run", "--results", res, "--quiet"}, args...)...)
	if r.code != want {
		t.Fatalf("run %s: exit %d, want %d:\n%s", strings.Join(args, " "), r.code, want, lastLines(r.stderr, 15))
	}
	dir := filepath.Join(res, "latest")
	test := readStoredTest(t, dir)
	if len(test.Endpoints) == 0 || len(test.Servers) != len(test.Endpoints) || test.Servers[0].Addr != test.Endpoints[0] {
		t.Errorf("test.json: endpoints %v, servers %v", test.Endpoints, test.Servers)
	}
	for kind := range test.Images {
		if kind != images.Base && kind != images.Worker {
			t.Errorf("test.json: image %s used: an attached run starts no server", kind)
		}
	}
	// No file of the run, its logs and the workers' included, holds a
	// secret.
	files := 0
	err := filepath.WalkDir(dir+"/", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds a secret (%.20q...)", path, s)
			}
		}
		return nil
	})
	if err != nil || files < 5 {
		t.Errorf("the run's files: %d read, %v", files, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.html")); !strings.Contains(string(b), "not fencecheck&#39;s") && !strings.Contains(string(b), "not fencecheck's") {
		t.Errorf("the report does not say the servers were not fencecheck's")
	}
	assertRunsGone(t, res)
}

// readStoredTest is a run's test.json, as the store reads it.
func readStoredTest(t *testing.T, dir string) store.TestInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "test.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ti store.TestInfo
	if err := json.Unmarshal(b, &ti); err != nil {
		t.Fatal(err)
	}
	return ti
}

// A server fault on attached servers: refused before anything starts,
// exit 254, saying why.
func refusedServerFault(t *testing.T, args ...string) {
	t.Helper()
	for _, nem := range []string{"pause-server", "kill", "partition", "clock-skew:server", "netem:delay"} {
		res := t.TempDir()
		r := runCLI(t, nil, append([]string{"run", "--results", res, "--quiet", "--nemesis", nem}, args...)...)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, "not fencecheck's") {
			t.Errorf("--nemesis %s on attached servers: exit %d: %s", nem, r.code, lastLines(r.stderr, 5))
		}
		// Before anything starts: no run directory, and a refusal's CPU
		// time (a wait on the servers would not show in it; a run would).
		if r.cpu > refuseCPU {
			t.Errorf("--nemesis %s: used %s of CPU time to refuse, want under %s", nem, r.cpu, refuseCPU)
		}
		noRunWritten(t, res)
	}
}

// etcd with TLS and client certificates (--client-cert-auth), started
// outside the run: unfenced pause-holder loses an update, token fencing
// does not, a server fault is refused, and the keys outside the runs'
// prefix are untouched while the runs' own are gone.
func TestEndpointsEtcdClientCerts(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ip := stagingAddr(t)
	port, peer := freePort(t, ip), freePort(t, "127.0.0.1")
	p := newPKI(t, ip, "fencecheck")
	url := fmt.Sprintf("https://%s:%d", ip, port)
	startStaging(t, runtime.ContainerSpec{Name: "staging-etcd", Image: images.EtcdRef(),
		Files: []runtime.File{{Path: "/pki/ca.pem", Data: p.read(t, "ca.pem")}, {Path: "/pki/server.pem", Data: p.read(t, "server.pem")},
			{Path: "/pki/server-key.pem", Data: p.read(t, "server-key.pem")}},
		Cmd: []string{"/usr/local/bin/etcd", "--name", "s1", "--data-dir", "/var/lib/etcd",
			"--listen-client-urls", url, "--advertise-client-urls", url,
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
			"--initial-cluster", fmt.Sprintf("s1=http://127.0.0.1:%d", peer),
			"--cert-file", "/pki/server.pem", "--key-file", "/pki/server-key.pem", "--trusted-ca-file", "/pki/ca.pem", "--client-cert-auth"}})

	// The team's keys, before any run.
	tc, err := (&targets.Credentials{CA: string(p.read(t, "ca.pem")), Cert: string(p.read(t, "client.pem")), Key: string(p.read(t, "client-key.pem"))}).TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, TLS: tc, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	var put error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, put = cli.Put(pctx, "/team/config", "keep me")
		cancel()
		if put == nil {
			break
		}
	}
	if put != nil {
		t.Fatalf("the staging etcd never served: %v", put)
	}
	for k, v := range map[string]string{"/fencecheck/not-this-run/lock": "someone else's", "/fencecheck": "a key named like the prefix", "zzz": "last"} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() map[string]string {
		resp, err := cli.Get(ctx, "", clientv3.WithFromKey())
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range resp.Kvs {
			m[string(kv.Key)] = fmt.Sprintf("%s@%d", kv.Value, kv.ModRevision)
		}
		return m
	}
	before := snapshot()

	args := []string{"--target", "etcd", "--endpoints", url, "--tls-ca", p.path("ca.pem"), "--tls-cert", p.path("client.pem"), "--tls-key", p.path("client-key.pem"),
		"--nemesis", "pause-holder", "--seed", "1"}
	secrets := []string{string(p.read(t, "client-key.pem")), strings.Split(string(p.read(t, "client-key.pem")), "\n")[1]}
	res := t.TempDir()
	attachedRun(t, res, exitInvalid, secrets, append(args, "--fencing", "none")...)
	if test := readStoredTest(t, filepath.Join(res, "latest")); test.TargetVersion == "" || test.TLSCA != p.path("ca.pem") {
		t.Errorf("test.json: target_version %q (want what the server said), tls_ca %q", test.TargetVersion, test.TLSCA)
	}
	attachedRun(t, t.TempDir(), exitValid, secrets, append(args, "--fencing", "token")...)
	refusedServerFault(t, args[:len(args)-4]...)

	if after := snapshot(); !maps.Equal(before, after) {
		t.Errorf("keys on the staging etcd changed:\nbefore %v\nafter  %v", before, after)
	}
	// Without the client certificate the server refuses: a harness
	// failure that says so, within --ready-timeout.
	r := runCLI(t, nil, "run", "--target", "etcd", "--endpoints", url, "--tls-ca", p.path("ca.pem"), "--ready-timeout", "5s", "--results", t.TempDir(), "--quiet")
	if r.code != exitHarness || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("no client certificate: exit %d: %s", r.code, lastLines(r.stderr, 5))
	}
}

// etcd with its own authentication, started outside the run: the run's
// user may read and write only under /fencecheck/ (an RBAC role of that
// range), so the server itself refuses anything the run might try
// elsewhere; unfenced pause-holder loses an update, token fencing does
// not, and a wrong password is refused with the server's words.
func TestEndpointsEtcdAuth(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ip := stagingAddr(t)
	port, peer := freePort(t, ip), freePort(t, "127.0.0.1")
	url := fmt.Sprintf("http://%s:%d", ip, port)
	startStaging(t, runtime.ContainerSpec{Name: "staging-etcd-auth", Image: images.EtcdRef(),
		Cmd: []string{"/usr/local/bin/etcd", "--name", "s1", "--data-dir", "/var/lib/etcd",
			"--listen-client-urls", url, "--advertise-client-urls", url,
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
			"--initial-cluster", fmt.Sprintf("s1=http://127.0.0.1:%d", peer)}})
	ctx := context.Background()
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var put error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, put = admin.Put(pctx, "/team/config", "keep me")
		cancel()
		if put == nil {
			break
		}
	}
	if put != nil {
		t.Fatalf("the staging etcd never served: %v", put)
	}
	const rootPW, runPW = "root-pw-staging", "run-pw-staging"
	for _, step := range []func() error{
		func() error { _, err := admin.Put(ctx, "/fencecheck", "a key named like the prefix"); return err },
		func() error { _, err := admin.Put(ctx, "/fencecheck/not-this-run/lock", "someone else's"); return err },
		func() error { _, err := admin.UserAdd(ctx, "root", rootPW); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "fencecheck-runs"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "fencecheck-runs", "/fencecheck/", clientv3.GetPrefixRangeEnd("/fencecheck/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserAdd(ctx, "runner", runPW); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "runner", "fencecheck-runs"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	root, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, Username: "root", Password: rootPW, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	snapshot := func() map[string]string {
		resp, err := root.Get(ctx, "", clientv3.WithFromKey())
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range resp.Kvs {
			m[string(kv.Key)] = fmt.Sprintf("%s@%d", kv.Value, kv.ModRevision)
		}
		return m
	}
	before := snapshot()
	authFile := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(authFile, []byte("runner:"+runPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--target", "etcd", "--endpoints", url, "--auth-file", authFile, "--nemesis", "pause-holder", "--seed", "1"}
	attachedRun(t, t.TempDir(), exitInvalid, []string{runPW}, append(args, "--fencing", "none")...)
	attachedRun(t, t.TempDir(), exitValid, []string{runPW}, append(args, "--fencing", "token")...)
	if after := snapshot(); !maps.Equal(before, after) {
		t.Errorf("keys on the staging etcd changed:\nbefore %v\nafter  %v", before, after)
	}
	r := runCLI(t, nil, "run", "--target", "etcd", "--endpoints", url, "--auth", "runner:wrong", "--ready-timeout", "5s", "--results", t.TempDir(), "--quiet")
	if r.code != exitHarness || !strings.Contains(r.stderr, "authentication failed") {
		t.Errorf("a wrong password: exit %d: %s", r.code, lastLines(r.stderr, 5))
	}
}

// Consul with ACLs (default deny), started outside the run: the run's
// token may write keys under fencecheck/ and sessions, and read nodes, the
// agent and the Raft configuration. Unfenced pause-holder loses an update
// at Consul's profile (45 s), token fencing does not, a wrong token is
// refused, and the team's keys are untouched.
func TestEndpointsConsulACL(t *testing.T) {
	suite.All(t, harnesstest.ConsulImage)
	requireDocker(t)
	t.Parallel()
	ip := stagingAddr(t)
	port := freePort(t, ip)
	const mgmt, wrong = "6f0c7f0e-staging-mgmt-token-000000000001", "6f0c7f0e-not-a-token-00000000000000000002"
	startStaging(t, runtime.ContainerSpec{Name: "staging-consul", Image: images.ConsulRef(),
		Cmd: []string{"/usr/local/bin/consul", "agent", "-server", "-bootstrap-expect", "1", "-node", "staging-1", "-datacenter", "dc1",
			"-data-dir", "/var/lib/consul", "-bind", "127.0.0.1", "-client", ip, "-http-port", fmt.Sprint(port), "-dns-port", "-1",
			"-server-port", fmt.Sprint(freePort(t, "127.0.0.1")), "-serf-lan-port", fmt.Sprint(freePort(t, "127.0.0.1")), "-serf-wan-port", fmt.Sprint(freePort(t, "127.0.0.1")),
			"-hcl", "performance { raft_multiplier = 1 }", "-hcl", "disable_update_check = true",
			"-hcl", `acl { enabled = true, default_policy = "deny", tokens { initial_management = "` + mgmt + `", agent = "` + mgmt + `" } }`}})
	addr := net.JoinHostPort(ip, fmt.Sprint(port))
	admin, err := consulapi.NewClient(&consulapi.Config{Address: addr, Token: mgmt})
	if err != nil {
		t.Fatal(err)
	}
	var put error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if _, put = admin.KV().Put(&consulapi.KVPair{Key: "team/config", Value: []byte("keep me")}, nil); put == nil {
			break
		}
	}
	if put != nil {
		t.Fatalf("the staging consul never served: %v", put)
	}
	for k, v := range map[string]string{"fencecheck": "a key named like the prefix", "fencecheck/not-this-run/lock": "someone else's"} {
		if _, err := admin.KV().Put(&consulapi.KVPair{Key: k, Value: []byte(v)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	pol, _, err := admin.ACL().PolicyCreate(&consulapi.ACLPolicy{Name: "fencecheck-runs", Rules: `
key_prefix "fencecheck/" { policy = "write" }
session_prefix "" { policy = "write" }
node_prefix "" { policy = "read" }
agent_prefix "" { policy = "read" }
operator = "read"
`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := admin.ACL().TokenCreate(&consulapi.ACLToken{Description: "fencecheck runs", Policies: []*consulapi.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]string {
		pairs, _, err := admin.KV().List("", nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, p := range pairs {
			m[p.Key] = fmt.Sprintf("%s@%d", p.Value, p.ModifyIndex)
		}
		return m
	}
	before := snapshot()
	authFile := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(authFile, []byte(":"+tok.SecretID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--target", "consul", "--endpoints", "http://" + addr, "--auth-file", authFile, "--nemesis", "pause-holder", "--seed", "1"}
	attachedRun(t, t.TempDir(), exitInvalid, []string{tok.SecretID, mgmt}, append(args, "--fencing", "none")...)
	attachedRun(t, t.TempDir(), exitValid, []string{tok.SecretID, mgmt}, append(args, "--fencing", "token")...)
	if after := snapshot(); !maps.Equal(before, after) {
		t.Errorf("keys on the staging consul changed:\nbefore %v\nafter  %v", before, after)
	}
	r := runCLI(t, nil, "run", "--target", "consul", "--endpoints", addr, "--auth", ":"+wrong, "--ready-timeout", "5s", "--results", t.TempDir(), "--quiet")
	if r.code != exitHarness || !strings.Contains(r.stderr, "ACL not found") {
		t.Errorf("a wrong token: exit %d: %s", r.code, lastLines(r.stderr, 5))
	}
}

// Redis with a password (requirepass), started outside the run.
func TestEndpointsRedisPassword(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	const password = "s3cret-staging-pw"
	addr, rdb := stagingRedis(t, "staging-redis", password)
	ip, _, _ := net.SplitHostPort(addr)
	ctx := context.Background()
	for k, v := range map[string]string{"/fencecheck/not-this-run/lock": "someone else's", "/fencecheck": "a key named like the prefix"} {
		if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() map[string]string {
		keys, err := rdb.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, k := range keys {
			m[k], _ = rdb.Get(ctx, k).Result()
		}
		return m
	}
	before := snapshot()
	authFile := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(authFile, []byte(":"+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--target", "redis", "--endpoints", "redis://" + addr, "--auth-file", authFile, "--nemesis", "pause-holder", "--seed", "1"}
	attachedRun(t, t.TempDir(), exitInvalid, []string{password}, append(args, "--fencing", "none")...)
	attachedRun(t, t.TempDir(), exitValid, []string{password}, append(args, "--fencing", "token")...)
	refusedServerFault(t, args[:len(args)-4]...)
	// A client-side network fault cuts the holder off from the attached
	// server by its address: the rules drop packets.
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--target", "redis", "--endpoints", "redis://"+addr, "--auth-file", authFile, "--nemesis", "partition-client",
		"--fencing", "none", "--time-limit", "20s", "--seed", "1", "--results", res, "--quiet")
	if r.code != exitInvalid && r.code != exitValid {
		t.Fatalf("partition-client: exit %d: %s", r.code, lastLines(r.stderr, 10))
	}
	got := readResults(t, filepath.Join(res, "latest"))
	cut := 0
	for _, f := range got.Faults {
		var rec nemesis.PartitionClientRecord
		if err := f.DecodeFigures(&rec); err == nil && rec.Dropped != nil && *rec.Dropped > 0 && f.Error == "" {
			cut++
		}
	}
	if len(got.Faults) == 0 || cut == 0 {
		t.Errorf("partition-client on an attached server: %d faults, %d dropped packets: %+v", len(got.Faults), cut, got.Faults)
	}
	if after := snapshot(); !maps.Equal(before, after) {
		t.Errorf("keys on the staging redis changed:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	// The same over TLS (rediss://), the server asking for a client
	// certificate as well as the password.
	tlsPort := freePort(t, ip)
	p := newPKI(t, ip, "fencecheck")
	startStaging(t, runtime.ContainerSpec{Name: "staging-redis-tls", Image: images.BaseRef(),
		Files: []runtime.File{{Path: "/pki/ca.pem", Data: p.read(t, "ca.pem")}, {Path: "/pki/server.pem", Data: p.read(t, "server.pem")},
			{Path: "/pki/server-key.pem", Data: p.read(t, "server-key.pem")}},
		Cmd: []string{"redis-server", "--port", "0", "--tls-port", fmt.Sprint(tlsPort), "--bind", ip, "--requirepass", password, "--save", "", "--appendonly", "no",
			"--tls-cert-file", "/pki/server.pem", "--tls-key-file", "/pki/server-key.pem", "--tls-ca-cert-file", "/pki/ca.pem", "--tls-auth-clients", "yes"}})
	tlsArgs := []string{"--target", "redis", "--endpoints", "rediss://" + net.JoinHostPort(ip, fmt.Sprint(tlsPort)), "--auth-file", authFile,
		"--tls-ca", p.path("ca.pem"), "--tls-cert", p.path("client.pem"), "--tls-key", p.path("client-key.pem"), "--nemesis", "pause-holder", "--seed", "1"}
	attachedRun(t, t.TempDir(), exitInvalid, []string{password, string(p.read(t, "client-key.pem"))}, append(tlsArgs, "--fencing", "none")...)

	// A wrong password: a harness failure that says so.
	r = runCLI(t, nil, "run", "--target", "redis", "--endpoints", addr, "--auth", ":wrong", "--ready-timeout", "5s", "--results", t.TempDir(), "--quiet")
	if r.code != exitHarness || !strings.Contains(r.stderr, "WRONGPASS") {
		t.Errorf("a wrong password: exit %d: %s", r.code, lastLines(r.stderr, 5))
	}
}
