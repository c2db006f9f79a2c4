package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// files is a store that cannot compare tokens: PUT and GET of files, in
// memory, over real HTTP.
type files struct {
	mu sync.Mutex
	m  map[string]string
}

func (f *files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		f.m[r.URL.Path] = string(b)
		w.WriteHeader(http.StatusCreated)
	case http.MethodGet:
		v, ok := f.m[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, v)
	}
}

func do(t *testing.T, url, method, body, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(HeaderToken, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// start runs a proxy with the given state file (volatile when empty) in
// front of store.
func start(t *testing.T, store http.Handler, state string) (*httptest.Server, *Server) {
	t.Helper()
	back := httptest.NewServer(store)
	t.Cleanup(back.Close)
	s := &Server{Backend: back.URL, State: state, Volatile: state == ""}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(s)
	t.Cleanup(front.Close)
	return front, s
}

// The proxy refuses a lower token on reads and writes, forwards the rest,
// and forwards requests without a token as they are.
func TestProxyFences(t *testing.T) {
	st := &files{m: map[string]string{}}
	front, _ := start(t, st, filepath.Join(t.TempDir(), "highest"))
	u := front.URL + "/run/list.json"
	if c, b := do(t, u, http.MethodPut, "[1]", "5"); c != http.StatusCreated {
		t.Fatalf("token 5 write: %d %s", c, b)
	}
	if c, b := do(t, u, http.MethodGet, "", "7"); c != http.StatusOK || b != "[1]" {
		t.Fatalf("token 7 read: %d %s", c, b)
	}
	if c, b := do(t, u, http.MethodPut, "[1 9]", "5"); c != http.StatusConflict || !strings.Contains(b, "5 < highest accepted 7") {
		t.Errorf("stale write after a newer read: %d %s, want 409", c, b)
	}
	if c, _ := do(t, u, http.MethodGet, "", "6"); c != http.StatusConflict {
		t.Errorf("stale read: %d, want 409", c)
	}
	if st.m["/run/list.json"] != "[1]" {
		t.Errorf("the store holds %q after refusals", st.m["/run/list.json"])
	}
	if c, _ := do(t, u, http.MethodPut, "[9]", ""); c != http.StatusCreated || st.m["/run/list.json"] != "[9]" {
		t.Errorf("a write without a token is forwarded: %d %q", c, st.m["/run/list.json"])
	}
	if c, _ := do(t, front.URL+"/_fence/reset", http.MethodPost, "", ""); c != http.StatusNoContent {
		t.Errorf("reset: %d", c)
	}
	if c, _ := do(t, u, http.MethodPut, "[2]", "1"); c != http.StatusCreated {
		t.Errorf("after a reset, token 1 writes: %d", c)
	}
	if c, _ := do(t, u, http.MethodDelete, "", ""); c != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d, want 405", c)
	}
	if c, _ := do(t, u, http.MethodPut, "[3]", "x"); c != http.StatusBadRequest {
		t.Errorf("bad token: %d, want 400", c)
	}
}

// A durable proxy keeps its highest token across a restart; a volatile one
// forgets it and lets a stale write through.
func TestProxyRestart(t *testing.T) {
	st := &files{m: map[string]string{}}
	state := filepath.Join(t.TempDir(), "highest")
	front, _ := start(t, st, state)
	u := "/run/list.json"
	if c, _ := do(t, front.URL+u, http.MethodPut, "[1 2]", "8"); c != http.StatusCreated {
		t.Fatal(c)
	}
	if b, err := os.ReadFile(state); err != nil || strings.TrimSpace(string(b)) != "8" {
		t.Fatalf("state file %q %v, want 8", b, err)
	}
	front.Close()
	again, _ := start(t, st, state)
	if c, _ := do(t, again.URL+u, http.MethodPut, "[1]", "7"); c != http.StatusConflict {
		t.Errorf("durable proxy after a restart: stale write got %d, want 409", c)
	}

	vol, _ := start(t, st, "")
	if c, _ := do(t, vol.URL+u, http.MethodPut, "[1 2]", "8"); c != http.StatusCreated {
		t.Fatal(c)
	}
	vol.Close()
	vol2, _ := start(t, st, "")
	if c, _ := do(t, vol2.URL+u, http.MethodPut, "[1]", "7"); c != http.StatusCreated {
		t.Errorf("volatile proxy after a restart: stale write got %d, want it let through (201)", c)
	}
}

// rawDo sends one request exactly as written (the request target is not
// cleaned or escaped by a client library) on a connection of its own, and
// returns the answer's status and body.
func rawDo(t *testing.T, addr, method, target string, header []string, body string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\nContent-Length: %d\r\n", method, target, len(body))
	for _, h := range header {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(rb))
}

// received is a request as the store saw it.
type received struct {
	Method, RequestURI, Path, EscapedPath, RawQuery, Body string
}

// recorder is a store that records every request it gets and answers a PUT
// with 201 and a GET with 200 "ok".
type recorder struct {
	mu  sync.Mutex
	got []received
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, received{r.Method, r.RequestURI, r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery, string(b)})
	rc.mu.Unlock()
	if r.Method == http.MethodPut {
		w.WriteHeader(http.StatusCreated)
		return
	}
	io.WriteString(w, "ok")
}

// take returns the requests received since the last take.
func (rc *recorder) take() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	got := rc.got
	rc.got = nil
	return got
}

// startBase runs a volatile proxy whose backend is store's URL + base.
func startBase(t *testing.T, store http.Handler, base string) (*httptest.Server, *Server) {
	t.Helper()
	back := httptest.NewServer(store)
	t.Cleanup(back.Close)
	s := &Server{Backend: back.URL + base, Volatile: true}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(s)
	t.Cleanup(front.Close)
	return front, s
}

// stall opens a connection to addr and sends the head of a PUT that
// announces a 100-byte body, then half of it, and nothing more; the
// connection is closed at the end of the test.
func stall(t *testing.T, addr, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: proxy\r\nContent-Length: 100\r\n%s: 3\r\n\r\n%s", target, HeaderToken, strings.Repeat("x", 50)); err != nil {
		t.Fatal(err)
	}
	return c
}

// activeProxy runs a volatile proxy in front of store, served as a bare
// http.Server without deadlines (as the CLI does), and reports on the
// channel each time one of its connections has read a request's head.
func activeProxy(t *testing.T, store http.Handler) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	back := httptest.NewServer(store)
	t.Cleanup(back.Close)
	s := &Server{Backend: back.URL, Volatile: true}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	active := make(chan struct{}, 16)
	front := httptest.NewUnstartedServer(s)
	front.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateActive {
			active <- struct{}{}
		}
	}
	front.Start()
	t.Cleanup(front.Close)
	return front, active
}

// serveProxy runs s (its Backend set to store's URL) with its own
// HTTPServer, and sends each change of state of its connections on the
// channel.
func serveProxy(t *testing.T, store http.Handler, s *Server) (*httptest.Server, <-chan http.ConnState) {
	t.Helper()
	back := httptest.NewServer(store)
	t.Cleanup(back.Close)
	s.Backend = back.URL
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	states := make(chan http.ConnState, 64)
	front := httptest.NewUnstartedServer(s)
	front.Config = s.HTTPServer()
	front.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		select {
		case states <- st:
		default:
		}
	}
	front.Start()
	t.Cleanup(front.Close)
	return front, states
}

// putWithin sends a PUT with token through the proxy and fails the test
// unless it is answered 201 within d.
func putWithin(t *testing.T, url, body, token string, d time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: d, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(HeaderToken, token)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("a PUT behind a stalled client: %v after %v", err, time.Since(start).Round(time.Millisecond))
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a PUT behind a stalled client: %d, want 201", resp.StatusCode)
	}
}

// A client that sent half its body and stalled (partitioned, paused) holds
// no one up: the proxy reads a body whole before it takes its turn, and
// another client's PUT goes through, long before the proxy's 30 s read
// timeout would free it (10 s allowed: a loaded machine; typically
// milliseconds).
func TestProxyStalledBodyBlocksNoOne(t *testing.T) {
	st := &files{m: map[string]string{}}
	front, active := activeProxy(t, st)
	stall(t, front.Listener.Addr().String(), "/run/list.json")
	select {
	case <-active:
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled PUT's head never reached the proxy")
	}
	time.Sleep(100 * time.Millisecond) // its handler runs
	putWithin(t, front.URL+"/run/list.json", "[7]", "4", 10*time.Second)
	st.mu.Lock()
	defer st.mu.Unlock()
	if got := st.m["/run/list.json"]; got != "[7]" {
		t.Errorf("the store holds %q, want [7] (and nothing of the stalled PUT)", got)
	}
}

// A client that asked for a big file and reads none of the reply holds no
// one up: the proxy writes a reply after its turn, and another client's PUT
// goes through, long before the 30 s write timeout would free it (10 s
// allowed: a loaded machine; typically milliseconds).
func TestProxyUnreadReplyBlocksNoOne(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 50<<20/16)
	st := &files{m: map[string]string{}}
	served := make(chan struct{}, 1)
	back := http.NewServeMux()
	back.Handle("/", st)
	back.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(big)
		served <- struct{}{}
	})
	front, active := activeProxy(t, back)
	c, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: proxy\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-active
	select { // the whole file left the store (it cannot while the proxy forwards it to c)
	case <-served:
	case <-time.After(3 * time.Second):
	}
	putWithin(t, front.URL+"/run/list.json", "[8]", "", 10*time.Second)
}

// Hostile paths: the proxy refuses, with 400, a path that leaves the base
// however it is spelt, and forwards the rest cleaned and escaped, so that the
// store writes the file the client named and no other.
func TestProxyPaths(t *testing.T) {
	rec := &recorder{}
	front, _ := startBase(t, rec, "/base")
	addr := front.Listener.Addr().String()
	for _, c := range []struct {
		target string
		code   int
		uri    string // what the store received; "" nothing
	}{
		{"/run/list.json", http.StatusCreated, "/base/run/list.json"},
		{"/../secret", http.StatusBadRequest, ""},
		{"/%2e%2e/secret", http.StatusBadRequest, ""},
		{"/..%2fsecret", http.StatusBadRequest, ""},
		{"/%2E%2E%2Fsecret", http.StatusBadRequest, ""},
		{"/a/../../secret", http.StatusBadRequest, ""},
		{"/a/%2e%2e/%2e%2e/secret", http.StatusBadRequest, ""},
		{"/..", http.StatusBadRequest, ""},
		{"/a%3Fq=1", http.StatusCreated, "/base/a%3Fq=1"},
		{"/a%23frag", http.StatusCreated, "/base/a%23frag"},
		{"/a?q=1", http.StatusCreated, "/base/a"},
		{"/a/../b", http.StatusCreated, "/base/b"},
		{"/a/./b//c", http.StatusCreated, "/base/a/b/c"},
		{"/a%20b", http.StatusCreated, "/base/a%20b"},
		{"/a%252e%252e/x", http.StatusCreated, "/base/a%252e%252e/x"},
		{"/a%00b", http.StatusBadRequest, ""},
	} {
		code, body := rawDo(t, addr, http.MethodPut, c.target, nil, "[1]")
		got := rec.take()
		switch {
		case code != c.code:
			t.Errorf("PUT %s: %d %s, want %d; the store got %+v", c.target, code, body, c.code, got)
		case c.uri == "" && len(got) != 0:
			t.Errorf("PUT %s: the store got %+v, want nothing", c.target, got)
		case c.uri != "" && (len(got) != 1 || got[0].RequestURI != c.uri || got[0].EscapedPath != c.uri || got[0].Body != "[1]"):
			t.Errorf("PUT %s: the store got %+v, want one PUT of %s", c.target, got, c.uri)
		}
	}
}

// Tokens: a Fencing-Token header that is present must be one decimal
// integer, without a sign, that fits in an int64; anything else (empty,
// blank, signed, hexadecimal, too big, repeated) is refused with 400 and
// never forwarded. Without the header the request is forwarded (fencing
// none).
func TestProxyTokens(t *testing.T) {
	rec := &recorder{}
	front, _ := startBase(t, rec, "")
	addr := front.Listener.Addr().String()
	for _, c := range []struct {
		header []string
		code   int
	}{
		{nil, http.StatusCreated},
		{[]string{HeaderToken + ": 5"}, http.StatusCreated},
		{[]string{HeaderToken + ":  6 "}, http.StatusCreated},
		{[]string{HeaderToken + ": 4"}, http.StatusConflict},
		{[]string{HeaderToken + ":"}, http.StatusBadRequest},
		{[]string{HeaderToken + ":   "}, http.StatusBadRequest},
		{[]string{HeaderToken + ":\t"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": +7"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": -1"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": -9223372036854775808"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 9223372036854775808"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 99999999999999999999999"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 0x10"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 1e3"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 7 8"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 7,8"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 7", HeaderToken + ": 8"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 7", HeaderToken + ":"}, http.StatusBadRequest},
		{[]string{HeaderToken + ": 9223372036854775807"}, http.StatusCreated},
	} {
		code, body := rawDo(t, addr, http.MethodPut, "/f", c.header, "[1]")
		got := rec.take()
		if code != c.code {
			t.Errorf("PUT with %q: %d %s, want %d", c.header, code, body, c.code)
		}
		if fwd := c.code/100 == 2; fwd != (len(got) == 1) || len(got) > 1 {
			t.Errorf("PUT with %q: the store got %+v, want it forwarded: %v", c.header, got, fwd)
		}
	}
}

// A state file that does not hold a highest token the proxy could have
// written (a negative or signed number, not a number) stops the proxy at
// start, with the file's name in the error.
func TestProxyBadStateFile(t *testing.T) {
	for _, content := range []string{"-3\n", "-1", "+4\n", "", "x\n", "99999999999999999999\n"} {
		state := filepath.Join(t.TempDir(), "highest")
		if err := os.WriteFile(state, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		s := &Server{Backend: "http://dav:80", State: state}
		if err := s.Load(); err == nil || !strings.Contains(err.Error(), state) {
			t.Errorf("state file %q: Load: %v (highest %d), want an error naming the file", content, err, s.highest)
		}
	}
	state := filepath.Join(t.TempDir(), "highest")
	if err := os.WriteFile(state, []byte("12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Server{Backend: "http://dav:80", State: state}
	if err := s.Load(); err != nil || s.highest != 12 {
		t.Errorf("state file 12: Load: %v, highest %d", err, s.highest)
	}
}

// The read and write deadlines end a stalled request: a body that stops
// coming is answered 408 and its connection closed after the read timeout;
// a reply nobody reads is given up after the write timeout (its connection
// closed).
func TestProxyDeadlines(t *testing.T) {
	t.Run("body", func(t *testing.T) {
		st := &files{m: map[string]string{}}
		front, _ := serveProxy(t, st, &Server{Volatile: true, ReadTimeout: 200 * time.Millisecond})
		c := stall(t, front.Listener.Addr().String(), "/run/list.json")
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		start := time.Now()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a stalled body: %v after %v, want 408", err, time.Since(start))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
			t.Errorf("a stalled body: %s (close %v), want 408 and the connection closed", resp.Status, resp.Close)
		}
		if len(st.m) != 0 {
			t.Errorf("the store got %v", st.m)
		}
	})
	t.Run("reply", func(t *testing.T) {
		big := bytes.Repeat([]byte("x"), 50<<20)
		front, states := serveProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(big) }),
			&Server{Volatile: true, WriteTimeout: 200 * time.Millisecond})
		c, err := net.Dial("tcp", front.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: proxy\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(5 * time.Second)
		for {
			select {
			case st := <-states:
				if st == http.StateClosed {
					return
				}
			case <-timeout:
				t.Fatal("the proxy still writes a reply nobody reads after 5 s")
			}
		}
	})
}

// Turns: forwards never overlap at the store, and a forward runs to its end
// even when its client leaves: the next request reaches the store only once
// the store answered the one before. A request whose client left before its
// turn came is not forwarded.
func TestProxyTurns(t *testing.T) {
	var (
		mu       sync.Mutex
		inFlight int
		overlap  bool
		order    []string
	)
	release := make(chan struct{})
	slowIn := make(chan struct{})
	store := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		overlap = overlap || inFlight > 1
		order = append(order, "start "+r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/slow" {
			close(slowIn)
			<-release
		} else {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		inFlight--
		order = append(order, "end "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	front, _ := startBase(t, store, "")
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the servers close, should the test stop early
	put := func(c *http.Client, p, token string) (int, error) {
		req, err := http.NewRequest(http.MethodPut, front.URL+p, strings.NewReader("x"))
		if err != nil {
			return 0, err
		}
		if token != "" {
			req.Header.Set(HeaderToken, token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	leaving := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	staying := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// /slow's client leaves while the store holds its forward; /gone's
	// client leaves while it waits for its turn; /next waits.
	if _, err := put(leaving, "/slow", ""); err == nil {
		t.Fatal("the client of /slow got an answer")
	}
	<-slowIn
	if _, err := put(leaving, "/gone", ""); err == nil {
		t.Fatal("/gone was answered while /slow had the turn")
	}
	next := make(chan error, 1)
	go func() {
		c, err := put(staying, "/next", "")
		if err == nil && c != http.StatusCreated {
			err = fmt.Errorf("status %d", c)
		}
		next <- err
	}()
	time.Sleep(200 * time.Millisecond) // /next waits for its turn
	free()
	if err := <-next; err != nil {
		t.Fatalf("/next: %v", err)
	}
	mu.Lock()
	if want := []string{"start /slow", "end /slow", "start /next", "end /next"}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("the store saw %q, want %q", order, want)
	}
	mu.Unlock()

	// Many clients at once, their tokens rising: never two forwards at the
	// store.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := put(staying, fmt.Sprintf("/f%d", i), strconv.Itoa(100+i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Errorf("two forwards at the store at once: %q", order)
	}
}

// FuzzProxyRequest sends the proxy one request (a method, a request target,
// Fencing-Token header lines, a body), parsed as its HTTP server parses it,
// with 5 the highest token it accepted. The proxy never panics; the store
// never receives a path outside the base, a path with a dot segment, a query,
// or a request whose token header was present but not one decimal token of
// at least 5; a path it receives is where the client pointed; a
// forwarded PUT carries the client's body; the highest token moves to an
// accepted token and nowhere else.
func FuzzProxyRequest(f *testing.F) {
	for _, s := range []struct {
		method, target, tokens string
		hasToken               bool
		body                   string
	}{
		{"PUT", "/run/list.json", "7", true, "[1]"},
		{"GET", "/run/list.json", "5", true, ""},
		{"PUT", "/run/list.json", "4", true, "[1]"},
		{"PUT", "/run/list.json", "", false, "[1]"},
		{"PUT", "/run/list.json", "", true, "[1]"},
		{"PUT", "/run/list.json", "   ", true, "[1]"},
		{"PUT", "/run/list.json", "+9", true, "[1]"},
		{"PUT", "/run/list.json", "-9", true, "[1]"},
		{"PUT", "/run/list.json", "9223372036854775808", true, "[1]"},
		{"PUT", "/run/list.json", "7\n8", true, "[1]"},
		{"PUT", "/run/list.json", "7\r\nFencing-Token: 1", true, "[1]"},
		{"PUT", "/../secret", "7", true, "x"},
		{"PUT", "/%2e%2e/secret", "", false, "x"},
		{"PUT", "/..%2fsecret", "7", true, "x"},
		{"GET", "/a/b/../../../secret", "", false, ""},
		{"PUT", "/a%3Fq=1", "7", true, "x"},
		{"PUT", "/a%23frag", "7", true, "x"},
		{"PUT", "/a%00b", "7", true, "x"},
		{"GET", "/", "", false, ""},
		{"GET", "/_fence", "", false, ""},
		{"POST", "/_fence/reset", "", false, ""},
		{"GET", "/x/../_fence", "", false, ""},
		{"DELETE", "/a", "7", true, ""},
		{"GET", "http://evil/../x", "", false, ""},
		{"GET", "*", "", false, ""},
		{"0", "/", "", true, ""},
		{"GET", "/_fence", "", true, ""},
	} {
		f.Add(s.method, s.target, s.tokens, s.hasToken, []byte(s.body))
	}
	rec := &recorder{}
	back := httptest.NewServer(rec)
	f.Cleanup(back.Close)
	f.Fuzz(func(t *testing.T, method, target, tokens string, hasToken bool, body []byte) {
		var raw strings.Builder
		fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: proxy\r\nContent-Length: %d\r\n", method, target, len(body))
		if hasToken {
			for _, v := range strings.Split(tokens, "\n") {
				raw.WriteString(HeaderToken + ": " + v + "\r\n")
			}
		}
		raw.WriteString("\r\n")
		raw.Write(body)
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw.String())))
		if err != nil {
			return // the server answers 400 itself
		}
		s := &Server{Backend: back.URL + "/base", Volatile: true}
		if err := s.Load(); err != nil {
			t.Fatal(err)
		}
		s.highest = 5
		rec.take()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		got := rec.take()

		vals, present := r.Header[HeaderToken]
		accepted := int64(-1) // the token the proxy may accept; -1 none
		if present && len(vals) == 1 && vals[0] != "" && strings.Trim(vals[0], "0123456789") == "" {
			if tk, err := strconv.ParseInt(vals[0], 10, 64); err == nil && tk >= 5 {
				accepted = tk
			}
		}
		cp := path.Clean("/" + r.URL.Path)
		data := (r.Method == http.MethodGet || r.Method == http.MethodPut) && strings.HasPrefix(r.URL.Path, "/") && !strings.HasPrefix(cp, pathFence)
		if data && present && strings.TrimSpace(strings.Join(vals, "")) == "" && w.Code != http.StatusBadRequest {
			t.Errorf("blank token %q: %d, want 400", vals, w.Code)
		}
		reset := r.Method == http.MethodPost && cp == pathReset
		if h := s.highest; h != 5 && h != accepted && !(reset && h == 0) {
			t.Errorf("token header %q moved the highest token to %d", vals, h)
		}
		if len(got) > 1 {
			t.Fatalf("one request, the store got %+v", got)
		}
		if len(got) == 0 {
			if w.Code/100 == 2 && cp != pathFence && cp != pathReset {
				t.Errorf("%s %s: %d but nothing forwarded", method, target, w.Code)
			}
			return
		}
		g := got[0]
		if present && accepted < 0 {
			t.Errorf("token header %q forwarded", vals)
		}
		if g.Method != r.Method || (g.Method == http.MethodPut && g.Body != string(body)) {
			t.Errorf("%s %s with %q: the store got %+v", method, target, body, g)
		}
		if !strings.HasPrefix(g.Path, "/base/") || g.RawQuery != "" || g.RequestURI != g.EscapedPath {
			t.Errorf("%s %s: the store got %+v, outside /base/ or with a query", method, target, g)
		}
		for _, seg := range strings.Split(g.Path, "/") {
			if seg == "." || seg == ".." {
				t.Errorf("%s %s: the store got the dot segment in %q", method, target, g.Path)
			}
		}
		want := "/base" + cp
		if cp != "/" && strings.HasSuffix(r.URL.Path, "/") {
			want += "/"
		}
		if g.Path != want {
			t.Errorf("%s %s: the store got %q, want %q", method, target, g.Path, want)
		}
	})
}
