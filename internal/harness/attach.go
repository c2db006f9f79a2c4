package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/targets"
)

// A run with --endpoints attaches to servers fencecheck did not start and
// does not own (a team's staging cluster): it starts only its workers (and
// the containers of resources that have their own), allows only faults on
// the client side (nemesis.Shape.Foreign), keeps every key under its
// prefix and deletes them when it ends (targets.Purger).

// Attached says whether the run attaches to existing servers.
func (c *Config) Attached() bool { return len(c.Endpoints) > 0 }

// foreign is what the faults' preconditions are told of attached servers
// (nemesis.Shape.Foreign): "" when fencecheck starts its own.
func (c *Config) foreign() string {
	if !c.Attached() {
		return ""
	}
	return "the servers at " + strings.Join(c.Endpoints, ", ") + " are not fencecheck's (--endpoints): it does not pause, kill, cut off, slow or skew them"
}

// credentials are what the run's clients present to attached servers,
// read from --tls-ca, --tls-cert, --tls-key, --tls-server-name and --auth
// or --auth-file; nil when none is given. Errors wrap targets.ErrBadConfig.
func (c *Config) credentials() (*targets.Credentials, error) {
	bad := func(format string, args ...any) (*targets.Credentials, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{targets.ErrBadConfig}, args...)...)
	}
	var cr targets.Credentials
	read := func(flag, path string) (string, error) {
		if path == "" {
			return "", nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%w: --%s: %w", targets.ErrBadConfig, flag, err)
		}
		return string(b), nil
	}
	var err error
	if cr.CA, err = read("tls-ca", c.TLSCA); err != nil {
		return nil, err
	}
	if cr.Cert, err = read("tls-cert", c.TLSCert); err != nil {
		return nil, err
	}
	if cr.Key, err = read("tls-key", c.TLSKey); err != nil {
		return nil, err
	}
	if (cr.Cert == "") != (cr.Key == "") {
		return bad("--tls-cert and --tls-key go together")
	}
	cr.ServerName = c.TLSServerName
	auth := c.Auth
	if c.AuthFile != "" {
		if auth != "" {
			return bad("--auth and --auth-file: give one")
		}
		b, err := os.ReadFile(c.AuthFile)
		if err != nil {
			return bad("--auth-file: %w", err)
		}
		line, _, _ := bytes.Cut(b, []byte("\n"))
		auth = strings.TrimRight(string(line), "\r")
		if auth == "" {
			return bad("--auth-file %s: the first line is empty", c.AuthFile)
		}
	}
	if auth != "" {
		user, pass, ok := strings.Cut(auth, ":")
		if !ok || pass == "" {
			return bad("--auth is USER:PASSWORD (a password alone: :PASSWORD)")
		}
		cr.Username, cr.Password = user, pass
	}
	if cr == (targets.Credentials{}) {
		return nil, nil
	}
	if cr.ServerName != "" && cr.CA == "" && cr.Cert == "" {
		cr.TLS = true
	}
	if _, err := cr.TLSConfig(); err != nil {
		return bad("--tls-*: %w", err)
	}
	return &cr, nil
}

// validateAttached checks what an attached run asks, before anything
// starts: a target that can attach, endpoints it takes, credentials that
// read, and nothing that needs servers of fencecheck's own.
func (c *Config) validateAttached() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{targets.ErrBadConfig}, args...)...)
	}
	if !c.Attached() {
		if c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" || c.TLSServerName != "" || c.Auth != "" || c.AuthFile != "" {
			return bad("--tls-* and --auth are what clients present to existing servers: they go with --endpoints (fencecheck's own servers ask for none)")
		}
		return nil
	}
	at, ok := c.Target.(targets.Attacher)
	if !ok {
		return bad("--endpoints: target %s runs only on servers fencecheck starts; it cannot attach to existing ones", c.Target.Name())
	}
	if c.Version != "" {
		return bad("--endpoints with --version: the version is that of fencecheck's own servers; attached servers run theirs, which test.json records")
	}
	if c.Image[store.ImageTarget] != "" {
		return bad("--endpoints with --image target=: an attached run starts no server")
	}
	creds, err := c.credentials()
	if err != nil {
		return err
	}
	c.creds = creds
	if c.ClientProgram != nil {
		// The client protocol's init gives a program HOST:PORT endpoints
		// and no credentials: an attached server's URL, TLS or password
		// would not reach it.
		return bad("--client-dir with --endpoints: the client protocol carries no endpoint scheme and no credentials yet")
	}
	_, nodes, err := at.Attach(c.Endpoints, creds)
	if err != nil {
		return err
	}
	if c.Nodes != 0 && c.Nodes != len(nodes) {
		return bad("--nodes %d with %d endpoints: an attached run's servers are its endpoints", c.Nodes, len(nodes))
	}
	return nil
}

// foreignAddrs resolves the hosts of attached nodes to their addresses
// (comma-separated, as iptables takes them), for the client-side network
// faults (nemesis.Network.Addr): the harness resolves them as the machine
// does.
func foreignAddrs(ctx context.Context, nodes []targets.Node) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range nodes {
		hostport := n.Addr
		if _, rest, ok := strings.Cut(hostport, "://"); ok {
			hostport = rest
		}
		host, _, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Addr, err)
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ips, err := net.DefaultResolver.LookupIP(rctx, "ip4", host)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s has no IPv4 address here (the workers' network is IPv4): %w", host, err)
		}
		var s []string
		for _, ip := range ips {
			s = append(s, ip.String())
		}
		out[n.Name] = strings.Join(s, ",")
	}
	return out, nil
}
