package targets

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Endpoint is one server address of --endpoints, as a user gave it
// (https://etcd-1.staging:2379, rediss://cache:6380, 10.0.0.5:2379).
type Endpoint struct {
	// Scheme is the URL scheme given ("" for a bare HOST:PORT).
	Scheme string
	Host   string
	Port   int
}

// HostPort is the endpoint's HOST:PORT.
func (e Endpoint) HostPort() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// String is the endpoint as given, without what it did not say.
func (e Endpoint) String() string {
	if e.Scheme == "" {
		return e.HostPort()
	}
	return e.Scheme + "://" + e.HostPort()
}

// ParseEndpoint parses one endpoint: SCHEME://HOST:PORT with one of
// schemes, or HOST:PORT. It refuses a user name or a password in it (they
// would be recorded in test.json: --auth carries them), a path, and a
// missing or malformed port. Errors wrap ErrBadConfig.
func ParseEndpoint(s string, schemes ...string) (Endpoint, error) {
	bad := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("%w: --endpoints %q: "+format, append([]any{ErrBadConfig, s}, args...)...)
	}
	var e Endpoint
	hostport := s
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		u, err := url.Parse(s)
		if err != nil {
			return bad("not a URL: %v", err)
		}
		if u.User != nil {
			return bad("no user or password in an endpoint (test.json records endpoints): give them with --auth")
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
			return bad("an endpoint is SCHEME://HOST:PORT, with no path or query")
		}
		if !slices.Contains(schemes, scheme) {
			return bad("scheme %s: this target takes %s", scheme, strings.Join(schemes, ", "))
		}
		e.Scheme, hostport = scheme, strings.TrimSuffix(rest, "/")
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return bad("want HOST:PORT: %v", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return bad("port %q is not a port", port)
	}
	if host == "" {
		return bad("no host")
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return bad("an IPv6 address: the workers' network is IPv4 (give an IPv4 address or a name with an A record)")
	}
	e.Host, e.Port = host, p
	return e, nil
}

// ProbeTLS says why a TLS client with cfg cannot talk to the server at
// hostport, or nil when it can as far as a handshake and a first read
// show: what a client library that retries quietly (a gRPC client's
// "context deadline exceeded") does not say, as a missing or refused
// client certificate, an unknown authority, a name mismatch, or a server
// that does not speak TLS.
func ProbeTLS(ctx context.Context, hostport string, cfg *tls.Config) error {
	d := tls.Dialer{Config: cfg}
	c, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return err
	}
	defer c.Close()
	// TLS 1.3 servers judge the client's certificate after the handshake:
	// their verdict is the first thing read. A server that waits for a
	// request accepted it.
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() || err == nil {
		return nil
	}
	return err
}

// HTTPEndpoints parses the endpoints of servers spoken to over http:// or
// https:// (etcd, Consul), each SCHEME://HOST:PORT or HOST:PORT, which
// takes https when creds carry TLS, else http, and checks creds' TLS
// material. http:// with TLS credentials is refused: they would not be
// used. Errors wrap ErrBadConfig.
func HTTPEndpoints(eps []string, creds *Credentials) ([]string, error) {
	tc, err := creds.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	tlsOn := tc != nil
	addrs := make([]string, len(eps))
	for i, s := range eps {
		e, err := ParseEndpoint(s, "http", "https")
		if err != nil {
			return nil, err
		}
		switch {
		case e.Scheme == "" && tlsOn:
			e.Scheme = "https"
		case e.Scheme == "":
			e.Scheme = "http"
		case e.Scheme == "http" && tlsOn:
			return nil, fmt.Errorf("%w: --endpoints %s: http:// with TLS credentials (--tls-*): say https://", ErrBadConfig, s)
		}
		addrs[i] = e.String()
	}
	return addrs, nil
}

// RunPrefix says whether prefix is one run's own key prefix (at least two
// non-empty segments: /fencecheck/RUN_ID), the only one a Purger may
// delete under.
func RunPrefix(prefix string) bool {
	parts := strings.Split(strings.Trim(prefix, "/"), "/")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return false
		}
	}
	return true
}

// AttachedNodes are the nodes of attached servers (Attacher): s1, s2, ...
// in the order of addrs, each at its address.
func AttachedNodes(addrs []string) []Node {
	nodes := make([]Node, len(addrs))
	for i, a := range addrs {
		nodes[i] = Node{Name: fmt.Sprintf("s%d", i+1), Addr: a}
	}
	return nodes
}
