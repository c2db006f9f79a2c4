package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/fencecheck/fencecheck/internal/harness"
)

// cmdWorker is the lock client process inside a worker container; the
// harness starts and drives it.
func cmdWorker(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlags("worker", stderr)
	listen := fs.String("listen", fmt.Sprintf(":%d", harness.WorkerPort), "address to serve the harness on")
	if err := parse(fs, args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	log.Info("worker listening", "addr", ln.Addr().String())
	return harness.ServeWorker(ctx, ln, catalog, log)
}
