// Command enginewatch watches the Docker Engine while CI's tests run and
// says loudly when it hangs. Docker 20.10 can deadlock its network
// controller (CONTRIBUTING.md, "Docker 20.10's network deadlock"): from
// then on every network call and every container removal hangs while
// `docker info` still answers, and a test run waits until its timeout.
//
// Every -every it asks the Engine for its networks (GET /networks on the
// socket of DOCKER_HOST, or /var/run/docker.sock). A call that gets no
// answer within -timeout is a hang: it prints a banner to stderr and exits
// 3, and scripts/test.sh stops the tests, restarts the Engine it started
// (scripts/docker-up.sh --restart) and runs again the packages that had
// not finished. Any HTTP answer, an error status included, is an Engine
// that answers. It exits 2 when it cannot watch (DOCKER_HOST is not a unix
// socket), and never exits on its own otherwise.
//
//	enginewatch [-every 15s] [-timeout 60s]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// ErrHung is a call the Engine did not answer within the timeout.
var ErrHung = errors.New("the Docker Engine did not answer")

func main() {
	every := flag.Duration("every", 15*time.Second, "how often to ask the Engine")
	timeout := flag.Duration("timeout", 60*time.Second, "how long one call may go unanswered before the Engine is called hung")
	flag.Parse()
	sock, err := socketPath(os.Getenv("DOCKER_HOST"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "enginewatch:", err)
		os.Exit(2)
	}
	err = Watch(context.Background(), sock, *every, *timeout)
	fmt.Fprint(os.Stderr, banner(err))
	os.Exit(3)
}

// socketPath is the Engine's unix socket named by DOCKER_HOST ("" for the
// default).
func socketPath(host string) (string, error) {
	if host == "" {
		return "/var/run/docker.sock", nil
	}
	if p, ok := strings.CutPrefix(host, "unix://"); ok && p != "" {
		return p, nil
	}
	return "", fmt.Errorf("DOCKER_HOST=%q is not a unix socket: not watched", host)
}

// Watch asks the Engine at the unix socket sock for its networks every
// every, and returns an error wrapping ErrHung at the first call that gets
// no answer within timeout, or ctx's error when ctx ends. A refused
// connection (an Engine restarting) is no hang: the next call asks again.
func Watch(ctx context.Context, sock string, every, timeout time.Duration) error {
	client := unixClient(sock)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := ask(ctx, client, timeout); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// unixClient is an HTTP client that reaches the unix socket sock, and only
// it, whatever a request's host.
func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}}
}

// ask makes one network call; it returns an error only for a hang (or
// ctx's end).
func ask(ctx context.Context, client *http.Client, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, "http://docker/networks", nil)
	if err != nil {
		return err
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case cctx.Err() != nil:
		return fmt.Errorf("%w: GET /networks unanswered after %s", ErrHung, time.Since(start).Round(time.Second))
	}
	return nil // answered, or refused at once: not a hang
}

// banner is what a hang prints: loud, so that a CI log read from its end
// says why the tests were run again.
func banner(err error) string {
	line := strings.Repeat("!", 72)
	return fmt.Sprintf("%s\n!!! ENGINE HUNG: %v\n!!! (Docker's network deadlock, CONTRIBUTING.md): the tests in flight are stopped,\n!!! the Engine restarted, and the packages that had not finished run again.\n%s\n", line, err, line)
}
