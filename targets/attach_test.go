package targets

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
)

// Endpoints of servers spoken to over HTTP take https when TLS
// credentials are given, and refuse what would leak or be ignored.
func TestHTTPEndpoints(t *testing.T) {
	got, err := HTTPEndpoints([]string{"10.0.0.1:2379", "https://etcd-2.staging:2379/"}, nil)
	if want := []string{"http://10.0.0.1:2379", "https://etcd-2.staging:2379"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("no credentials: %v, %v; want %v", got, err, want)
	}
	tlsOn := &Credentials{TLS: true}
	if got, err := HTTPEndpoints([]string{"10.0.0.1:2379"}, tlsOn); err != nil || got[0] != "https://10.0.0.1:2379" {
		t.Errorf("TLS credentials: %v, %v; want https", got, err)
	}
	for _, c := range []struct {
		ep    string
		creds *Credentials
		want  string
	}{
		{"http://10.0.0.1:2379", tlsOn, "http:// with TLS credentials"},
		{"https://u:p@10.0.0.1:2379", nil, "no user or password in an endpoint"},
		{"https://10.0.0.1:2379/v3/kv", nil, "no path or query"},
		{"redis://10.0.0.1:6379", nil, "scheme redis: this target takes http, https"},
		{"10.0.0.1", nil, "want HOST:PORT"},
		{"10.0.0.1:0", nil, "is not a port"},
		{":2379", nil, "no host"},
		{"http://[fd00::3]:2379", nil, "the workers' network is IPv4"},
		{"10.0.0.1:2379", &Credentials{CA: "not PEM"}, "no PEM certificate"},
	} {
		_, err := HTTPEndpoints([]string{c.ep}, c.creds)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.ep, err, c.want)
		}
	}
}

// An --endpoints list is refused, whatever the target, when an endpoint
// carries a user or a password (never quoted back), when a server is
// given twice, or when the workers' containers cannot reach it there.
func TestCheckEndpoints(t *testing.T) {
	if err := CheckEndpoints([]string{"https://etcd-1.staging:2379", "10.0.0.2:2379", "etcd-3.staging.:2379"}); err != nil {
		t.Errorf("three servers: %v", err)
	}
	for _, c := range []struct {
		eps  []string
		want string
	}{
		{nil, "no endpoint"},
		{[]string{"S3CR3T@10.0.0.1:2379"}, "no user or password in an endpoint"},
		{[]string{"https://u:S3CR3T@10.0.0.1:2379"}, "no user or password in an endpoint"},
		{[]string{"x:1", "x:1", "x:1"}, "x:1 is given 3 times"},
		{[]string{"https://X.staging:1", "x.staging.:1"}, "x.staging:1 is given 2 times"},
		{[]string{"127.0.0.1:2379"}, "127.0.0.1 is a loopback address: it is not reachable from the workers' containers"},
		{[]string{"LocalHost:2379"}, "LocalHost is a loopback address"},
		{[]string{"db.localhost:2379"}, "db.localhost is a loopback address"},
		{[]string{"0.0.0.0:2379"}, "0.0.0.0 is no server's address"},
		{[]string{"a b:1"}, "neither an IPv4 address nor a DNS name"},
		{[]string{"http://h:1?x=y"}, "no path or query"},
	} {
		err := CheckEndpoints(c.eps)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "S3CR3T") {
			t.Errorf("%q: %v, want %q", c.eps, err, c.want)
		}
	}
}

// FuzzCheckEndpoints: an --endpoints list either passes, each endpoint a
// HOST:PORT that reads back as itself, or is refused without quoting
// what stood before an "@" in it.
func FuzzCheckEndpoints(f *testing.F) {
	for _, s := range []string{"S3CR3T@10.0.0.1:2379", "https://u:S3CR3T@h:1", "redis://:S3CR3T@h:6379,h:6379", "x:1,x:1,x:1",
		"127.0.0.1:1", "localhost:1", "http://[::1]:1", "a b:1", "h:99999", "", "http://h:1/,https://g:2", "ht@S3CR3T://h:1",
		"http://S3CR3T@bad host:1", "h:1,S3CR3T:pw@h:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		eps := strings.Split(list, ",")
		for _, ep := range eps {
			// The marker only before the last @: no error may show it.
			at := strings.LastIndex(ep, "@")
			if at < 0 || !strings.Contains(ep[:at], "S3CR3T") || strings.Contains(ep[at:], "S3CR3T") {
				continue
			}
			if err := CheckEndpoints([]string{ep}); err == nil || strings.Contains(err.Error(), "S3CR3T") {
				t.Fatalf("%q: %v: passed, or quotes what stood before its @", ep, err)
			}
		}
		err := CheckEndpoints(eps)
		if err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("%q: %v does not wrap ErrBadConfig", list, err)
			}
			return
		}
		for _, ep := range eps {
			e, err := parseEndpoint(ep)
			if err != nil || strings.Contains(ep, "@") || net.ParseIP(e.Host).IsLoopback() {
				t.Fatalf("%q passed: %q reads as %+v, %v", list, ep, e, err)
			}
			if back, err := parseEndpoint(e.String()); err != nil || back != e {
				t.Fatalf("%q: %q reads back as %+v, %v", list, e.String(), back, err)
			}
		}
	})
}
