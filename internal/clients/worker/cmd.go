package worker

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/resources/proxy"
	"github.com/fencecheck/fencecheck/targets"
)

// The commands a worker binary runs in its container, by their first
// argument. The worker image holds the binary at /usr/local/bin/fencecheck
// and the harness runs it as `fencecheck worker|proxy|client-probe ...`,
// whether it is the small worker binary (cmd/fencecheck-worker) or, as a
// fallback, fencecheck itself (whose command line has the same commands).
const (
	CmdWorkerName      = "worker"
	CmdProxyName       = "proxy"
	CmdClientProbeName = "client-probe"
)

// StepPrefix marks a conformance step in client-probe's output (its log
// lines are mixed in); EndPrefix its last line, with the number of steps
// it reported, so that a report cut short is never read as a shorter one.
const (
	StepPrefix = "STEP "
	EndPrefix  = "END "
)

// Main is the worker binary's command line: it runs the command in args
// (worker, proxy or client-probe) with the parts cat names, and returns
// its exit code: 0 when the command ended well (a server when its context
// ends: SIGINT or SIGTERM), 254 for bad arguments, 255 otherwise.
func Main(args []string, stdout, stderr io.Writer, cat Catalog) int {
	const usage = "Usage: fencecheck-worker worker|proxy|client-probe [flags]\n\n" +
		"The binary of fencecheck's worker containers; fencecheck runs it, not you.\n"
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 254
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case CmdWorkerName, CmdProxyName, CmdClientProbeName:
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "fencecheck-worker: unknown command %q\n\n%s", args[0], usage)
		return 254
	}
	err := Command(ctx, args[0], args[1:], stdout, stderr, cat)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, cmdline.ErrUsage), errors.Is(err, targets.ErrBadConfig):
		fmt.Fprintf(stderr, "fencecheck-worker %s: %v\n", args[0], err)
		return 254
	}
	fmt.Fprintf(stderr, "fencecheck-worker %s: %v\n", args[0], err)
	return 255
}

// Command runs the worker command name (CmdWorkerName, CmdProxyName or
// CmdClientProbeName) with its arguments; another name is a bug.
func Command(ctx context.Context, name string, args []string, stdout, stderr io.Writer, cat Catalog) error {
	switch name {
	case CmdWorkerName:
		return CmdWorker(ctx, args, stderr, cat)
	case CmdProxyName:
		return CmdProxy(ctx, args, stderr)
	case CmdClientProbeName:
		return CmdClientProbe(ctx, args, stdout, stderr)
	}
	panic("worker: no command " + name)
}

// CmdWorker is the lock client process inside a worker container; the
// harness starts and drives it. It serves until ctx ends.
func CmdWorker(ctx context.Context, args []string, stderr io.Writer, cat Catalog) error {
	fs := cmdline.NewFlags(CmdWorkerName, stderr)
	listen := fs.String("listen", fmt.Sprintf(":%d", Port), "address to serve the harness on")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	log.Info("worker listening", "addr", ln.Addr().String(), "protocol", Protocol)
	return Serve(ctx, ln, cat, log)
}

// The proxy command's usage line, one-line description and example, as
// fencecheck's usage and proxy -h print them.
const (
	ProxyArgs    = "--backend URL [flags]"
	ProxyDesc    = "the fencing proxy of the \"proxy\" resource (runs in its container)"
	ProxyExample = "fencecheck proxy --backend http://dav:80 --listen :8081"
)

// CmdProxy is the fencing proxy of the "proxy" resource, in its container:
// it serves until ctx ends.
func CmdProxy(ctx context.Context, args []string, stderr io.Writer) error {
	fs := cmdline.NewFlags(CmdProxyName, stderr)
	listen := fs.String("listen", fmt.Sprintf(":%d", proxy.ProxyPort), "address to serve clients on")
	backend := fs.String("backend", "", "base URL of the store behind the proxy (http://dav:80)")
	state := fs.String("state", proxy.StateFile, "file that keeps the highest accepted token (fsynced before each forward)")
	volatile := fs.Bool("volatile", false, "keep the highest token in memory only: a restart forgets it (unsafe; for tests)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fencecheck proxy %s\n\n%s%s.\n\n"+
			"A fencing proxy in front of a store that cannot compare tokens: a GET or PUT with a lower\n"+
			"Fencing-Token than the highest it accepted is refused with 409 Conflict.\n\n"+
			"Example:\n  %s\n\nFlags:\n", ProxyArgs, strings.ToUpper(ProxyDesc[:1]), ProxyDesc[1:], ProxyExample)
		fs.PrintDefaults()
	}
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", cmdline.ErrUsage, fs.Arg(0))
	}
	if *backend == "" {
		return fmt.Errorf("%w: --backend is required", cmdline.ErrUsage)
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

// CmdClientProbe runs in a worker container: the conformance steps against
// the program, each printed as a line "STEP {json}" as it ends, then
// "END n".
func CmdClientProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cmdline.NewFlags(CmdClientProbeName, stderr)
	progJSON := fs.String("program", "", "the program (JSON)")
	initJSON := fs.String("init", "", "the init request (JSON)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on each reply")
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	var prog clientproto.Program
	var init clientproto.Init
	if err := json.Unmarshal([]byte(*progJSON), &prog); err != nil {
		return fmt.Errorf("%w: --program: %v", cmdline.ErrUsage, err)
	}
	if err := json.Unmarshal([]byte(*initJSON), &init); err != nil {
		return fmt.Errorf("%w: --init: %v", cmdline.ErrUsage, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	steps := clientproto.Conform(ctx, prog, init, clientproto.ConformOptions{Timeout: *timeout}, log, func(s clientproto.Step) {
		b, _ := json.Marshal(s)
		fmt.Fprintf(stdout, "%s%s\n", StepPrefix, b)
	})
	fmt.Fprintf(stdout, "%s%d\n", EndPrefix, len(steps))
	return nil
}
