// Package fakeengine is a runtime.Engine whose nodes are not containers,
// for tests that run the harness without Docker. A run's nodes live in the
// test's own process, each at a loopback address of its own: 127.X.Y.N, in
// a /24 drawn for each run (on Linux the whole of 127.0.0.0/8 is the
// host's), numbered as runtime's contract numbers a run's network
// (servers from .10, resources from .60, workers from .100, in the order
// started):
//
//   - a server or resource node runs what Engine.Server starts for it at
//     its address (Redis: an in-memory Redis, for the redis target);
//   - a worker node runs the worker, worker.CmdWorker, with Engine.Catalog,
//     its `--listen :PORT` rewritten to the node's own address, so that
//     several workers do not collide on the port.
//
// Nothing is built and nothing is pulled: Inspect answers for every image
// reference it is asked about (and Inspected lists them), and what would
// make, move or read an image is refused. What needs a real container is
// refused with an error that wraps errors.ErrUnsupported and says why: a
// network helper (NetExec, WarmHelpers: the nodes share the host's network
// namespace, so no network fault can apply), a command in a node (Exec),
// stopping, killing or restarting a node, its pid, a CPU cap or its CPU
// time, and copying files in or out. SIGCONT is accepted and does nothing
// (nothing can be stopped). So a run on the fake has no faults but
// nemesis none; what it exercises is the harness itself: its stages, its
// workers' protocol, the history, the checkers and the results.
//
// Started, Removed and Running say what the engine's runs started and
// removed, for a test to assert teardown; Closed whether its user closed
// it.
package fakeengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
)

// ErrUnsupported is wrapped by every refusal of what needs a container.
var ErrUnsupported = fmt.Errorf("fakeengine: %w", errors.ErrUnsupported)

// unsupported is a refusal of what, for why.
func unsupported(what, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrUnsupported, what, why)
}

// notContainer is why most of a node's refusals are refusals.
const notContainer = "the fake's nodes are not containers but servers and workers in the test's process"

// Server starts the process of a server or resource node: at host ip (the
// node's own loopback address), on the port its spec's command names. It
// writes what the node would log to log, and returns how to stop the
// process; stop returns once the process is gone.
type Server func(ip string, spec runtime.ContainerSpec, log io.Writer) (stop func(), err error)

// Engine is the fake runtime.Engine. Make one with New.
type Engine struct {
	// Catalog is what the in-process workers find the run's parts in (a
	// worker binary's: tables.Catalog(tables.Targets)).
	Catalog worker.Catalog
	// Server starts server and resource nodes; nil refuses them.
	Server Server

	mu        sync.Mutex
	inspected []string
	runs      []*run
	started   []string
	removed   []string
	closed    bool
}

var _ runtime.Engine = (*Engine)(nil)

// New is an engine whose server and resource nodes server starts (nil:
// none can start), and whose workers know the built-in targets, resources
// and workloads.
func New(server Server) *Engine {
	return &Engine{Catalog: tables.Catalog(tables.Targets), Server: server}
}

// Inspected are the image references Inspect was asked about, in order.
func (e *Engine) Inspected() []string { return e.list(&e.inspected) }

// Started are the nodes started, as RUN/NAME, in the order started.
func (e *Engine) Started() []string { return e.list(&e.started) }

// Removed are the nodes removed (Teardown, Clean), as RUN/NAME, in the
// order removed.
func (e *Engine) Removed() []string { return e.list(&e.removed) }

// list is a copy of one of the engine's lists.
func (e *Engine) list(l *[]string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(*l)
}

// Running are the nodes started and not removed, as RUN/NAME.
func (e *Engine) Running() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, s := range e.started {
		if !slices.Contains(e.removed, s) {
			out = append(out, s)
		}
	}
	return out
}

// Closed reports whether Close was called.
func (e *Engine) Closed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// NewRun makes run runID's network: a /24 of loopback addresses, drawn
// at random so that runs at once, and other tests' servers on 127.0.0.1,
// are apart. The helper image is recorded and never run.
func (e *Engine) NewRun(_ context.Context, runID runtime.RunID, helperImage string) (runtime.Run, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, fmt.Errorf("fakeengine: NewRun %s: the engine is closed", runID)
	}
	for _, r := range e.runs {
		if r.id == runID && !r.gone {
			return nil, fmt.Errorf("fakeengine: NewRun %s: the run exists", runID)
		}
	}
	r := &run{e: e, id: runID, helper: helperImage,
		net:  fmt.Sprintf("127.%d.%d.", 1+rand.IntN(254), rand.IntN(256)),
		next: map[string]int{runtime.RoleServer: 10, runtime.RoleResource: 60, runtime.RoleWorker: 100}}
	e.runs = append(e.runs, r)
	return r, nil
}

// Clean removes every run's nodes.
func (e *Engine) Clean(context.Context) (runtime.Cleaned, error) { return e.clean("") }

// CleanRun removes run runID's nodes.
func (e *Engine) CleanRun(_ context.Context, runID runtime.RunID) (runtime.Cleaned, error) {
	return e.clean(runID)
}

func (e *Engine) clean(runID runtime.RunID) (runtime.Cleaned, error) {
	e.mu.Lock()
	runs := slices.Clone(e.runs)
	e.mu.Unlock()
	var all runtime.Cleaned
	var errs []error
	for _, r := range runs {
		if runID == "" || r.id == runID {
			c, err := r.Teardown()
			all.Containers += c.Containers
			all.Networks += c.Networks
			errs = append(errs, err)
		}
	}
	return all, errors.Join(errs...)
}

// Close marks the engine closed: NewRun refuses from then on. Nodes still
// running stay (as containers outlive a closed connection); Clean removes
// them.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}

// Inspect answers for any reference, with an id made of it, and records
// the question.
func (e *Engine) Inspect(_ context.Context, ref string) (runtime.ImageInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inspected = append(e.inspected, ref)
	return runtime.ImageInfo{ID: "fake:" + ref}, nil
}

// List lists no image.
func (e *Engine) List(context.Context, string) ([]runtime.ImageSummary, error) { return nil, nil }

const noImages = "the fake keeps no image: Inspect answers for any reference, and nothing is built"

// Build is refused.
func (e *Engine) Build(_ context.Context, _ io.Reader, tag string, _ map[string]string) error {
	return unsupported("Build "+tag, noImages)
}

// Import is refused.
func (e *Engine) Import(_ context.Context, _ io.Reader, tag string, _ []string, _ string) error {
	return unsupported("Import "+tag, noImages)
}

// Remove is refused.
func (e *Engine) Remove(_ context.Context, ref string) error {
	return unsupported("Remove "+ref, noImages)
}

// Save is refused.
func (e *Engine) Save(_ context.Context, ref string, _ io.Writer) error {
	return unsupported("Save "+ref, noImages)
}

// Load is refused.
func (e *Engine) Load(context.Context, io.Reader) ([]string, error) {
	return nil, unsupported("Load", noImages)
}

// ReadFile is refused.
func (e *Engine) ReadFile(_ context.Context, image, path string) ([]byte, error) {
	return nil, unsupported("ReadFile "+image+":"+path, noImages)
}

// run is a runtime.Run of the fake engine.
type run struct {
	e      *Engine
	id     runtime.RunID
	helper string
	net    string // "127.X.Y."

	mu    sync.Mutex
	next  map[string]int // the next host number of each role
	nodes []*node
	gone  bool
}

// node is a started node: its container, its process and its log.
type node struct {
	ct   *runtime.Container
	log  *nodeLog
	stop func() error // nil once stopped
}

// StartAll starts the nodes one after another (a server before the
// worker that needs it: the harness starts them in two calls anyway), and
// returns them in the order given. A node that fails to start is not the
// run's; those started before it are.
func (r *run) StartAll(_ context.Context, specs []runtime.ContainerSpec) ([]*runtime.Container, error) {
	var out []*runtime.Container
	for _, s := range specs {
		ct, err := r.start(s)
		if err != nil {
			return nil, fmt.Errorf("fakeengine: start %s: %w", s.Name, err)
		}
		out = append(out, ct)
	}
	return out, nil
}

// start starts one node at the next address of its role.
func (r *run) start(s runtime.ContainerSpec) (*runtime.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.gone:
		return nil, errors.New("the run was torn down")
	case s.Name == "":
		return nil, errors.New("a node needs a name")
	case slices.ContainsFunc(r.nodes, func(n *node) bool { return n.ct.Name == s.Name }):
		return nil, errors.New("a node of that name exists in the run")
	case s.HostNetwork:
		return nil, unsupported("HostNetwork", "every fake node is in the host's network namespace, at an address of its own")
	case len(s.Binds) > 0:
		return nil, unsupported("Binds", "a fake node has no file system to mount a directory in")
	}
	host, ok := r.next[s.Role]
	if !ok {
		return nil, fmt.Errorf("unknown role %q", s.Role)
	}
	ct := &runtime.Container{ID: fmt.Sprintf("fake-%s-%s", r.id, s.Name), Name: s.Name, Role: s.Role, IP: r.net + fmt.Sprint(host)}
	n := &node{ct: ct, log: &nodeLog{}}
	var err error
	if s.Role == runtime.RoleWorker {
		n.stop, err = r.e.startWorker(ct.IP, s, n.log)
	} else if r.e.Server == nil {
		err = unsupported(s.Role+" node", "the engine was given no Server to start")
	} else {
		var stop func()
		if stop, err = r.e.Server(ct.IP, s, n.log); err == nil {
			n.stop = func() error { stop(); return nil }
		}
	}
	if err != nil {
		return nil, err
	}
	r.next[s.Role] = host + 1
	r.nodes = append(r.nodes, n)
	r.e.mu.Lock()
	r.e.started = append(r.e.started, r.id.String()+"/"+s.Name)
	r.e.mu.Unlock()
	return ct, nil
}

// workerStopWait bounds the wait for a worker to stop: it ends once the
// harness's connection to it is closed, which the harness does before
// teardown.
const workerStopWait = 10 * time.Second

// startWorker runs the worker command of s (`... worker --listen :PORT`)
// in this process, listening at ip instead of every address.
func (e *Engine) startWorker(ip string, s runtime.ContainerSpec, log io.Writer) (stop func() error, err error) {
	if len(s.Cmd) < 2 || s.Cmd[1] != worker.CmdWorkerName {
		return nil, unsupported(fmt.Sprintf("worker command %q", s.Cmd), "only the worker ("+worker.CmdWorkerName+") runs in the test's process")
	}
	args := slices.Clone(s.Cmd[2:])
	listen := false
	for i := range args {
		if args[i] == "--listen" && i+1 < len(args) && strings.HasPrefix(args[i+1], ":") {
			args[i+1] = ip + args[i+1]
			listen = true
		}
	}
	if !listen {
		args = append(args, "--listen", net.JoinHostPort(ip, fmt.Sprint(worker.Port)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := worker.CmdWorker(ctx, args, log, e.Catalog); err != nil {
			fmt.Fprintf(log, "fakeengine: the worker ended: %v\n", err)
		}
	}()
	return func() error {
		cancel()
		select {
		case <-done:
			return nil
		case <-time.After(workerStopWait):
			return fmt.Errorf("fakeengine: worker at %s did not stop within %s: a harness connection to it is still open", ip, workerStopWait)
		}
	}, nil
}

// Containers returns the nodes started and not removed.
func (r *run) Containers() []*runtime.Container {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*runtime.Container, len(r.nodes))
	for i, n := range r.nodes {
		out[i] = n.ct
	}
	return out
}

// Teardown stops every node and removes it and the run's network; a run
// torn down already has nothing left to remove.
func (r *run) Teardown() (runtime.Cleaned, error) {
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return runtime.Cleaned{}, nil
	}
	r.gone = true
	nodes := r.nodes
	r.nodes = nil
	r.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		if n.stop != nil {
			errs = append(errs, n.stop())
		}
		r.e.mu.Lock()
		r.e.removed = append(r.e.removed, r.id.String()+"/"+n.ct.Name)
		r.e.mu.Unlock()
	}
	return runtime.Cleaned{Containers: len(nodes), Networks: 1}, errors.Join(errs...)
}

// node returns the run's node of c.
func (r *run) node(c *runtime.Container) (*node, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.nodes {
		if n.ct == c || n.ct.ID == c.ID {
			return n, nil
		}
	}
	return nil, fmt.Errorf("fakeengine: no node %s in run %s", c.Name, r.id)
}

// CopyOut is refused.
func (r *run) CopyOut(_ context.Context, image string, _ []string, dir, _ string) error {
	return unsupported("CopyOut "+image+":"+dir, noImages)
}

// CopyFrom is refused.
func (r *run) CopyFrom(_ context.Context, c *runtime.Container, dir, _ string, _ *runtime.Budget) (runtime.Copied, error) {
	return runtime.Copied{}, unsupported("CopyFrom "+c.Name+":"+dir, notContainer)
}

// Signal accepts SIGCONT, which does nothing: no fake node can be
// stopped. Every other signal is refused.
func (r *run) Signal(_ context.Context, c *runtime.Container, sig string) error {
	if _, err := r.node(c); err != nil {
		return err
	}
	if sig == "SIGCONT" {
		return nil
	}
	return unsupported(sig+" to "+c.Name, notContainer+": none is signalled")
}

// Kill is refused.
func (r *run) Kill(_ context.Context, c *runtime.Container) error {
	return unsupported("Kill "+c.Name, notContainer)
}

// Restart is refused.
func (r *run) Restart(_ context.Context, c *runtime.Container) error {
	return unsupported("Restart "+c.Name, notContainer)
}

// Pid is refused: the node's process is the test's own.
func (r *run) Pid(_ context.Context, c *runtime.Container) (int, error) {
	return 0, unsupported("Pid of "+c.Name, notContainer+": it has no pid of its own")
}

// ProcessState is "R" for a node of the run (it runs, and nothing can stop
// it), else an error.
func (r *run) ProcessState(_ context.Context, c *runtime.Container) (string, error) {
	if _, err := r.node(c); err != nil {
		return "", err
	}
	return "R", nil
}

// LimitCPU is refused.
func (r *run) LimitCPU(_ context.Context, c *runtime.Container, _ float64) error {
	return unsupported("LimitCPU of "+c.Name, notContainer)
}

// CPUTime is refused.
func (r *run) CPUTime(_ context.Context, c *runtime.Container) (time.Duration, error) {
	return 0, unsupported("CPUTime of "+c.Name, notContainer)
}

// Exec is refused.
func (r *run) Exec(_ context.Context, c *runtime.Container, cmd ...string) (string, error) {
	return "", unsupported(fmt.Sprintf("Exec %q in %s", cmd, c.Name), notContainer+": there is no shell to run a command in")
}

// noNet is why network helpers are refused.
const noNet = "the fake's nodes share the host's network namespace: no network helper, so no network fault can apply"

// NetExec is refused.
func (r *run) NetExec(_ context.Context, c *runtime.Container, cmd ...string) (string, error) {
	return "", unsupported(fmt.Sprintf("NetExec %q for %s", cmd, c.Name), noNet)
}

// WarmHelpers warms none: it is refused for any node.
func (r *run) WarmHelpers(_ context.Context, cs []*runtime.Container) error {
	if len(cs) == 0 {
		return nil
	}
	return unsupported("WarmHelpers", noNet)
}

// SaveLogs writes the node's log to path, each line prefixed by its time.
func (r *run) SaveLogs(_ context.Context, c *runtime.Container, path string) error {
	n, err := r.node(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lines := n.log.since(time.Time{})
	return os.WriteFile(path, []byte(strings.Join(append(lines, ""), "\n")), 0o644)
}

// LogLines returns the node's log lines written since the given time,
// each prefixed by its time.
func (r *run) LogLines(_ context.Context, c *runtime.Container, since time.Time) ([]string, error) {
	n, err := r.node(c)
	if err != nil {
		return nil, err
	}
	return n.log.since(since), nil
}

// nodeLog keeps what a node writes, line by line, with the time each line
// was written.
type nodeLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []logLine
}

type logLine struct {
	at   time.Time
	text string
}

// Write keeps each whole line of p, stamped with now.
func (l *nodeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.partial = append(l.partial, p...)
	for {
		i := slices.Index(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, logLine{now, string(l.partial[:i])})
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

// since returns the lines written at or after t, each prefixed by its time
// (RFC 3339 with nanoseconds) and a space, as runtime.Logs gives them.
func (l *nodeLog) since(t time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ln := range l.lines {
		if !ln.at.Before(t) {
			out = append(out, ln.at.UTC().Format(time.RFC3339Nano)+" "+ln.text)
		}
	}
	return out
}
