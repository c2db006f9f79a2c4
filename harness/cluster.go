package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/harness/docker"
	"github.com/fencecheck/fencecheck/harness/netdelay"
	"github.com/fencecheck/fencecheck/harness/vdso"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/images"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/targets"
	"github.com/fencecheck/fencecheck/workloads/lockappend"
	"github.com/fencecheck/fencecheck/workloads/register"
)

// ErrHarness: the harness itself failed (Docker unreachable, an image that
// does not build, a cluster that never became ready, ...). It maps to exit
// code 255.
var ErrHarness = errors.New("harness failure")

// ClusterConfig is what a cluster of servers and workers needs.
type ClusterConfig struct {
	// RunID labels the run's containers and network (a new one if empty).
	RunID    string
	Target   targets.Target
	Nodes    int
	Workers  int
	Client   targets.ClientConfig // TTL and RPCTimeout; endpoints and prefix are filled in
	Workload string               // a workload table name
	Config   WorkloadConfig
	// WorkerBinary is the fencecheck binary the worker image is built from.
	WorkerBinary string
	ReadyTimeout time.Duration
	// LogsDir receives the containers' logs when the set-up fails.
	LogsDir string
	Log     *slog.Logger
	// Stage, if not nil, is told of each step of the set-up, for the user.
	Stage func(format string, args ...any)
}

// Cluster is a running system under test and its workers, for one run.
type Cluster struct {
	cfg      ClusterConfig
	rt       *docker.Runtime
	log      *slog.Logger
	RunID    string
	servers  []*docker.Container
	Nodes    []targets.Node
	Images   map[string]string // kind -> tag
	ImageIDs map[string]string // kind -> image id
	Ready    time.Duration     // time from the first server start to ready
	host     targets.Client

	clients []*client
	byNode  map[string]*docker.Container

	scripted atomic.Int64 // ids of RunOne's operations

	mu       sync.Mutex
	delayers map[string]*netdelay.Delayer
	tokens   map[history.Process]int64
	waiters  []chan nemesis.Holder
}

func (c *Cluster) stage(format string, args ...any) {
	c.log.Info(fmt.Sprintf(format, args...))
	if c.cfg.Stage != nil {
		c.cfg.Stage(format, args...)
	}
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StartCluster builds what images are missing, starts the servers on a
// private network, waits until they serve, resets the protected resource,
// and starts the worker containers (not yet connected: see Connect). On
// error, everything it started is removed again. Errors wrap ErrHarness.
func StartCluster(ctx context.Context, cfg ClusterConfig) (c *Cluster, err error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.RunID == "" {
		cfg.RunID = newRunID()
	}
	c = &Cluster{cfg: cfg, log: log, RunID: cfg.RunID, Images: map[string]string{}, ImageIDs: map[string]string{},
		byNode: map[string]*docker.Container{}, tokens: map[history.Process]int64{},
		delayers: map[string]*netdelay.Delayer{}}
	specs, err := cfg.Target.Nodes(cfg.Nodes)
	if err != nil {
		return nil, err
	}
	cli, err := docker.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHarness, err)
	}
	b := &images.Builder{Docker: cli, Log: func(f string, a ...any) { c.stage(f, a...) }}
	if c.Images[cfg.Target.Image()], err = b.Ensure(ctx, cfg.Target.Image(), ""); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHarness, err)
	}
	if cfg.Workers > 0 {
		if c.Images[images.Worker], err = b.EnsureWorker(ctx, cfg.WorkerBinary); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrHarness, err)
		}
	}
	for kind, ref := range c.Images {
		if insp, err := cli.ImageInspect(ctx, ref); err == nil {
			c.ImageIDs[kind] = insp.ID
		}
	}
	c.rt, err = docker.New(ctx, cli, c.RunID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHarness, err)
	}
	defer func() {
		if err != nil {
			c.teardown(cfg.LogsDir)
			c = nil
		}
	}()

	start := time.Now()
	dspecs := make([]docker.Spec, len(specs))
	for i, s := range specs {
		dspecs[i] = docker.Spec{Name: s.Name, Role: "server", Image: c.Images[cfg.Target.Image()], Cmd: s.Cmd, Env: s.Env}
	}
	c.stage("starting %d %s servers (run %s)", len(specs), cfg.Target.Name(), c.RunID)
	c.servers, err = c.rt.StartAll(ctx, dspecs)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrHarness, err)
	}
	for i, s := range c.servers {
		c.byNode[s.Name] = s
		c.Nodes = append(c.Nodes, targets.Node{Name: s.Name, Addr: fmt.Sprintf("%s:%d", s.IP, specs[i].Port)})
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	err = cfg.Target.Ready(rctx, c.Nodes)
	cancel()
	if err != nil {
		return c, fmt.Errorf("%w: cluster never became ready within %s: %v", ErrHarness, cfg.ReadyTimeout, err)
	}
	c.Ready = time.Since(start)
	c.stage("cluster ready in %.1fs", c.Ready.Seconds())

	c.cfg.Client.Endpoints = nil
	for _, n := range c.Nodes {
		c.cfg.Client.Endpoints = append(c.cfg.Client.Endpoints, n.Addr)
	}
	c.cfg.Client.Prefix = "/fencecheck/" + c.RunID
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c.host, err = cfg.Target.Dial(dctx, c.cfg.Client)
	if err == nil {
		err = c.host.Reset(dctx)
	}
	cancel()
	if err != nil {
		return c, fmt.Errorf("%w: set-up of the resource: %v", ErrHarness, err)
	}

	if cfg.Workers == 0 {
		return c, nil
	}
	wspecs := make([]docker.Spec, cfg.Workers)
	for i := range wspecs {
		wspecs[i] = docker.Spec{Name: fmt.Sprintf("w%d", i+1), Role: "worker", Image: c.Images[images.Worker],
			Cmd: []string{"/usr/local/bin/fencecheck", "worker", "--listen", fmt.Sprintf(":%d", WorkerPort)}}
	}
	ws, err := c.rt.StartAll(ctx, wspecs)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrHarness, err)
	}
	for _, w := range ws {
		c.byNode[w.Name] = w
	}
	return c, nil
}

// Connect connects to every worker and sets it up; from then on the workers'
// operations are recorded in rec.
func (c *Cluster) Connect(ctx context.Context, rec *history.Recorder) error {
	w, err := lookupWorkload(c.cfg.Workload)
	if err != nil {
		return err
	}
	setup := Setup{Target: c.cfg.Target.Name(), Client: c.cfg.Client, Workload: w.Name, Config: c.cfg.Config}
	var ws []*docker.Container
	for _, ct := range c.rt.Containers() {
		if ct.Role == "worker" {
			ws = append(ws, ct)
		}
	}
	// Process i runs on worker w(i+1).
	sort.Slice(ws, func(i, j int) bool { return workerIndex(ws[i].Name) < workerIndex(ws[j].Name) })
	conns := make([]*conn, len(ws))
	errs := make([]error, len(ws))
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = dialWorker(dctx, w, setup)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, cn := range conns {
			if cn != nil {
				cn.close()
			}
		}
		return fmt.Errorf("%w: %v", ErrHarness, err)
	}
	for i := range ws {
		c.clients = append(c.clients, newClient(ws[i].Name, ws[i], conns[i], rec, w, c.onPhase))
	}
	return nil
}

// workerIndex is the number in a worker's name (w12 -> 12).
func workerIndex(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "w"))
	return n
}

// onPhase tracks lock holders for the nemesis.
func (c *Cluster) onPhase(cl *client, p history.Process, phase string, value json.RawMessage) {
	switch phase {
	case lockappend.PhaseAcquired:
		var a lockappend.Acquired
		if json.Unmarshal(value, &a) == nil {
			c.mu.Lock()
			c.tokens[p] = a.Token
			c.mu.Unlock()
		}
	case lockappend.PhaseChecked, register.PhaseSending:
		// A lock holder that passed its lease check, or a register client
		// whose request is about to leave: in the middle of its work.
		if phase == lockappend.PhaseChecked {
			var ck lockappend.Checked
			if json.Unmarshal(value, &ck) != nil || !ck.OK {
				return
			}
		}
		c.mu.Lock()
		h := nemesis.Holder{Node: cl.name, Process: p, Token: c.tokens[p]}
		ws := c.waiters
		c.waiters = nil
		c.mu.Unlock()
		for _, w := range ws {
			w <- h
		}
	}
}

// Lease is the longest the lock stays unavailable after its holder's last
// renewal (nemesis.Env).
func (c *Cluster) Lease() time.Duration { return targets.MaxLease(c.cfg.Target, c.cfg.Client) }

// Work is the clients' work time (nemesis.Env).
func (c *Cluster) Work() time.Duration { return c.cfg.Config.LockAppend.Work }

// NextHolder waits for the next client to pass its lease check
// (nemesis.Env).
func (c *Cluster) NextHolder(ctx context.Context) (nemesis.Holder, error) {
	ch := make(chan nemesis.Holder, 1)
	c.mu.Lock()
	c.waiters = append(c.waiters, ch)
	c.mu.Unlock()
	select {
	case h := <-ch:
		return h, nil
	case <-ctx.Done():
		c.mu.Lock()
		for i, w := range c.waiters {
			if w == ch {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return nemesis.Holder{}, ctx.Err()
	}
}

// TTL is the lease TTL (nemesis.Env).
func (c *Cluster) TTL() time.Duration { return c.cfg.Client.TTL }

// Servers are the server nodes' names (nemesis.Env).
func (c *Cluster) Servers() []string {
	names := make([]string, len(c.servers))
	for i, s := range c.servers {
		names[i] = s.Name
	}
	return names
}

// Clients are the worker nodes' names (nemesis.Env).
func (c *Cluster) Clients() []string {
	names := make([]string, len(c.clients))
	for i, cl := range c.clients {
		names[i] = cl.name
	}
	return names
}

// Healthy waits until every server serves (nemesis.Env).
func (c *Cluster) Healthy(ctx context.Context) error {
	return c.cfg.Target.Ready(ctx, c.Nodes)
}

func (c *Cluster) node(name string) (*docker.Container, error) {
	ct, ok := c.byNode[name]
	if !ok {
		return nil, fmt.Errorf("harness: no node %q", name)
	}
	return ct, nil
}

// Signal signals a node's process (nemesis.Env).
func (c *Cluster) Signal(ctx context.Context, node, sig string) error {
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	return c.rt.Signal(ctx, ct, sig)
}

// Kill kills a server and waits until its container stopped (nemesis.Env).
func (c *Cluster) Kill(ctx context.Context, node string) error {
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	return c.rt.Kill(ctx, ct)
}

// Restart starts a killed server again on its data (nemesis.Env).
func (c *Cluster) Restart(ctx context.Context, node string) error {
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	return c.rt.Restart(ctx, ct)
}

// Exec runs a command in a node's container (nemesis.Env).
func (c *Cluster) Exec(ctx context.Context, node string, cmd ...string) (string, error) {
	ct, err := c.node(node)
	if err != nil {
		return "", err
	}
	return c.rt.Exec(ctx, ct, cmd...)
}

// Addr is a node's address (nemesis.Env).
func (c *Cluster) Addr(node string) string {
	if ct, ok := c.byNode[node]; ok {
		return ct.IP
	}
	return ""
}

const delayRule = "OUTPUT -o eth0 -j NFQUEUE --queue-num 0 --queue-bypass"

// Delay holds every packet a node sends for delay ± jitter (nemesis.Env).
func (c *Cluster) Delay(ctx context.Context, node string, delay, jitter time.Duration) error {
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	pid, err := c.rt.Pid(ctx, ct)
	if err != nil {
		return err
	}
	c.mu.Lock()
	_, busy := c.delayers[node]
	c.mu.Unlock()
	if busy {
		return fmt.Errorf("harness: %s is delayed already", node)
	}
	d, err := netdelay.Start(pid, 0, delay, jitter, uint64(pid))
	if err != nil {
		return err
	}
	if _, err := c.rt.Exec(ctx, ct, "sh", "-c", "iptables -w -A "+delayRule); err != nil {
		return errors.Join(err, d.Stop())
	}
	c.mu.Lock()
	c.delayers[node] = d
	c.mu.Unlock()
	return nil
}

// Undelay ends a node's delay: the rule goes, then every held packet is
// released (nemesis.Env).
func (c *Cluster) Undelay(ctx context.Context, node string) error {
	c.mu.Lock()
	d := c.delayers[node]
	delete(c.delayers, node)
	c.mu.Unlock()
	if d == nil {
		return nil
	}
	ct, err := c.node(node)
	if err != nil {
		return errors.Join(err, d.Stop())
	}
	_, err = c.rt.Exec(ctx, ct, "sh", "-c", "iptables -w -D "+delayRule)
	return errors.Join(err, d.Stop())
}

// SkewServerClock sets a server process's wall-clock offset by patching its
// vDSO; 0 restores the true clock (nemesis.Env).
func (c *Cluster) SkewServerClock(ctx context.Context, node string, offset time.Duration) error {
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	pid, err := c.rt.Pid(ctx, ct)
	if err != nil {
		return err
	}
	if pid == 0 {
		return fmt.Errorf("harness: %s does not run", node)
	}
	if offset == 0 {
		return vdso.Reset(pid)
	}
	return vdso.SetOffset(pid, offset)
}

// SkewClientClock sets a client's lease-clock offset (nemesis.Env).
func (c *Cluster) SkewClientClock(ctx context.Context, node string, offset time.Duration) error {
	for _, cl := range c.clients {
		if cl.name == node {
			return cl.conn.send(message{Kind: kindSkew, Skew: offset})
		}
	}
	return fmt.Errorf("harness: no client %q", node)
}

// ProcessState returns the state letter of a node's process (R, S, T, ...).
func (c *Cluster) ProcessState(ctx context.Context, node string) (string, error) {
	ct, ok := c.byNode[node]
	if !ok {
		return "", fmt.Errorf("harness: no node %q", node)
	}
	return c.rt.ProcessState(ctx, ct)
}

// Host is the harness's own client of the target (final reads).
func (c *Cluster) Host() targets.Client { return c.host }

// ClientConfig is the client configuration the workers got.
func (c *Cluster) ClientConfig() targets.ClientConfig { return c.cfg.Client }

// Leader is the node that leads now.
func (c *Cluster) Leader(ctx context.Context) (string, error) {
	return c.cfg.Target.Leader(ctx, c.Nodes)
}

// Close disconnects the workers, saves every container's log under logsDir
// (if not empty), and removes the containers and the network. It resumes any
// stopped process first and works even when the run's context is cancelled.
func (c *Cluster) Close(logsDir string) error {
	for _, cl := range c.clients {
		cl.close()
	}
	if c.host != nil {
		c.host.Close()
	}
	return c.teardown(logsDir)
}

func (c *Cluster) teardown(logsDir string) error {
	c.mu.Lock()
	for n, d := range c.delayers {
		d.Stop()
		delete(c.delayers, n)
	}
	c.mu.Unlock()
	if c.rt == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ct := range c.rt.Containers() {
		// A frozen process would make its log incomplete, and its removal
		// slower: resume everything first.
		_ = c.rt.Signal(ctx, ct, "SIGCONT")
	}
	if logsDir != "" {
		var wg sync.WaitGroup
		for _, ct := range c.rt.Containers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.rt.SaveLogs(ctx, ct, filepath.Join(logsDir, ct.Name+".log")); err != nil {
					c.log.Warn("log not saved", "node", ct.Name, "err", err)
				}
			}()
		}
		wg.Wait()
	}
	done, err := c.rt.Teardown()
	if err != nil {
		c.log.Error("teardown", "err", err)
	}
	for _, n := range done.Stuck {
		c.log.Warn("network left", "network", n, "err", docker.ErrStuckNetwork)
	}
	c.rt = nil
	return err
}

// RunOne runs one lock-append critical section on client i, with its work
// time set to work, and waits for its completion (scripted tests use it).
func (c *Cluster) RunOne(ctx context.Context, i int, work time.Duration) error {
	if i < 0 || i >= len(c.clients) {
		return fmt.Errorf("harness: no client %d", i)
	}
	cfg := c.cfg.Config
	cfg.LockAppend.Work = work
	id := c.scripted.Add(1)
	p, err := c.clients[i].invoke(history.Process(i), id, lockappend.FAppend, lockappend.Invoke{Element: id}, &cfg)
	if err != nil {
		return err
	}
	if t := c.clients[i].await(ctx, p, 60*time.Second); t != history.Ok {
		var done lockappend.Completion
		_ = p.completion(&done)
		return fmt.Errorf("harness: op %d: %s %s %s", id, t, done.Reason, done.Error)
	}
	return nil
}
