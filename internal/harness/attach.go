package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
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
// or --auth-file (readCredentialFile: regular files of bounded size); nil
// when none is given. A --auth-file or --tls-key others may read is
// warned of (c.Log). Errors wrap targets.ErrBadConfig.
func (c *Config) credentials() (*targets.Credentials, error) {
	bad := func(format string, args ...any) (*targets.Credentials, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{targets.ErrBadConfig}, args...)...)
	}
	var cr targets.Credentials
	read := func(flag, path string, max int64, secret bool) (string, error) {
		if path == "" {
			return "", nil
		}
		b, perm, err := readCredentialFile(flag, path, max)
		if err != nil {
			return "", err
		}
		if secret && perm&0o004 != 0 {
			c.warnOnce(flag+"\x00"+path, fmt.Sprintf("--%s %s can be read by every user of this machine (mode %04o): chmod o-r it", flag, path, perm))
		}
		return string(b), nil
	}
	var err error
	if cr.CA, err = read("tls-ca", c.TLSCA, MaxPEMFile, false); err != nil {
		return nil, err
	}
	if cr.Cert, err = read("tls-cert", c.TLSCert, MaxPEMFile, false); err != nil {
		return nil, err
	}
	if cr.Key, err = read("tls-key", c.TLSKey, MaxPEMFile, true); err != nil {
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
		b, err := read("auth-file", c.AuthFile, MaxAuthFile, true)
		if err != nil {
			return nil, err
		}
		if cr.Username, cr.Password, err = ParseAuthFile([]byte(b)); err != nil {
			return bad("--auth-file %s: %w", c.AuthFile, err)
		}
	} else if auth != "" {
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

// Bounds of the credential files (readCredentialFile).
const (
	// MaxPEMFile bounds --tls-ca, --tls-cert and --tls-key: a CA bundle
	// of every public authority is some 200 KiB.
	MaxPEMFile = 1 << 20
	// MaxAuthFile bounds --auth-file: a line of USER:PASSWORD or a token.
	MaxAuthFile = 64 << 10
)

// readCredentialFile reads the file --flag names: a regular file (a FIFO
// would block its reader for good, a device like /dev/zero never ends, a
// directory is no file), opened without blocking, of at most max bytes,
// checked before it is opened and again once it is. It returns the
// content and the file's permission bits. Errors wrap targets.ErrBadConfig
// and name the flag, the path and why.
func readCredentialFile(flag, path string, max int64) ([]byte, fs.FileMode, error) {
	bad := func(format string, args ...any) ([]byte, fs.FileMode, error) {
		return nil, 0, fmt.Errorf("%w: --%s %s: "+format, append([]any{targets.ErrBadConfig, flag, path}, args...)...)
	}
	check := func(st fs.FileInfo) error {
		switch {
		case !st.Mode().IsRegular():
			return fmt.Errorf("not a regular file (%s): give a file", images.FileKind(st.Mode()))
		case st.Size() > max:
			return fmt.Errorf("larger than %d bytes (%d): not a credential file", max, st.Size())
		}
		return nil
	}
	st, err := os.Stat(path) // a device is refused before it is opened
	if err != nil {
		return bad("%w", cause(err))
	}
	if err := check(st); err != nil {
		return bad("%w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return bad("%w", cause(err))
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return bad("%w", err)
	}
	if err := check(st); err != nil { // replaced since the first look
		return bad("%w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	switch {
	case err != nil:
		return bad("%w", err)
	case int64(len(b)) > max:
		return bad("larger than %d bytes: not a credential file", max)
	}
	return b, st.Mode().Perm(), nil
}

// cause is what a *fs.PathError says without its path (the caller names
// it), or err.
func cause(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// ParseAuthFile reads --auth-file's content: its first line (a trailing
// CR cut) is USER:PASSWORD, or :PASSWORD for a password or token alone.
// The error never quotes the content.
func ParseAuthFile(b []byte) (user, password string, err error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	auth := strings.TrimSuffix(string(line), "\r")
	if auth == "" {
		return "", "", errors.New("the first line is empty")
	}
	user, password, ok := strings.Cut(auth, ":")
	if !ok || password == "" {
		return "", "", errors.New("the first line is not USER:PASSWORD (a password alone: :PASSWORD)")
	}
	return user, password, nil
}

// warned are the warnings this process gave (warnOnce): a matrix
// validates each cell's configuration, and a file is warned of once.
var warned sync.Map

// warnOnce logs msg as a warning (c.Log) unless key was warned of.
func (c *Config) warnOnce(key, msg string) {
	if _, seen := warned.LoadOrStore(key, true); !seen && c.Log != nil {
		c.Log.Warn(msg)
	}
}

// validateAttached checks what an attached run asks, before anything
// starts: a target that can attach, endpoints it takes, credentials that
// read, and nothing that needs servers of fencecheck's own.
func (c *Config) validateAttached() error {
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
	if err := targets.CheckEndpoints(c.Endpoints); err != nil {
		return err
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
	if a := c.attached; a != nil && a.by(c.Target, c.Endpoints, creds) {
		// Attached once: a configuration validated again (by Run after
		// the CLI) keeps what it attached to.
		return c.checkAttachedNodes(len(a.Nodes))
	}
	t, nodes, err := at.Attach(c.Endpoints, creds)
	if err != nil {
		return err
	}
	if err := c.checkAttachedNodes(len(nodes)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := foreignAddrs(ctx, nodes)
	if err != nil {
		return bad("--endpoints: %w", err)
	}
	c.attached = &Attachment{Target: t, Nodes: nodes, Addrs: addrs, of: c.Target.Name(), endpoints: slices.Clone(c.Endpoints), creds: creds}
	return nil
}

// checkAttachedNodes checks --nodes against the n servers attached to.
func (c *Config) checkAttachedNodes(n int) error {
	if c.Nodes != 0 && c.Nodes != n {
		return bad("--nodes %d with %d endpoints: an attached run's servers are its endpoints", c.Nodes, n)
	}
	return nil
}

// Attachment is a run on existing servers, attached once, by
// Config.Validate: the target as attached to them (targets.Attacher) with
// the credentials, their nodes, and their addresses by node name resolved
// for the client-side network faults (foreignAddrs).
type Attachment struct {
	Target targets.Target
	Nodes  []targets.Node
	Addrs  map[string]string
	// of, endpoints and creds are whom and what it attached with.
	of        string
	endpoints []string
	creds     *targets.Credentials
}

// by says whether a is target t attached to endpoints with creds.
func (a *Attachment) by(t targets.Target, endpoints []string, creds *targets.Credentials) bool {
	sameCreds := (a.creds == nil) == (creds == nil) && (creds == nil || *a.creds == *creds)
	return sameCreds && a.of == t.Name() && slices.Equal(a.endpoints, endpoints)
}

// foreignAddrs resolves the hosts of attached nodes to their addresses
// (comma-separated, as iptables takes them), for the client-side network
// faults (nemesis.Network.Addr): the harness resolves them as the machine
// does. A host with no IPv4 address, or with a loopback one (a name that
// resolves to 127.0.0.1: the workers' containers would reach themselves),
// is an error.
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
			switch {
			case ip.IsLoopback():
				return nil, fmt.Errorf("%s resolves to %s: %w", host, ip, targets.LoopbackError(ip.String()))
			case ip.IsUnspecified():
				return nil, fmt.Errorf("%s resolves to %s, no server's address", host, ip)
			}
			s = append(s, ip.String())
		}
		out[n.Name] = strings.Join(s, ",")
	}
	return out, nil
}
