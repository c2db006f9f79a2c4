package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/fencecheck/fencecheck/internal/resources/proxy"
)

// cmdProxy is the fencing proxy of the "proxy" resource, in its container:
// it serves until ctx ends.
func cmdProxy(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlags("proxy", stderr)
	listen := fs.String("listen", fmt.Sprintf(":%d", proxy.ProxyPort), "address to serve clients on")
	backend := fs.String("backend", "", "base URL of the store behind the proxy (http://dav:80)")
	state := fs.String("state", proxy.StateFile, "file that keeps the highest accepted token (fsynced before each forward)")
	volatile := fs.Bool("volatile", false, "keep the highest token in memory only: a restart forgets it (unsafe; for tests)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fencecheck proxy --backend URL [flags]\n\n"+
			"A fencing proxy in front of a store that cannot compare tokens: a GET or PUT with a lower\n"+
			"Fencing-Token than the highest it accepted is refused with 409 Conflict.\n\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *backend == "" {
		return fmt.Errorf("%w: --backend is required", errUsage)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	s := &proxy.Server{Backend: *backend, State: *state, Volatile: *volatile, Log: log}
	if *volatile {
		s.State = ""
	}
	if err := s.Load(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := s.HTTPServer() // with its deadlines: no client can hold it up
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("proxy listening", "addr", ln.Addr().String(), "backend", *backend, "volatile", *volatile)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
