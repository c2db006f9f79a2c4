package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
