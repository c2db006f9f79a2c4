package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/internal/report"
)

// cmdServe serves a results directory read-only: the index of its runs and
// their files, until ctx ends (Ctrl-C).
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := verbFlags("serve", stderr, "Serves the index of the runs under RESULTS_DIR (default ./results) and their reports and files,\n"+
		"read-only (GET and HEAD), nothing outside it. Ctrl-C stops.\n\n")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (loopback unless you say otherwise)")
	if err := parseVerb(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: serve takes at most one RESULTS_DIR", errUsage)
	}
	dir := "results"
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s is not a results directory", errUsage, dir)
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("%w: --addr %q: %w", errUsage, *addr, err)
	}
	if _, err := net.LookupPort("tcp", port); port != "" && err != nil {
		return fmt.Errorf("%w: --addr %q: port %q: want a number from 0 to 65535 or a service name: %w", errUsage, *addr, port, err)
	}
	srv, err := report.NewServer(dir)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "fencecheck serve: %s is not a loopback address: whoever reaches it can read these runs\n", *addr)
	}
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(stdout, "fencecheck: serving %s at http://%s/ (read-only; Ctrl-C stops)\n", abs, ln.Addr())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	err = hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	return err
}
