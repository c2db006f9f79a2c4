package targets

import (
	"context"
	"crypto/tls"
	"errors"
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
// schemes, or HOST:PORT, as parseEndpoint reads it. Errors wrap
// ErrBadConfig and quote the endpoint without what stood before an "@".
func ParseEndpoint(s string, schemes ...string) (Endpoint, error) {
	e, err := parseEndpoint(s)
	if err != nil {
		return Endpoint{}, err
	}
	if e.Scheme != "" && !slices.Contains(schemes, e.Scheme) {
		return Endpoint{}, badEndpoint(s, "scheme %s: this target takes %s", e.Scheme, strings.Join(schemes, ", "))
	}
	return e, nil
}

// parseEndpoint parses SCHEME://HOST:PORT or HOST:PORT, whatever the
// scheme. It refuses a user name or a password in it (they would be
// recorded in test.json: --auth carries them), a path or a query, a
// missing or malformed port, a host that is neither an IPv4 address nor
// a DNS name, an IPv6 address (the workers' network is IPv4), and an
// address the workers' containers cannot reach the servers at: a
// loopback one (127.0.0.0/8, localhost: in a container, the container
// itself) or 0.0.0.0. Errors wrap ErrBadConfig and quote the endpoint
// without what stood before an "@" (shownEndpoint).
func parseEndpoint(s string) (Endpoint, error) {
	var e Endpoint
	hostport := s
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		u, err := url.Parse(s)
		switch {
		case strings.Contains(rest, "@") || err == nil && u.User != nil:
			return Endpoint{}, badEndpoint(s, "no user or password in an endpoint (test.json records endpoints): give them with --auth-file")
		case err != nil:
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // without the URL: the caller quotes it
			}
			return Endpoint{}, badEndpoint(s, "not a URL: %v", err)
		case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
			return Endpoint{}, badEndpoint(s, "an endpoint is SCHEME://HOST:PORT, with no path or query")
		}
		e.Scheme, hostport = scheme, strings.TrimSuffix(rest, "/")
	}
	if strings.Contains(hostport, "@") {
		return Endpoint{}, badEndpoint(s, "no user or password in an endpoint (test.json records endpoints): give them with --auth-file")
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return Endpoint{}, badEndpoint(s, "want HOST:PORT: %s", ae.Err)
		}
		return Endpoint{}, badEndpoint(s, "want HOST:PORT")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return Endpoint{}, badEndpoint(s, "port %q is not a port", port)
	}
	if err := checkHost(host); err != nil {
		return Endpoint{}, badEndpoint(s, "%v", err)
	}
	e.Host, e.Port = host, p
	return e, nil
}

// checkHost says why host is not a server's host the workers can reach,
// or nil: an IPv4 address that is neither loopback nor unspecified, or a
// DNS name other than localhost.
func checkHost(host string) error {
	if host == "" {
		return errors.New("no host")
	}
	if ip := net.ParseIP(host); ip != nil {
		switch {
		case ip.To4() == nil:
			return errors.New("an IPv6 address: the workers' network is IPv4 (give an IPv4 address or a name with an A record)")
		case ip.IsLoopback():
			return LoopbackError(host)
		case ip.IsUnspecified():
			return fmt.Errorf("%s is no server's address: give the address the servers listen at", host)
		}
		return nil
	}
	if !dnsName(host) {
		return errors.New("the host is neither an IPv4 address nor a DNS name")
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return LoopbackError(host)
	}
	return nil
}

// LoopbackError is the refusal of an endpoint at a loopback address.
func LoopbackError(host string) error {
	return fmt.Errorf("%s is a loopback address: it is not reachable from the workers' containers, where it is the container itself (give an address of the machine that the containers reach, such as docker0's)", host)
}

// dnsName says whether s is a DNS name: dot-separated labels of letters,
// digits, "-" and "_", each of 1 to 63 characters, at most 253 in all.
func dnsName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// badEndpoint is an error about endpoint s, wrapping ErrBadConfig.
func badEndpoint(s, format string, args ...any) error {
	return fmt.Errorf("%w: --endpoints %q: "+format, append([]any{ErrBadConfig, shownEndpoint(s)}, args...)...)
}

// shownEndpoint is s as an error may quote it: everything before its
// last "@" (a user name, a password, a token, and the scheme with them)
// replaced by "…", and cut to 200 bytes.
func shownEndpoint(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = "…" + s[i:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// CheckEndpoints checks an --endpoints list whatever the target: at least
// one endpoint, each of which parses (parseEndpoint), and no server given
// twice (the same HOST:PORT, its name in any case, with or without a
// scheme): a run counts its nodes by its endpoints. Errors wrap
// ErrBadConfig and never quote what stood before an "@".
func CheckEndpoints(eps []string) error {
	if len(eps) == 0 {
		return fmt.Errorf("%w: --endpoints: no endpoint", ErrBadConfig)
	}
	count := map[string]int{}
	var order []string
	for _, s := range eps {
		e, err := parseEndpoint(s)
		if err != nil {
			return err
		}
		key := strings.ToLower(strings.TrimSuffix(e.Host, ".")) + ":" + strconv.Itoa(e.Port)
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
	}
	for _, key := range order {
		if n := count[key]; n > 1 {
			return fmt.Errorf("%w: --endpoints: %s is given %d times: each endpoint is one server of the run", ErrBadConfig, key, n)
		}
	}
	return nil
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
