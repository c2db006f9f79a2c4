package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/lazydisk"
	"github.com/fencecheck/fencecheck/internal/base/platform/netdelay"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/systems/resources/lockstore"
	"github.com/fencecheck/fencecheck/targets"
)

// ErrHarness: the harness itself failed (Docker unreachable, an image that
// does not build, a cluster that never became ready, ...). It maps to exit
// code 255.
var ErrHarness = errors.New("harness failure")

// errNoEngine: a run or a cluster was given no Engine to run on, a
// mistake of its caller's, which the harness does not paper over by
// connecting to Docker itself.
var errNoEngine = fmt.Errorf("%w: no engine: the caller gives the harness the container platform to run on (Config.Engine, ClusterConfig.Engine)", ErrHarness)

// ErrInterrupted: Ctrl-C or SIGTERM ended the run before it had anything
// to judge (during set-up). It is not a harness failure: the verdict is
// unknown (exit 2). It is the command lines' (cmdline.ErrInterrupted).
var ErrInterrupted = cmdline.ErrInterrupted

// interruptedSetUp is the error of a run whose ctx ended during its
// set-up (Run's, or RunOn's connection to the engine): it wraps
// ErrInterrupted and names ctx's cause.
func interruptedSetUp(ctx context.Context) error {
	return fmt.Errorf("%w (%v) during set-up: no operation ran, so there is no verdict", ErrInterrupted, context.Cause(ctx))
}

// ErrNotSetUp: a scripted scenario (a demo story, a regression scenario, a
// scripted test) did not take place as scripted: the holder was not frozen
// at its failpoint, a fault missed, or the phases came in another order.
// Its verdict says nothing about what it set out to show, so none is given;
// the script may play the scenario again. It is a harness failure (255).
var ErrNotSetUp = fmt.Errorf("%w: scenario not set up", ErrHarness)

// ResourceUse is a resource of a run with its fencing mode.
type ResourceUse struct {
	Resource resources.Resource
	Fencing  targets.Fencing
}

// ClusterConfig is what a cluster of servers, resources and workers needs.
type ClusterConfig struct {
	// Engine is the container platform the cluster's nodes run on: the
	// caller's (package docker's Connect in fencecheck's commands, a fake
	// in tests), connected before StartCluster and closed by the caller
	// after Cluster.Close. The harness never connects to a platform and
	// never closes Engine. StartCluster refuses a nil one (ErrHarness).
	Engine runtime.Engine
	// RunID labels the run's containers and network (a new one if empty).
	RunID    runtime.RunID
	Target   targets.Target
	Nodes    int
	Workers  int
	Client   targets.ClientConfig // TTL and RPCTimeout; endpoints and prefix are filled in
	Workload workloads.Workload
	// Resources are what the lock protects, in the order critical sections
	// write them (default: the target's lock-store, unfenced).
	Resources []ResourceUse
	// Audit, if not nil, keeps the audit log (--audit-log); its
	// containers are started unless it is one of Resources.
	Audit  resources.AuditLogger
	Config workloads.Config
	// FailpointTimeout bounds a worker's wait at its failpoint (default
	// one minute): longer than any fault's hold.
	FailpointTimeout time.Duration
	// WorkerBinary is the binary the worker image is built from: the worker
	// binary (FindWorkerBinary), or fencecheck itself.
	WorkerBinary string
	// ClientProgram, if not nil, is the user's lock client: the workers
	// run in its image (package images, kind client) and start it as
	// their lock client (package clientproto).
	ClientProgram *clientproto.ProgramDir
	ReadyTimeout  time.Duration
	// TargetImage, if not empty, is the user's own server image (--image
	// target=REF), from the local Engine, instead of fencecheck's image of
	// the target: the target must be a targets.ImageRunner. Faults need
	// nothing inside it (see runtime.Commands.NetExec).
	TargetImage string
	// Endpoints, if not empty, are existing servers to attach to
	// (--endpoints; the Target must be a targets.Attacher): no server
	// container is started, and Credentials are what clients present to
	// them (nil: none).
	Endpoints   []string
	Credentials *targets.Credentials
	// Attached is what Config.Validate attached to at Endpoints.
	Attached *Attachment
	// LazyDisks mounts a lazy disk (package lazydisk) under the data
	// directory of every server and resource container that names one,
	// for the disk faults (nemesis.NeedsDisk).
	LazyDisks bool
	// NetHelpers: a fault of the run changes a node's network
	// (nemesis.NeedsNet), from the node's network helper
	// (runtime.Commands.NetExec, behind Cluster.NetExec, Shape and
	// WarmNet), whose image is fencecheck's base image: StartCluster then
	// ensures the base. Without it the run has no helper image, and a
	// network command is refused, saying so (runtime.ErrNoNetHelper).
	NetHelpers bool
	// LogsDir receives the containers' logs when the set-up fails.
	LogsDir string
	Log     *slog.Logger
	// Stage, if not nil, is told of each step of the set-up, for the user.
	Stage func(format string, args ...any)
}

// Cluster is a running system under test and its workers, for one run.
type Cluster struct {
	// nemesisEnv makes the cluster the faults' nemesis.Env
	// (nemesisenv.go).
	nemesisEnv
	// Program is the client program's name for itself (its init_ok's: the
	// library and its version), as the first worker reported it; empty
	// without a program.
	Program  string
	cfg      ClusterConfig
	rt       runtime.Run
	log      *slog.Logger
	RunID    runtime.RunID
	servers  []*runtime.Container
	Nodes    []targets.Node
	Images   map[string]string // kind -> tag
	ImageIDs map[string]string // kind -> image id
	Ready    time.Duration     // time from the first server start to ready
	// ServerVersion is what the servers of a user's image (TargetImage)
	// say they run; "" for fencecheck's own images, whose version the
	// target knows.
	ServerVersion string
	// ResourceNodes are the containers of each resource with nodes of its
	// own, by resource name.
	ResourceNodes map[string][]targets.Node
	// foreign are the addresses of attached servers by node name
	// (ClusterConfig.Endpoints), resolved: none when fencecheck started
	// its own.
	foreign map[string]string
	started time.Time // when the servers were started
	// setup is what workers get; hosts the harness's own clients (resets,
	// final reads, the side writer).
	setup     worker.Setup
	hosts     []workloads.Clients // one set per lock (Host is the first)
	closeHost func()
	catalog   worker.Catalog

	clients []*client
	byNode  map[string]*runtime.Container

	scripted atomic.Int64 // ids of RunOne's operations

	disks map[string]*lazydisk.Disk // by node: LazyDisks's
	// dataDirs are the nodes that name a data directory, servers then
	// resources (targets.NodeSpec.DataDir), for CopyData.
	dataDirs []nodeDir

	mu       sync.Mutex
	delayers map[string]*netdelay.Delayer
	waiters  []chan nemesis.Holder
}

func (c *Cluster) stage(format string, args ...any) {
	c.log.Info(fmt.Sprintf(format, args...))
	if c.cfg.Stage != nil {
		c.cfg.Stage(format, args...)
	}
}

func newRunID() runtime.RunID { return runtime.NewRunID() }

// StartCluster builds what images are missing, starts the servers on a
// private network of cfg.Engine (which it neither connects nor closes), waits until they serve, resets the protected resource,
// and starts the worker containers (not yet connected: see Connect). It runs
// these stages in order (images, containers, readiness, host clients,
// workers); when one fails, everything the stages before it started is
// removed again (the host clients closed, the containers' logs saved
// under LogsDir, the containers and the network removed) and StartCluster
// returns nil and the stage's error. Errors wrap ErrHarness, or
// targets.ErrBadConfig for what the configuration asked that cannot be.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.Engine == nil {
		return nil, errNoEngine
	}
	c := newCluster(cfg)
	var specs []targets.NodeSpec
	if len(cfg.Endpoints) > 0 {
		if err := c.attach(); err != nil {
			return nil, err
		}
	} else {
		if sec, ok := c.cfg.Target.(targets.Secured); ok {
			t, creds, err := sec.Secure()
			if err != nil {
				return nil, fmt.Errorf("%w: %s credentials: %w", ErrHarness, c.cfg.Target.Name(), err)
			}
			c.cfg.Target, c.cfg.Client.Credentials = t, &creds
		}
		var err error
		if specs, err = c.cfg.Target.Nodes(c.cfg.Nodes); err != nil {
			return nil, err
		}
	}
	server, err := c.ensureImages(ctx, cfg.Engine, specs)
	if err != nil {
		return nil, err
	}
	// The base image is the network helpers' (runtime.Commands.NetExec):
	// none when no fault of the run changes a node's network.
	helper := ""
	if cfg.NetHelpers {
		helper = c.Images[images.Base]
	}
	c.rt, err = cfg.Engine.NewRun(ctx, c.RunID, helper)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHarness, err)
	}
	for _, stage := range []func(context.Context) error{
		func(ctx context.Context) error { return c.startServers(ctx, specs, server) },
		c.awaitReady,
		c.dialHost,
		c.startWorkers,
	} {
		if err := stage(ctx); err != nil {
			c.undo()
			return nil, err
		}
	}
	return c, nil
}

// newCluster is the cluster of cfg before any stage: cfg with its
// defaults (a discarding log, a new run id, the target's lock-store
// unfenced as the resource).
func newCluster(cfg ClusterConfig) *Cluster {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.RunID == "" {
		cfg.RunID = newRunID()
	}
	if len(cfg.Resources) == 0 {
		cfg.Resources = []ResourceUse{{Resource: lockstore.Resource{}, Fencing: targets.FencingNone}}
	}
	c := &Cluster{cfg: cfg, log: cfg.Log, RunID: cfg.RunID, Images: map[string]string{}, ImageIDs: map[string]string{},
		byNode: map[string]*runtime.Container{}, delayers: map[string]*netdelay.Delayer{},
		ResourceNodes: map[string][]targets.Node{}}
	c.nemesisEnv = nemesisEnv{c}
	c.catalog = cfg.catalog()
	return c
}

// serverImage is the image the servers run and how their command is
// given to it.
type serverImage struct {
	kind string // the key of Cluster.Images
	cmd  func([]string) []string
}

// of is the image kind node s runs and its command: the node's own image
// (a target with servers of more than one kind), else the target's.
func (si serverImage) of(s targets.NodeSpec) (kind string, cmd []string) {
	if s.Image != "" {
		return s.Image, s.Cmd
	}
	return si.kind, si.cmd(s.Cmd)
}

// ImageKinds are the kinds of fencecheck's own images a cluster of cfg
// runs, whose servers are specs (none when attached to --endpoints), in
// the order ensureImages makes them: the servers' (unless a --image of the
// user's runs them), the base (the network helpers', when NetHelpers), the resources' and
// the worker (when workers or a resource run in it). A user's client
// program's image (images.Client) is not among them: it is built from the
// program's directory (images build --client-dir). ensureImages builds
// exactly these, so a CI cache of them holds what the run loads.
func (cfg ClusterConfig) ImageKinds(specs []targets.NodeSpec) []string {
	var kinds []string
	add := func(k string) {
		if k != "" && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if cfg.TargetImage == "" && len(cfg.Endpoints) == 0 {
		add(cfg.Target.Image())
	}
	// The images of nodes that name their own (another tier's servers).
	for _, s := range specs {
		add(s.Image)
	}
	// The base image is the network helpers' (runtime.Commands.NetExec),
	// needed when a fault changes a node's network (NetHelpers); an image
	// that stands on the base (a resource's, a client's) ensures it itself.
	if cfg.NetHelpers {
		add(images.Base)
	}
	needWorker := cfg.Workers > 0
	for _, n := range cfg.resourceNodes() {
		if n.spec.Image == images.Worker {
			needWorker = true
		} else {
			add(n.spec.Image)
		}
	}
	if needWorker {
		add(images.Worker)
	}
	// A cache of these images holds the base too when one of them stands
	// on it: building that one checks the base's tag first.
	if !slices.Contains(kinds, images.Base) && slices.ContainsFunc(kinds, images.StandsOnBase) {
		kinds = append([]string{images.Base}, kinds...)
	}
	return kinds
}

// ensureImages is the images stage: it builds what images the run needs
// and lacks (ImageKinds; a user's TargetImage is checked instead of the
// target's; the user's client program's image), and records their tags
// and ids in Images and ImageIDs. It starts nothing, so there is nothing
// to undo.
func (c *Cluster) ensureImages(ctx context.Context, eng runtime.Images, specs []targets.NodeSpec) (serverImage, error) {
	cfg := c.cfg
	b := &images.Builder{Engine: eng, Log: func(f string, a ...any) { c.stage(f, a...) }}
	server := serverImage{kind: cfg.Target.Image(), cmd: func(cmd []string) []string { return cmd }}
	var err error
	if cfg.TargetImage != "" {
		if server.cmd, err = userImage(ctx, eng, cfg.Target, cfg.TargetImage); err != nil {
			return server, err
		}
		server.kind = UserImageKind
		c.Images[UserImageKind] = cfg.TargetImage
	} else if len(cfg.Endpoints) > 0 {
		server.kind = "" // no server of fencecheck's: no image of them
	}
	for _, kind := range cfg.ImageKinds(specs) {
		if _, ok := c.Images[kind]; ok {
			continue
		}
		if kind == images.Worker {
			c.Images[kind], err = b.EnsureWorker(ctx, cfg.WorkerBinary)
		} else {
			c.Images[kind], err = b.Ensure(ctx, kind, "")
		}
		if err != nil {
			return server, fmt.Errorf("%w: %w", ErrHarness, err)
		}
	}
	if p := cfg.ClientProgram; p != nil && cfg.Workers > 0 {
		ci, err := ClientImageOf(*p)
		if err != nil {
			return server, err
		}
		if c.Images[images.Client], err = b.EnsureClient(ctx, cfg.WorkerBinary, ci); err != nil {
			return server, fmt.Errorf("%w: %w", ErrHarness, err)
		}
	}
	for kind, ref := range c.Images {
		if insp, err := eng.Inspect(ctx, ref); err == nil {
			c.ImageIDs[kind] = insp.ID
		}
	}
	return server, nil
}

// startServers is the containers stage: it starts the servers (specs, on
// server's image) and the resources' containers on the run's network, and
// records them in Nodes, ResourceNodes and byNode. Undone by teardown.
func (c *Cluster) startServers(ctx context.Context, specs []targets.NodeSpec, server serverImage) error {
	cfg := c.cfg
	rnodes := cfg.resourceNodes()
	dspecs := make([]runtime.ContainerSpec, len(specs))
	for i, s := range specs {
		kind, cmd := server.of(s)
		dspecs[i] = runtime.ContainerSpec{Name: s.Name, Role: runtime.RoleServer, Image: c.Images[kind], Cmd: cmd, Env: s.Env}
		for _, f := range s.Files {
			dspecs[i].Files = append(dspecs[i].Files, runtime.File{Path: f.Path, Data: f.Data, Mode: f.Mode})
		}
		if kind == UserImageKind {
			// The server binary is PID 1, not the image's wrapper: [""]
			// clears the image's entry point (an empty list would be
			// omitted, and the image's kept).
			dspecs[i].Entrypoint = []string{""}
		}
	}
	for _, n := range rnodes {
		dspecs = append(dspecs, runtime.ContainerSpec{Name: n.spec.Name, Role: runtime.RoleResource, Image: c.Images[n.spec.Image], Cmd: n.spec.Cmd, Env: n.spec.Env})
	}
	dataDirs := map[string]string{}
	for _, s := range specs {
		dataDirs[s.Name] = s.DataDir
	}
	for _, n := range rnodes {
		dataDirs[n.spec.Name] = n.spec.DataDir
	}
	for _, s := range dspecs {
		if d := dataDirs[s.Name]; d != "" {
			c.dataDirs = append(c.dataDirs, nodeDir{s.Name, d})
		}
	}
	if cfg.LazyDisks {
		if err := c.mountDisks(ctx, dspecs, dataDirs); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("%d %s servers", len(specs), cfg.Target.Name())
	if len(rnodes) > 0 {
		what += fmt.Sprintf(" and %d resource containers", len(rnodes))
	}
	switch {
	case c.foreign != nil && len(rnodes) == 0:
		c.stage("attached to %d %s servers, not fencecheck's (run %s)", len(c.Nodes), cfg.Target.Name(), c.RunID)
	case c.foreign != nil:
		c.stage("attached to %d %s servers, not fencecheck's; starting %d resource containers (run %s)", len(c.Nodes), cfg.Target.Name(), len(rnodes), c.RunID)
	default:
		c.stage("starting %s (run %s)", what, c.RunID)
	}
	c.started = time.Now()
	started, err := c.rt.StartAll(ctx, dspecs)
	if err != nil {
		if cfg.TargetImage != "" && strings.Contains(err.Error(), "unable to start container process") {
			// The user's image has no such binary, or it cannot run there.
			return fmt.Errorf("%w: --image target=%s: the %s server does not start from it: %w", targets.ErrBadConfig, cfg.TargetImage, cfg.Target.Name(), err)
		}
		return fmt.Errorf("%w: %w", ErrHarness, err)
	}
	c.servers = started[:len(specs)]
	for i, s := range c.servers {
		c.byNode[s.Name] = s
		c.Nodes = append(c.Nodes, targets.Node{Name: s.Name, Addr: fmt.Sprintf("%s:%d", s.IP, specs[i].Port), Tier: specs[i].Tier})
	}
	for i, n := range rnodes {
		ct := started[len(specs)+i]
		c.byNode[ct.Name] = ct
		name := n.res.Name()
		c.ResourceNodes[name] = append(c.ResourceNodes[name], targets.Node{Name: ct.Name, Addr: fmt.Sprintf("%s:%d", ct.IP, n.spec.Port)})
	}
	return nil
}

// awaitReady is the readiness stage: it waits, at most ReadyTimeout, until
// the lock service and every resource serve (ready), records Ready, and
// asks the servers of a user's image their version (ServerVersion). It
// starts nothing.
func (c *Cluster) awaitReady(ctx context.Context) error {
	cfg := c.cfg
	rctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	err := c.ready(rctx)
	cancel()
	switch {
	case err != nil && c.foreign != nil:
		return fmt.Errorf("%w: cluster never became ready within %s: the servers at %s (--endpoints) did not answer: %w", ErrHarness, cfg.ReadyTimeout, strings.Join(cfg.Endpoints, ", "), err)
	case err != nil:
		return fmt.Errorf("%w: cluster never became ready within %s: %w", ErrHarness, cfg.ReadyTimeout, err)
	}
	c.Ready = time.Since(c.started)
	c.stage("cluster ready in %.1fs", c.Ready.Seconds())
	if ir, ok := cfg.Target.(targets.ImageRunner); ok && (cfg.TargetImage != "" || c.foreign != nil) {
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c.ServerVersion, err = ir.ServerVersion(vctx, c.Nodes)
		cancel()
		whose := cfg.TargetImage
		if c.foreign != nil {
			whose = strings.Join(cfg.Endpoints, ", ")
		}
		switch {
		case err != nil && c.foreign != nil:
			// Not the run's business: a token that may not read the
			// servers' own description still tests the lock.
			c.log.Warn("the attached servers' version is not known", "err", err)
			c.stage("%s: version not known (%v)", whose, err)
		case err != nil:
			return fmt.Errorf("%w: the servers of %s: %w", ErrHarness, whose, err)
		default:
			c.stage("%s runs %s %s", whose, cfg.Target.Name(), c.ServerVersion)
		}
	}
	return nil
}

// dialHost is the clients stage: it sets the workers' client
// configuration (the servers' endpoints, the run's key prefix) and setup,
// dials the harness's own clients of the lock service and the resources
// (Host), and resets every resource. Undone by closing the host clients.
func (c *Cluster) dialHost(ctx context.Context) error {
	c.cfg.Client.Endpoints = targets.Endpoints(c.cfg.Target, c.Nodes)
	c.cfg.Client.Prefix = "/fencecheck/" + c.RunID.String()
	c.setup = c.newSetup()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var closers []func()
	c.closeHost = func() {
		for _, f := range closers {
			f()
		}
	}
	c.hosts = nil
	for l := range c.locks() {
		h, closeH, err := worker.DialClients(dctx, c.catalog, c.lockSetup(l), nil)
		if err == nil {
			closers = append(closers, closeH)
			c.hosts = append(c.hosts, h)
			err = c.reset(dctx, h)
		}
		if err != nil {
			return fmt.Errorf("%w: set-up of the resource: %w", ErrHarness, err)
		}
	}
	return nil
}

// locks is the run's number of locks (spec.WorkerKnobs.LockCount).
func (c *Cluster) locks() int { return c.cfg.Config.LockCount() }

// lockSetup is the setup of lock l's clients: with one lock, the run's;
// with several, every key prefix (the lock service's, each resource's)
// under PREFIX/lock-L, so that each lock and its lists are apart, and
// Config.Lock = l. The audit log, one for the run, keeps the run's prefix.
func (c *Cluster) lockSetup(l int) worker.Setup {
	s := c.setup
	if c.locks() == 1 {
		return s
	}
	sfx := fmt.Sprintf("/lock-%d", l)
	s.Client.Prefix += sfx
	s.Config.Lock = l
	s.Resources = slices.Clone(s.Resources)
	for i := range s.Resources {
		s.Resources[i].Config.Prefix += sfx
	}
	return s
}

// workerSetup is the setup of the worker that runs process i (w(i+1)):
// its lock's, i mod the run's locks.
func (c *Cluster) workerSetup(i int) worker.Setup { return c.lockSetup(i % c.locks()) }

// startWorkers is the workers stage: it starts the worker containers
// (Workers of them, w1 to wN, on the worker's or the user's client's
// image), listening for the harness (Connect). Undone by teardown.
func (c *Cluster) startWorkers(ctx context.Context) error {
	if c.cfg.Workers == 0 {
		return nil
	}
	wspecs := make([]runtime.ContainerSpec, c.cfg.Workers)
	workerImage := c.Images[images.Worker]
	if c.cfg.ClientProgram != nil {
		workerImage = c.Images[images.Client]
	}
	for i := range wspecs {
		wspecs[i] = runtime.ContainerSpec{Name: fmt.Sprintf("w%d", i+1), Role: runtime.RoleWorker, Image: workerImage,
			Cmd: []string{"/usr/local/bin/fencecheck", worker.CmdWorkerName, "--listen", fmt.Sprintf(":%d", worker.Port)}}
	}
	ws, err := c.rt.StartAll(ctx, wspecs)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHarness, err)
	}
	for _, w := range ws {
		c.byNode[w.Name] = w
	}
	return nil
}

// attach is the set-up of a run on existing servers (Endpoints): the
// target, nodes and addresses that Config.Validate attached to
// (Attached). It starts nothing.
func (c *Cluster) attach() error {
	a := c.cfg.Attached
	if a == nil {
		return fmt.Errorf("%w: --endpoints: the servers were never attached (harness.Config.Validate attaches them)", ErrHarness)
	}
	c.cfg.Target, c.cfg.Client.Credentials, c.Nodes, c.foreign = a.Target, c.cfg.Credentials, a.Nodes, a.Addrs
	return nil
}

// purge deletes the run's keys from attached servers (targets.Purger),
// which are not fencecheck's to leave them on; nothing for its own.
func (c *Cluster) purge() {
	p, ok := c.cfg.Target.(targets.Purger)
	if c.foreign == nil || !ok || c.cfg.Client.Prefix == "" {
		return
	}
	// Minutes: a Redis purge scans a large key space.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Purge(ctx, c.cfg.Client); err != nil {
		c.log.Warn("the run's keys were not deleted from the attached servers", "prefix", c.cfg.Client.Prefix, "err", err)
		return
	}
	c.log.Info("the run's keys deleted from the attached servers", "prefix", c.cfg.Client.Prefix)
}

// undo undoes the stages of a StartCluster that failed: the host clients
// closed, the containers' logs saved under LogsDir, the containers and
// the network removed.
func (c *Cluster) undo() {
	if c.closeHost != nil {
		c.closeHost()
		c.closeHost = nil
	}
	_ = c.teardown(c.cfg.LogsDir)
	c.purge()
}

// resourceNode is a container of a resource.
type resourceNode struct {
	res  resources.Resource
	spec resources.NodeSpec
}

// resourceNodes are the containers of the run's resources and audit log,
// each resource's once.
func (cfg ClusterConfig) resourceNodes() []resourceNode {
	var out []resourceNode
	seen := map[string]bool{}
	add := func(r resources.Resource) {
		if seen[r.Name()] {
			return
		}
		seen[r.Name()] = true
		for _, s := range r.Nodes() {
			out = append(out, resourceNode{res: r, spec: s})
		}
	}
	for _, u := range cfg.Resources {
		add(u.Resource)
	}
	if cfg.Audit != nil {
		add(cfg.Audit)
	}
	return out
}

// catalog finds the run's own parts by name, for the harness's clients.
func (cfg ClusterConfig) catalog() worker.Catalog {
	rs := map[string]resources.Resource{}
	for _, u := range cfg.Resources {
		rs[u.Resource.Name()] = u.Resource
	}
	if cfg.Audit != nil {
		rs[cfg.Audit.Name()] = cfg.Audit
	}
	return worker.Catalog{
		Target: func(name string) (targets.Target, error) {
			if name != cfg.Target.Name() {
				return nil, fmt.Errorf("%w: no target %q in this run", targets.ErrBadConfig, name)
			}
			return cfg.Target, nil
		},
		Workload: func(name string) (workloads.Workload, error) {
			if cfg.Workload == nil || name != cfg.Workload.Name() {
				return nil, fmt.Errorf("%w: no workload %q in this run", targets.ErrBadConfig, name)
			}
			return cfg.Workload, nil
		},
		Resource: func(name string) (resources.Resource, error) {
			r, ok := rs[name]
			if !ok {
				return nil, fmt.Errorf("%w: no resource %q in this run", targets.ErrBadConfig, name)
			}
			return r, nil
		},
	}
}

// resourceConfig is the store configuration of a resource of the run.
func (c *Cluster) resourceConfig(r resources.Resource) resources.Config {
	rc := resources.Config{Prefix: c.cfg.Client.Prefix, RPCTimeout: c.cfg.Client.RPCTimeout}
	for _, n := range c.ResourceNodes[r.Name()] {
		rc.Endpoints = append(rc.Endpoints, n.Addr)
	}
	return rc
}

// newSetup is the setup workers get.
func (c *Cluster) newSetup() worker.Setup {
	s := worker.Setup{Target: c.cfg.Target.Name(), Client: c.cfg.Client, Config: c.cfg.Config, FailpointTimeout: c.cfg.FailpointTimeout}
	if c.cfg.Workload != nil {
		s.Workload = c.cfg.Workload.Name()
	}
	for _, u := range c.cfg.Resources {
		s.Resources = append(s.Resources, worker.ResourceSetup{Name: u.Resource.Name(), Fencing: u.Fencing, Config: c.resourceConfig(u.Resource)})
	}
	if c.cfg.Audit != nil {
		s.Audit = &worker.ResourceSetup{Name: c.cfg.Audit.Name(), Config: c.resourceConfig(c.cfg.Audit)}
	}
	if c.cfg.ClientProgram != nil {
		p := c.cfg.ClientProgram.Program
		s.Program = &p
	}
	return s
}

// reset empties every resource of host (one lock's clients) and the audit
// log.
func (c *Cluster) reset(ctx context.Context, host workloads.Clients) error {
	for _, r := range host.Resources {
		if err := r.Store.Reset(ctx); err != nil {
			return fmt.Errorf("reset %s: %w", r.Name, err)
		}
	}
	if host.Audit != nil {
		if err := host.Audit.Reset(ctx); err != nil {
			return fmt.Errorf("reset the audit log: %w", err)
		}
	}
	return nil
}

// ready returns nil once the lock service and every resource serve.
func (c *Cluster) ready(ctx context.Context) error {
	if err := c.cfg.Target.Ready(ctx, c.Nodes); err != nil {
		return err
	}
	for _, n := range c.cfg.resourceNodes() {
		if err := n.res.Ready(ctx, c.ResourceNodes[n.res.Name()]); err != nil {
			return fmt.Errorf("resource %s: %w", n.res.Name(), err)
		}
	}
	return nil
}

// Connect connects to every worker and sets it up; from then on the workers'
// operations are recorded in rec.
func (c *Cluster) Connect(ctx context.Context, rec *history.Recorder) error {
	if c.cfg.Workload == nil {
		return fmt.Errorf("%w: no workload", targets.ErrBadConfig)
	}
	var ws []*runtime.Container
	for _, ct := range c.rt.Containers() {
		if ct.Role == runtime.RoleWorker {
			ws = append(ws, ct)
		}
	}
	// Process i runs on worker w(i+1).
	sort.Slice(ws, func(i, j int) bool { return workerIndex(ws[i].Name) < workerIndex(ws[j].Name) })
	conns := make([]*worker.Conn, len(ws))
	programs := make([]string, len(ws))
	errs := make([]error, len(ws))
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], programs[i], errs[i] = dialWorker(dctx, w, c.workerSetup(i))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, cn := range conns {
			if cn != nil {
				cn.Close()
			}
		}
		if errors.Is(err, targets.ErrBadConfig) {
			return err // the configuration's, not the harness's: exit 254
		}
		return fmt.Errorf("%w: %w", ErrHarness, err)
	}
	if len(programs) > 0 {
		c.Program = programs[0]
	}
	for i := range ws {
		cl := newClient(ws[i].Name, ws[i], conns[i], rec, c.cfg.Workload, c.onFailpoint)
		cl.lock = c.workerSetup(i).Config.Lock
		c.clients = append(c.clients, cl)
	}
	return nil
}

// workerIndex is the number in a worker's name (w12 -> 12).
func workerIndex(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "w"))
	return n
}

// Host is the harness's own clients of the lock service and the resources
// (resets, final reads, the side writer).
func (c *Cluster) Host() workloads.Clients { return c.hosts[0] }

// Hosts are the harness's own clients of each lock (one set in a run of
// one lock, Host), for each lock's final reads.
func (c *Cluster) Hosts() []workloads.Clients { return c.hosts }

// ClientConfig is the client configuration the workers got.
func (c *Cluster) ClientConfig() targets.ClientConfig { return c.cfg.Client }

// Close disconnects the workers, saves every container's log under logsDir
// (if not empty), and removes the containers and the network. It resumes any
// stopped process first and works even when the run's context is cancelled.
// The Engine stays open: it is the caller's to close (ClusterConfig.Engine).
func (c *Cluster) Close(logsDir string) error {
	for _, cl := range c.clients {
		cl.close()
	}
	if c.closeHost != nil {
		c.closeHost()
		c.closeHost = nil
	}
	err := c.teardown(logsDir)
	c.purge()
	return err
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
	if derr := c.unmountDisks(); derr != nil {
		c.log.Error("lazy disks", "err", derr)
		err = errors.Join(err, derr)
	}
	for _, n := range done.Stuck {
		c.log.Warn("network left", "network", n, "err", runtime.ErrStuckNetwork)
	}
	c.rt = nil
	return err
}

// RunOne runs one operation of the workload on client i, with its work
// time set to work, and waits for its completion (scripted tests use it).
func (c *Cluster) RunOne(ctx context.Context, i int, work time.Duration) error {
	if i < 0 || i >= len(c.clients) {
		return fmt.Errorf("harness: no client %d", i)
	}
	cfg := c.cfg.Config
	cfg.Work = work
	id := c.scripted.Add(1)
	f, v := c.cfg.Workload.Next(rand.New(rand.NewPCG(uint64(id), 0)), cfg, id)
	p, err := c.clients[i].invoke(history.Process(i), id, f, v, &cfg)
	if err != nil {
		return err
	}
	if t := c.clients[i].await(ctx, p, 60*time.Second); t != history.Ok {
		return fmt.Errorf("harness: op %d: %s %s", id, t, p.value)
	}
	return nil
}

// ClientImageOf is what the image of client program p is made of: its
// manifest's image, packages and image_build step, and its directory's
// files (256 MiB at most). The host build step (the manifest's build) is
// the caller's to run first.
func ClientImageOf(p clientproto.ProgramDir) (images.ClientImage, error) {
	ci := images.ClientImage{From: p.Manifest.Image, Packages: p.Manifest.Packages, Build: p.Manifest.ImageBuild}
	files, err := p.Files(clientproto.FilesLimit)
	if err != nil {
		return ci, err
	}
	ci.Files = make(map[string]images.File, len(files))
	for n, f := range files {
		ci.Files[n] = images.File{Data: f.Data, Mode: f.Mode}
	}
	return ci, nil
}
