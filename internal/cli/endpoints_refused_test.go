package cli

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Endpoints a run cannot use are refused with 254 before anything starts
// (no run directory, no test.json), saying why, and no error quotes what
// stood before an "@" in one (a user name, a password, a token).
func TestEndpointsRefusedBeforeAnything(t *testing.T) {
	const secret = "SECRET-in-endpoint"
	cases := []struct {
		name, target, endpoints, want string
	}{
		{"userinfo without a scheme", "etcd", secret + "@10.0.0.1:2379", "no user or password in an endpoint"},
		{"user and password in a URL", "etcd", "https://runner:" + secret + "@10.0.0.1:2379", "no user or password in an endpoint"},
		{"a Redis password in a URL", "redis", "redis://:" + secret + "@10.0.0.1:6379", "no user or password in an endpoint"},
		{"userinfo in a URL that does not parse", "etcd", "http://runner:" + secret + "@bad host:2379", "--endpoints"},
		{"userinfo in a host with a bad port", "consul", "runner:" + secret + "@10.0.0.1:http", "no user or password in an endpoint"},
		{"one server three times", "etcd", "10.0.0.1:2379,10.0.0.1:2379,10.0.0.1:2379", "10.0.0.1:2379 is given 3 times"},
		{"one server with and without its scheme", "etcd", "http://10.0.0.1:2379,10.0.0.1:2379", "10.0.0.1:2379 is given 2 times"},
		{"one server, its name in two cases", "consul", "Consul-1.staging:8500,consul-1.staging:8500", "is given 2 times"},
		{"a loopback address", "etcd", "127.0.0.1:2379", "a loopback address"},
		{"a loopback address of a URL", "redis", "redis://127.0.0.5:6379", "a loopback address"},
		{"localhost", "etcd", "localhost:2379", "a loopback address"},
		{"no address at all", "etcd", "0.0.0.0:2379", "0.0.0.0 is no server's address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := t.TempDir()
			r := runHostile(t, 30*time.Second, "run", "--target", c.target, "--endpoints", c.endpoints, "--results", res, "--quiet")
			r.expect(t, exitBadArgs, 5*time.Second, c.want)
			if strings.Contains(r.stderr+r.stdout, secret) {
				t.Errorf("the output quotes the secret: %s", r.stderr)
			}
			if strings.Contains(c.want, "loopback") && !strings.Contains(r.stderr, "not reachable from the workers' containers") {
				t.Errorf("the refusal does not say why: %s", r.stderr)
			}
			if ents, _ := os.ReadDir(res); len(ents) > 0 {
				t.Errorf("the refused run wrote %s", ents[0].Name())
			}
		})
	}
}
