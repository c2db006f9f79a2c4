// Package proxy is the resource "proxy": a fencing proxy that fencecheck
// ships (`fencecheck proxy`, Server), in its own container, in front of a
// store that cannot compare tokens: nginx's WebDAV PUT and GET of a file
// (Debian's nginx, in another container), standing in for a legacy file
// share. Clients send their token in a header; the proxy keeps the highest
// token it accepted, refuses lower ones with 409 Conflict, and is the
// clients' only path to the store. It keeps the highest token on disk,
// fsynced before it forwards, so that a restarted proxy (kill:resource hits
// it) still refuses a stale holder. "proxy-volatile" is the same proxy with
// the highest token in memory only: after a restart it lets a stale write
// through, which is what the durable one exists to prevent.
//
// Fencing modes: none (no token is sent; the proxy forwards everything) and
// token. The store has no compare-and-set of its own, so there is no cas.
// A writer outside the lock (the side writer, whose Access has no lease)
// writes the store directly, as a forgotten batch job would.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// Ports.
const (
	ProxyPort = 8080
	StorePort = 80
)

// StateFile is where the durable proxy keeps its highest token, in its
// container (which a restart keeps).
const StateFile = "/var/lib/fencecheck-proxy/highest"

// Resource is the fencing proxy and the store behind it.
type Resource struct {
	// Volatile runs the proxy with the highest token in memory only.
	Volatile bool
}

// Name is "proxy", or "proxy-volatile".
func (r Resource) Name() string {
	if r.Volatile {
		return "proxy-volatile"
	}
	return "proxy"
}

// OneFence is true: the proxy keeps one highest token, in one state file,
// for every path (resources.OneFence).
func (Resource) OneFence() bool { return true }

// Fencings are none and token.
func (Resource) Fencings() []targets.Fencing {
	return []targets.Fencing{targets.FencingNone, targets.FencingToken}
}

// nginxConf is the store: WebDAV PUT and GET of files under /srv/dav, no
// access log, errors on stderr.
const nginxConf = `daemon off;
user www-data;
worker_processes 1;
error_log stderr warn;
pid /tmp/nginx.pid;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path /srv/tmp;
	server {
		listen 80;
		root /srv/dav;
		location / {
			dav_methods PUT DELETE;
			create_full_put_path on;
			dav_access user:rw group:rw all:r;
			client_max_body_size 64m;
		}
	}
}
`

// Nodes are the proxy ("proxy", the fencecheck binary of the worker image,
// first: faults with the resource scope hit it) and the store ("dav",
// nginx).
func (r Resource) Nodes() []resources.NodeSpec {
	cmd := []string{"/usr/local/bin/fencecheck", "proxy", "--listen", fmt.Sprintf(":%d", ProxyPort),
		"--backend", fmt.Sprintf("http://dav:%d", StorePort)}
	if r.Volatile {
		cmd = append(cmd, "--volatile")
	} else {
		cmd = append(cmd, "--state", StateFile)
	}
	return []resources.NodeSpec{
		{Name: "proxy", Image: kinds.Worker, Port: ProxyPort, Cmd: cmd},
		{Name: "dav", Image: kinds.Base, Port: StorePort, Env: []string{"NGINX_CONF=" + nginxConf},
			Cmd: []string{"sh", "-c", `mkdir -p /srv/dav /srv/tmp && chown www-data /srv/dav /srv/tmp && printf '%s' "$NGINX_CONF" > /etc/nginx/dav.conf && exec nginx -c /etc/nginx/dav.conf`}},
	}
}

// Ready returns nil once the proxy answers and the store serves a GET.
func (Resource) Ready(ctx context.Context, nodes []targets.Node) error {
	if len(nodes) != 2 {
		return fmt.Errorf("proxy: want 2 nodes, not %d", len(nodes))
	}
	c := newClient()
	return targets.PollReady(ctx, "proxy", 100*time.Millisecond, func(ctx context.Context) error {
		for _, u := range []string{"http://" + nodes[0].Addr + pathFence, "http://" + nodes[1].Addr + "/"} {
			if err := ping(ctx, c, u); err != nil {
				return err
			}
		}
		return nil
	})
}

func ping(ctx context.Context, c *http.Client, url string) error {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// newClient is an HTTP client that never replays a request: every request
// on a connection of its own.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// Dial returns a handle on the run's file, through the proxy.
func (Resource) Dial(_ context.Context, cfg resources.Config, _ targets.Client) (resources.Store, error) {
	if len(cfg.Endpoints) != 2 {
		return nil, fmt.Errorf("%w: proxy: want the proxy's and the store's endpoints", resources.ErrBadConfig)
	}
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	path := "/" + strings.Trim(cfg.Prefix, "/") + "/list.json"
	return &store{c: newClient(), rpc: rpc, proxy: "http://" + cfg.Endpoints[0], direct: "http://" + cfg.Endpoints[1], path: path}, nil
}

type store struct {
	c             *http.Client
	rpc           time.Duration
	proxy, direct string
	path          string
}

func (s *store) Close() error { return nil }

// do sends one request and returns the answer's status and body.
func (s *store) do(ctx context.Context, method, url string, body []byte, token *int64) (int, []byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, s.rpc)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if token != nil {
		req.Header.Set(HeaderToken, strconv.FormatInt(*token, 10))
	}
	resp, err := s.c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b, resp.Header, err
}

// Reset forgets every token and writes an empty list.
func (s *store) Reset(ctx context.Context) error {
	st, b, _, err := s.do(ctx, http.MethodPost, s.proxy+pathReset, nil, nil)
	if err == nil && st != http.StatusNoContent {
		err = fmt.Errorf("%d %s", st, bytes.TrimSpace(b))
	}
	if err != nil {
		return fmt.Errorf("proxy: reset: %w", err)
	}
	if st, b, _, err = s.do(ctx, http.MethodPut, s.proxy+s.path, []byte("[]"), nil); err == nil && st/100 != 2 {
		err = fmt.Errorf("%d %s", st, bytes.TrimSpace(b))
	}
	if err != nil {
		return fmt.Errorf("proxy: reset: %w", err)
	}
	return nil
}

// tokenOf is the token to send: the lease's under token fencing, none
// otherwise.
func tokenOf(a resources.Access) *int64 {
	if a.Fencing != targets.FencingToken || a.Lease == nil {
		return nil
	}
	t := a.Lease.Token()
	return &t
}

// url is where a request goes: through the proxy, or, for a writer outside
// the lock, straight to the store.
func (s *store) url(a resources.Access) string {
	if a.Lease == nil && a.Fencing == targets.FencingNone {
		return s.direct + s.path
	}
	return s.proxy + s.path
}

// Read reads the file (a fenced read under token fencing).
func (s *store) Read(ctx context.Context, a resources.Access) (resources.State, error) {
	var st resources.State
	code, b, h, err := s.do(ctx, http.MethodGet, s.url(a), nil, tokenOf(a))
	if err != nil {
		return st, fmt.Errorf("proxy: read: %w", err)
	}
	switch {
	case code == http.StatusConflict:
		return st, fmt.Errorf("%w: the proxy refused the read: %s (highest %s)", resources.ErrFenced, bytes.TrimSpace(b), h.Get(HeaderHighest))
	case code == http.StatusNotFound:
		st.List = []int64{}
		return st, nil
	case code != http.StatusOK:
		return st, fmt.Errorf("proxy: read: %d %s", code, bytes.TrimSpace(b))
	}
	if err := json.Unmarshal(b, &st.List); err != nil {
		return st, fmt.Errorf("proxy: read: %q: %w", b, err)
	}
	if st.List == nil {
		st.List = []int64{}
	}
	return st, nil
}

// Write replaces the file; the store has no revisions (0).
func (s *store) Write(ctx context.Context, a resources.Access, _ resources.State, list []int64) (int64, error) {
	if a.Fencing != targets.FencingNone && a.Fencing != targets.FencingToken {
		return 0, fmt.Errorf("proxy: no %s fencing", a.Fencing)
	}
	body, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	code, b, h, err := s.do(ctx, http.MethodPut, s.url(a), body, tokenOf(a))
	if err != nil {
		return 0, fmt.Errorf("proxy: write: %w", err)
	}
	switch {
	case code == http.StatusConflict:
		return 0, fmt.Errorf("%w: the proxy refused the PUT: %s (highest %s)", resources.ErrFenced, bytes.TrimSpace(b), h.Get(HeaderHighest))
	case code/100 != 2:
		// The proxy or the store failed: whether the file changed is not
		// known (a 502 may come after the store wrote).
		return 0, fmt.Errorf("proxy: write: %d %s", code, bytes.TrimSpace(b))
	}
	return 0, nil
}
