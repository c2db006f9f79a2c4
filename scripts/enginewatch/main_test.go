package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeEngine listens on a unix socket in a short temporary path; hung
// makes it accept connections and never answer, else it answers every
// request with an empty network list.
func fakeEngine(t *testing.T, hung bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fc-watch-") // a socket's path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if !hung {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/networks" {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte("[]"))
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return sock
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
	return sock
}

// A hung socket is called hung after the timeout; an answering one never.
func TestWatch(t *testing.T) {
	err := Watch(context.Background(), fakeEngine(t, true), 10*time.Millisecond, 200*time.Millisecond)
	if !errors.Is(err, ErrHung) || !strings.Contains(err.Error(), "GET /networks unanswered") {
		t.Fatalf("a hung engine: %v, want ErrHung", err)
	}

	// An answering engine is never hung (counted in calls, not seconds);
	// and Watch on it runs until its context ends.
	sock := fakeEngine(t, false)
	for i := range 20 {
		if err := ask(context.Background(), unixClient(sock), time.Minute); err != nil {
			t.Fatalf("call %d to an answering engine: %v", i, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Watch(ctx, sock, time.Millisecond, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Watch with an ended context: %v", err)
	}

	// A socket nobody listens on (an Engine restarting) is no hang.
	gone := filepath.Join(t.TempDir(), "none.sock")
	if err := ask(context.Background(), unixClient(gone), time.Minute); err != nil {
		t.Errorf("%s: %v, want no hang", gone, err)
	}
}

// The command, as scripts/test.sh runs it: exit 3 and the banner on a hung
// socket; exit 2 for a DOCKER_HOST it cannot watch.
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "enginewatch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-every", "10ms", "-timeout", "300ms")
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+fakeEngine(t, true))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "!!! ENGINE HUNG: the Docker Engine did not answer: GET /networks unanswered") {
		t.Errorf("hung: %v\n%s", err, out)
	}
	cmd = exec.Command(bin)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=tcp://127.0.0.1:2375")
	out, err = cmd.CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not a unix socket") {
		t.Errorf("tcp: %v\n%s", err, out)
	}
}
