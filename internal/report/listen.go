package report

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

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
)

// Serve serves the runs' index under dir (a results directory) and their
// reports and files, read-only, at addr until ctx ends, saying on stdout
// where and on stderr when addr is not a loopback address. A dir that is
// not a directory or an addr that does not parse is an error that wraps
// cmdline.ErrUsage.
func Serve(ctx context.Context, dir, addr string, stdout, stderr io.Writer) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s is not a results directory", cmdline.ErrUsage, dir)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: --addr %q: %w", cmdline.ErrUsage, addr, err)
	}
	if _, err := net.LookupPort("tcp", port); port != "" && err != nil {
		return fmt.Errorf("%w: --addr %q: port %q: want a number from 0 to 65535 or a service name: %w", cmdline.ErrUsage, addr, port, err)
	}
	srv, err := NewServer(dir)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "fencecheck serve: %s is not a loopback address: whoever reaches it can read these runs\n", addr)
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
