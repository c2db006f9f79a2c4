package targets

import (
	"errors"
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
