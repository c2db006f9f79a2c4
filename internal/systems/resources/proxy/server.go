package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The proxy's HTTP interface, for clients:
//
//	GET  /PATH   read the file PATH of the store behind it
//	PUT  /PATH   write it (the body replaces the file)
//	     with "Fencing-Token: T": refused with 409 Conflict (and
//	     "Fencing-Highest: H") when T is lower than the highest token the
//	     proxy accepted, else the proxy raises its highest to T, on disk
//	     first, then forwards; without the header the request is forwarded
//	     as it is (fencing none)
//	GET  /_fence         {"highest": H, "volatile": false}
//	POST /_fence/reset   forget every token (the harness, before a run)
//
// Refused with 400 Bad Request, and never forwarded: a Fencing-Token header
// that is present but is not one decimal integer of digits only (empty,
// blank, signed, not a number, above the int64 range, or repeated); a PATH
// that climbs above the root ("/../x", "/%2e%2e/x", "/..%2fx": the path
// is decoded first), is not absolute, or holds a NUL byte. Any other PATH is
// forwarded cleaned (no "." or ".." segment, no repeated slash; a trailing
// slash is kept) and escaped, under the backend's base path, without the
// request's query: "/a%3Fq=1" writes the file "a?q=1". A body above MaxBody
// is refused with 413.
const (
	// HeaderToken carries a client's fencing token.
	HeaderToken = "Fencing-Token"
	// HeaderHighest carries the highest token, on a refusal.
	HeaderHighest = "Fencing-Highest"
	pathFence     = "/_fence"
	pathReset     = "/_fence/reset"
)

// Limits and deadlines. No client holds another up for longer than the store
// takes to answer a forward: a request's body is read whole before its turn
// and its reply written after it, each under a deadline of its own.
const (
	// MaxBody is the largest request body the proxy reads, and the largest
	// answer it takes from the store: the store's nginx takes bodies up to
	// 64 MiB (client_max_body_size 64m).
	MaxBody = 64 << 20
	// DefaultReadTimeout bounds the reading of a request's body, from the
	// moment its head was read (Server.ReadTimeout when that is 0). The
	// harness's clients send at most a few KiB and give up after their RPC
	// timeout (5 s by default).
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds the writing of a reply, from the end of
	// the request's turn (Server.WriteTimeout when that is 0).
	DefaultWriteTimeout = 30 * time.Second
	// ReadHeaderTimeout bounds the reading of a request's head
	// (HTTPServer).
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout bounds the wait for a connection's next request
	// (HTTPServer).
	IdleTimeout = time.Minute
	// BackendTimeout bounds a forward to the store, its answer read whole.
	// The forward runs in the request's turn: a store that does not answer
	// holds every request up, for this long at most.
	BackendTimeout = time.Minute
)

// Server is the fencing proxy: the only path to a store that cannot compare
// tokens. It keeps the highest token it accepted and gives requests one turn
// at a time: a request's token check, the raise of the highest token (on
// disk first unless Volatile) and its forward to the store happen in its
// turn, with no other request's check or forward in between. A request is
// read whole (at most MaxBody, within the read timeout) before it waits for
// its turn, and its reply is written after the turn, within the write
// timeout: a client that stalls mid-request, or does not read its reply,
// holds no other client up. A request whose client left before its turn
// came is dropped; one whose turn began is forwarded to its end.
//
// Load must return nil before ServeHTTP is called.
type Server struct {
	// Backend is the store's base URL (http://dav:80), with or without a
	// base path; requests are forwarded below it.
	Backend string
	// State is the file that keeps the highest token; each raise is
	// written and fsynced there before the request is forwarded, and read
	// back at start. Empty with Volatile.
	State string
	// Volatile keeps the highest token in memory only: a restarted proxy
	// has forgotten it (for tests that show why it must not).
	Volatile bool
	Log      *slog.Logger
	// ReadTimeout bounds the reading of a request's body (0:
	// DefaultReadTimeout); WriteTimeout bounds the writing of its reply (0:
	// DefaultWriteTimeout). A request past its deadline loses its
	// connection.
	ReadTimeout, WriteTimeout time.Duration

	// turn holds one value while a request has its turn.
	turn    chan struct{}
	highest int64 // in a turn only
	base    *url.URL
	client  *http.Client
}

// Load checks Backend and reads the highest token from the state file (none
// yet: 0). It returns an error, and the proxy must not serve, when Backend
// is not an http(s) URL without query, when a durable proxy has no state
// file, or when the state file cannot be read or does not hold a
// non-negative decimal integer (the file's name is in the error).
func (s *Server) Load() error {
	s.turn = make(chan struct{}, 1)
	s.client = &http.Client{Timeout: BackendTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	base, err := url.Parse(s.Backend)
	if err != nil {
		return fmt.Errorf("proxy: backend: %w", err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.User != nil || base.RawQuery != "" || base.Fragment != "" || base.Opaque != "" {
		return fmt.Errorf("proxy: backend %q: want http://HOST[:PORT][/PATH]", s.Backend)
	}
	base.Path, base.RawPath, base.ForceQuery = strings.TrimRight(base.Path, "/"), "", false
	s.base = base
	if s.Volatile {
		return nil
	}
	if s.State == "" {
		return errors.New("proxy: a durable proxy needs a state file")
	}
	b, err := os.ReadFile(s.State)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	h, err := parseToken(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("proxy: state file %s: highest token: %w", s.State, err)
	}
	s.highest = h
	return nil
}

// HTTPServer returns an http.Server that serves s with the proxy's deadlines
// on each connection: ReadHeaderTimeout for a request's head, IdleTimeout
// between two requests, and s's read and write timeouts. ServeHTTP sets a
// body's and a reply's deadlines itself, so that s served by any http.Server
// holds no client up; the head's and the idle deadlines need this one.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadHeaderTimeout + s.readTimeout(),
		WriteTimeout: s.writeTimeout(), IdleTimeout: IdleTimeout}
}

func (s *Server) readTimeout() time.Duration {
	if s.ReadTimeout > 0 {
		return s.ReadTimeout
	}
	return DefaultReadTimeout
}

func (s *Server) writeTimeout() time.Duration {
	if s.WriteTimeout > 0 {
		return s.WriteTimeout
	}
	return DefaultWriteTimeout
}

const digits = "0123456789"

// parseToken reads a fencing token: one decimal integer, digits only (no
// sign, no space), within the int64 range.
func parseToken(v string) (int64, error) {
	switch {
	case v == "":
		return 0, errors.New("empty")
	case v[0] == '-' && len(v) > 1 && strings.Trim(v[1:], digits) == "":
		return 0, fmt.Errorf("%q is negative", v)
	case strings.Trim(v, digits) != "":
		return 0, fmt.Errorf("%q is not a decimal integer", v)
	}
	t, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", v, err)
	}
	return t, nil
}

// headerToken returns the fencing token of a request's header h and true,
// or false when h has no Fencing-Token; an error when Fencing-Token is
// present but is not exactly one token (parseToken, once the spaces and
// tabs around it are trimmed).
func headerToken(h http.Header) (int64, bool, error) {
	vals := h.Values(HeaderToken)
	switch len(vals) {
	case 0:
		return 0, false, nil
	case 1:
	default:
		return 0, true, fmt.Errorf("%d %s headers", len(vals), HeaderToken)
	}
	t, err := parseToken(strings.Trim(vals[0], " \t"))
	if err != nil {
		return 0, true, fmt.Errorf("%s: %w", HeaderToken, err)
	}
	return t, true, nil
}

// cleanPath returns the (decoded) request path p cleaned: no "." or ".."
// segment, no repeated slash, a trailing slash kept. It returns an error
// when p is not absolute, holds a NUL byte, or climbs above the root at any
// point ("/../x", "/a/../../x").
func cleanPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q holds a NUL byte", p)
	}
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return "", fmt.Errorf("path %q leaves the base", p)
			}
		default:
			depth++
		}
	}
	c := path.Clean(p)
	if c != "/" && strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c, nil
}

// persist writes h to the state file durably: a new file, fsynced, renamed
// over the old one, and the directory fsynced.
func (s *Server) persist(h int64) error {
	if s.Volatile {
		return nil
	}
	dir := filepath.Dir(s.State)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := s.State + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(strconv.FormatInt(h, 10) + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.State); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// take waits for the request's turn; it returns ctx's error, and no turn,
// when ctx ends first or had ended when the turn came.
func (s *Server) take(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		if err := ctx.Err(); err != nil {
			<-s.turn
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give ends the turn.
func (s *Server) give() { <-s.turn }

// reply is an answer to a client, made in a request's turn and written after
// it.
type reply struct {
	code   int
	header http.Header // set on the reply
	body   []byte
	text   string // an error's text, sent with http.Error, when not ""
}

func fail(code int, format string, args ...any) reply {
	return reply{code: code, text: "proxy: " + fmt.Sprintf(format, args...)}
}

// write sends rp to w within d.
func (rp reply) write(ctx context.Context, log *slog.Logger, w http.ResponseWriter, d time.Duration) {
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		log.DebugContext(ctx, "no write deadline", "err", err)
	}
	for k, v := range rp.header {
		w.Header()[k] = v
	}
	if rp.text != "" {
		http.Error(w, rp.text, rp.code)
		return
	}
	if len(rp.body) > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(rp.body)))
	}
	w.WriteHeader(rp.code)
	if _, err := w.Write(rp.body); err != nil {
		log.DebugContext(ctx, "reply not sent", "err", err)
	}
}

// ServeHTTP serves the proxy's interface: it reads the request whole, checks
// and forwards it in its turn (Server), and writes the reply after.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s.handle(ctx, w, r).write(ctx, s.Log, w, s.writeTimeout())
}

// handle answers r; w serves only to read r's body.
func (s *Server) handle(ctx context.Context, w http.ResponseWriter, r *http.Request) reply {
	p, err := cleanPath(r.URL.Path)
	if err != nil {
		s.Log.WarnContext(ctx, "bad path", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		return fail(http.StatusBadRequest, "%v", err)
	}
	switch {
	case p == pathFence && r.Method == http.MethodGet:
		if err := s.take(ctx); err != nil {
			return fail(http.StatusServiceUnavailable, "%v", err)
		}
		h := s.highest
		s.give()
		b, _ := json.Marshal(map[string]any{"highest": h, "volatile": s.Volatile})
		return reply{code: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: append(b, '\n')}
	case p == pathReset && r.Method == http.MethodPost:
		return s.reset(ctx)
	case strings.HasPrefix(p, pathFence):
		return fail(http.StatusNotFound, "unknown fence request")
	case r.Method != http.MethodGet && r.Method != http.MethodPut:
		return fail(http.StatusMethodNotAllowed, "GET and PUT only")
	}
	token, fenced, err := headerToken(r.Header)
	if err != nil {
		s.Log.WarnContext(ctx, "bad token", "method", r.Method, "path", p, "remote", r.RemoteAddr, "err", err)
		return fail(http.StatusBadRequest, "bad %v", err)
	}
	body, err := s.readBody(ctx, w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &tooBig):
			return fail(http.StatusRequestEntityTooLarge, "body above %d bytes", MaxBody)
		case errors.As(err, &ne) && ne.Timeout():
			return fail(http.StatusRequestTimeout, "body not read within %v", s.readTimeout())
		}
		return fail(http.StatusBadRequest, "reading the body: %v", err)
	}
	if err := s.take(ctx); err != nil {
		return fail(http.StatusServiceUnavailable, "%v", err)
	}
	defer s.give()
	if fenced {
		if token < s.highest {
			s.Log.InfoContext(ctx, "refused", "method", r.Method, "path", p, "token", token, "highest", s.highest)
			return reply{code: http.StatusConflict, header: http.Header{HeaderHighest: {strconv.FormatInt(s.highest, 10)}},
				text: fmt.Sprintf("fencing token %d < highest accepted %d", token, s.highest)}
		}
		if token > s.highest {
			if err := s.persist(token); err != nil {
				// Not forwarded: the client sees an error, and nothing
				// happened at the store.
				return fail(http.StatusServiceUnavailable, "cannot keep the fence: %v", err)
			}
			s.highest = token
		}
	}
	return s.forward(ctx, r.Method, p, body)
}

// reset forgets every token, in a turn.
func (s *Server) reset(ctx context.Context) reply {
	if err := s.take(ctx); err != nil {
		return fail(http.StatusServiceUnavailable, "%v", err)
	}
	defer s.give()
	if err := s.persist(0); err != nil {
		return fail(http.StatusInternalServerError, "%v", err)
	}
	s.highest = 0
	s.Log.InfoContext(ctx, "fence reset")
	return reply{code: http.StatusNoContent}
}

// readBody reads r's body whole: at most MaxBody bytes, within the read
// timeout. It then lifts the connection's read deadline, which would
// otherwise cancel r's context while the request waits for its turn.
func (s *Server) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.readTimeout())); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.Log.DebugContext(ctx, "no read deadline", "err", err)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return nil, err
	}
	_ = rc.SetReadDeadline(time.Time{})
	return b, nil
}

// forward sends a request for the cleaned path p, below the backend's base
// path, to the store, and reads its answer whole (at most MaxBody). It runs
// to its end even if the client leaves (within BackendTimeout), so that no
// forward is still under way at the store when the next turn begins.
func (s *Server) forward(ctx context.Context, method, p string, body []byte) reply {
	u := *s.base
	u.Path = s.base.Path + p
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), method, u.String(), bytes.NewReader(body))
	if err != nil {
		return fail(http.StatusBadRequest, "%v", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fail(http.StatusBadGateway, "store: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	switch {
	case err != nil:
		return fail(http.StatusBadGateway, "store: %v", err)
	case len(b) > MaxBody:
		return fail(http.StatusBadGateway, "store: answer above %d bytes", MaxBody)
	}
	rp := reply{code: resp.StatusCode, header: http.Header{}, body: b}
	for _, h := range []string{"Content-Type", "ETag", "Last-Modified"} {
		if v := resp.Header.Get(h); v != "" {
			rp.header.Set(h, v)
		}
	}
	return rp
}
