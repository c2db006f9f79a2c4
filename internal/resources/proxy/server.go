package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
const (
	// HeaderToken carries a client's fencing token.
	HeaderToken = "Fencing-Token"
	// HeaderHighest carries the highest token, on a refusal.
	HeaderHighest = "Fencing-Highest"
	pathFence     = "/_fence"
	pathReset     = "/_fence/reset"
)

// Server is the fencing proxy: the only path to a store that cannot compare
// tokens. It keeps the highest token it accepted and serves one request at
// a time, so that a check and the forward that follows it are one step.
type Server struct {
	// Backend is the store's base URL (http://dav:80).
	Backend string
	// State is the file that keeps the highest token; each raise is
	// written and fsynced there before the request is forwarded, and read
	// back at start. Empty with Volatile.
	State string
	// Volatile keeps the highest token in memory only: a restarted proxy
	// has forgotten it (for tests that show why it must not).
	Volatile bool
	Log      *slog.Logger

	mu      sync.Mutex
	highest int64
	client  *http.Client
}

// Load reads the highest token from the state file (none yet: 0).
func (s *Server) Load() error {
	s.client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
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
	h, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("proxy: state file %s: %w", s.State, err)
	}
	s.highest = h
	return nil
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

// ServeHTTP serves the proxy's interface.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.URL.Path == pathFence && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"highest": s.highest, "volatile": s.Volatile})
		return
	case r.URL.Path == pathReset && r.Method == http.MethodPost:
		if err := s.persist(0); err != nil {
			http.Error(w, "proxy: "+err.Error(), http.StatusInternalServerError)
			return
		}
		s.highest = 0
		s.Log.Info("fence reset")
		w.WriteHeader(http.StatusNoContent)
		return
	case strings.HasPrefix(r.URL.Path, pathFence):
		http.Error(w, "proxy: unknown fence request", http.StatusNotFound)
		return
	case r.Method != http.MethodGet && r.Method != http.MethodPut:
		http.Error(w, "proxy: GET and PUT only", http.StatusMethodNotAllowed)
		return
	}
	if t := r.Header.Get(HeaderToken); t != "" {
		token, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			http.Error(w, "proxy: bad "+HeaderToken+": "+t, http.StatusBadRequest)
			return
		}
		if token < s.highest {
			w.Header().Set(HeaderHighest, strconv.FormatInt(s.highest, 10))
			http.Error(w, fmt.Sprintf("fencing token %d < highest accepted %d", token, s.highest), http.StatusConflict)
			s.Log.Info("refused", "method", r.Method, "path", r.URL.Path, "token", token, "highest", s.highest)
			return
		}
		if token > s.highest {
			if err := s.persist(token); err != nil {
				// Not forwarded: the client sees an error, and nothing
				// happened at the store.
				http.Error(w, "proxy: cannot keep the fence: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			s.highest = token
		}
	}
	s.forward(w, r)
}

// forward passes the request to the store and its answer back.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimRight(s.Backend, "/")+r.URL.Path, r.Body)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	req.ContentLength = r.ContentLength
	resp, err := s.client.Do(req)
	if err != nil {
		http.Error(w, "proxy: store: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "ETag", "Last-Modified"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
