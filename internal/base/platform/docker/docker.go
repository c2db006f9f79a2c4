// Package docker is fencecheck's container platform (package runtime's
// interfaces) on the Docker Engine SDK: the one package that talks to the
// Engine.
//
// Connect returns an Engine (runtime.Engine): its images (images.go), the
// runs it makes (NewRun) and the clean-up of what runs left (Clean). A
// Runtime (runtime.Run) owns the containers and the private network of one
// run. Every container and network it creates carries the label
// fencecheck=1 and fencecheck.run=<run id>, so that Clean can find what a
// crashed run left behind and touch nothing else on the machine. Faults
// change a container's network (iptables, tc) from its network helper
// (NetExec), a container of fencecheck's base image in the same network
// namespace, never on the host's firewall and with nothing needed inside
// the container's image. A server or worker runs as its container's PID 1,
// so that signalling the container signals the process itself.
package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// ResponseTimeout bounds how long any Engine call waits for the Engine to
// start answering, once the request is sent. Streams that have begun (image
// builds, waits, logs) are not cut; exec sessions (hijacked connections) are
// not covered and are bounded by their contexts. An engine that accepts calls
// but never answers them (Docker 20.10 was seen deadlocked in libnetwork
// here) then fails a run with an error instead of hanging it. The slowest
// legitimate call is an image import, which answers only once the layer is
// unpacked (seconds for the base image here; slower with the containerd
// image store on slow disks): hence minutes, not seconds.
var ResponseTimeout = 5 * time.Minute

// Engine is a connection to the local Docker Engine: a runtime.Engine.
type Engine struct {
	cli *client.Client
}

var _ runtime.Engine = (*Engine)(nil)

// Connect connects to the local Docker Engine (DOCKER_HOST and the other
// DOCKER_* variables are honoured), with API version negotiation and
// ResponseTimeout, after checking that the engine answers within 10 s;
// else an error wrapping runtime.ErrUnreachable.
func Connect(ctx context.Context) (*Engine, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation(), withResponseTimeout(ResponseTimeout))
	if err != nil {
		return nil, fmt.Errorf("docker %w: %w", runtime.ErrUnreachable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker %w: %w", runtime.ErrUnreachable, err)
	}
	cli.NegotiateAPIVersion(ctx)
	return &Engine{cli: cli}, nil
}

// Close closes the connection.
func (e *Engine) Close() error { return e.cli.Close() }

// NewRun is New, as a runtime.Engine.
func (e *Engine) NewRun(ctx context.Context, runID runtime.RunID, helperImage string) (runtime.Run, error) {
	r, err := New(ctx, e, runID, helperImage)
	if err != nil {
		return nil, err // not a Run holding a nil *Runtime
	}
	return r, nil
}

// withResponseTimeout sets the transport's ResponseHeaderTimeout: the wait
// for the Engine's response headers after the request is written. The
// Engine sends headers before it streams (builds, waits, logs), so long
// streams are not bounded by it. Hijacked connections (exec attach) dial on
// their own and are bounded by their context.
func withResponseTimeout(d time.Duration) client.Opt {
	return func(c *client.Client) error {
		// HTTPClient returns a copy of the client that shares its transport.
		tr, ok := c.HTTPClient().Transport.(*http.Transport)
		if !ok {
			return fmt.Errorf("docker: cannot set a response timeout on a %T transport", c.HTTPClient().Transport)
		}
		tr.ResponseHeaderTimeout = d
		return nil
	}
}

// Runtime creates and removes the containers of one run: a runtime.Run.
type Runtime struct {
	cli     *client.Client
	runID   runtime.RunID
	network string
	subnet  netip.Prefix

	// helperImage is the image of network helpers (NetExec): fencecheck's
	// base image, which has iptables, tc, a shell and sleep; "" for a run
	// with none (NetExec fails with runtime.ErrNoNetHelper).
	helperImage string

	mu         sync.Mutex
	containers []*runtime.Container
	next       map[string]int // role -> containers of that role so far
	helpers    map[string]*helper
}

// helper is a node's network helper and the network namespace it joined.
type helper struct {
	mu    sync.Mutex
	id    string // "" until started
	netns string // "" until it is known to be in its node's namespace
}

var _ runtime.Run = (*Runtime)(nil)

// New makes the run's private bridge network on e and returns its runtime,
// whose network helpers (NetExec) run helperImage. The network's subnet is
// one the Engine picks as free; containers get fixed addresses in it
// (servers from .10, resources from .60, workers from .100), so that a
// server restarted after a crash keeps its address and partition rules stay
// right.
func New(ctx context.Context, e *Engine, runID runtime.RunID, helperImage string) (*Runtime, error) {
	cli := e.cli
	name := "fencecheck-" + runID.String()
	labels := map[string]string{runtime.LabelManaged: "1", runtime.LabelRun: runID.String()}
	// Fixed addresses need a subnet given at creation: let the Engine pick
	// a free one on a probe network, then make the real one with it.
	// Between the probe's removal and the creation, another run's probe
	// may pick the same subnet and take it first: the Engine then says the
	// pool overlaps, and the probe is made again.
	var subnet netip.Prefix
	for attempt := 1; ; attempt++ {
		var err error
		if subnet, err = probeSubnet(ctx, cli, name, labels); err != nil {
			return nil, err
		}
		gw := subnet.Addr().Next()
		_, err = cli.NetworkCreate(ctx, name, network.CreateOptions{
			Driver: "bridge",
			Labels: labels,
			IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet.String(), Gateway: gw.String()}}},
		})
		if err == nil {
			break
		}
		if attempt == subnetAttempts || !strings.Contains(err.Error(), "overlaps") {
			return nil, fmt.Errorf("docker: create network %s on %s: %w", name, subnet, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("docker: create network %s on %s: %w", name, subnet, context.Cause(ctx))
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
	return &Runtime{cli: cli, runID: runID, network: name, subnet: subnet, helperImage: helperImage,
		next: map[string]int{}, helpers: map[string]*helper{}}, nil
}

// subnetAttempts bounds the probes New makes for a free subnet.
const subnetAttempts = 5

// probeSubnet makes a network named name and removes it, returning the
// IPv4 subnet the Engine gave it: one free at that moment.
func probeSubnet(ctx context.Context, cli *client.Client, name string, labels map[string]string) (netip.Prefix, error) {
	probe, err := cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: labels})
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("docker: create network %s: %w", name, err)
	}
	info, err := cli.NetworkInspect(ctx, probe.ID, network.InspectOptions{})
	rmErr := cli.NetworkRemove(ctx, probe.ID)
	if err != nil || rmErr != nil {
		return netip.Prefix{}, fmt.Errorf("docker: probe network %s: %w", name, errors.Join(err, rmErr))
	}
	var subnet netip.Prefix
	for _, c := range info.IPAM.Config {
		if p, err := netip.ParsePrefix(c.Subnet); err == nil && p.Addr().Is4() {
			subnet = p.Masked()
		}
	}
	if !subnet.IsValid() || subnet.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("docker: network %s got no usable IPv4 subnet (%v)", name, info.IPAM.Config)
	}
	return subnet, nil
}

// address returns the next fixed address for a role.
func (r *Runtime) address(role string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := 10
	switch role {
	case runtime.RoleWorker:
		first = 100
	case runtime.RoleResource:
		first = 60
	}
	a := r.subnet.Addr()
	for i := 0; i < first+r.next[role]; i++ {
		a = a.Next()
	}
	r.next[role]++
	return a.String()
}

// Start creates and starts one container on the run's network, with the
// node name as its host name and network alias, at the role's next fixed
// address.
func (r *Runtime) Start(ctx context.Context, s runtime.ContainerSpec) (*runtime.Container, error) {
	return r.start(ctx, s, r.address(s.Role))
}

func (r *Runtime) start(ctx context.Context, s runtime.ContainerSpec, ip string) (*runtime.Container, error) {
	cname := fmt.Sprintf("fencecheck-%s-%s", r.runID, s.Name)
	cfg := &container.Config{
		Image:      s.Image,
		Entrypoint: s.Entrypoint,
		Cmd:        s.Cmd,
		Env:        s.Env,
		Hostname:   s.Name,
		Labels: map[string]string{
			runtime.LabelManaged: "1", runtime.LabelRun: r.runID.String(), runtime.LabelRole: s.Role, runtime.LabelNode: s.Name,
		},
	}
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(r.network),
		// No NET_ADMIN: network faults act from the node's helper.
		LogConfig: container.LogConfig{Type: "json-file"},
	}
	for _, b := range s.Binds {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: b.Host, Target: b.Container})
	}
	netcfg := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		r.network: {Aliases: []string{s.Name}, IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip}},
	}}
	if s.HostNetwork {
		cfg.Hostname, host.NetworkMode, netcfg = "", "host", nil
	}
	var arch io.Reader
	if len(s.Files) > 0 {
		var err error
		if arch, err = tarOf(s.Files); err != nil {
			return nil, fmt.Errorf("docker: files of %s: %w", cname, err)
		}
	}
	created, err := r.cli.ContainerCreate(ctx, cfg, host, netcfg, nil, cname)
	if err != nil {
		return nil, fmt.Errorf("docker: create %s: %w", cname, err)
	}
	c := &runtime.Container{ID: created.ID, Name: s.Name, Role: s.Role}
	r.mu.Lock()
	r.containers = append(r.containers, c)
	r.mu.Unlock()
	if arch != nil {
		if err := r.cli.CopyToContainer(ctx, created.ID, "/", arch, container.CopyToContainerOptions{}); err != nil {
			return nil, fmt.Errorf("docker: copy files into %s: %w", cname, err)
		}
	}
	if err := r.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("docker: start %s: %w", cname, err)
	}
	info, err := r.cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		return nil, fmt.Errorf("docker: inspect %s: %w", cname, err)
	}
	if s.HostNetwork {
		return c, nil
	}
	if ep := info.NetworkSettings.Networks[r.network]; ep != nil {
		c.IP = ep.IPAddress
	}
	if c.IP == "" {
		return nil, fmt.Errorf("docker: %s has no address on %s", cname, r.network)
	}
	return c, nil
}

// tarOf is a tar archive of files, relative to /. It has no entries for
// their directories: the Engine makes those missing (0o755) and leaves
// existing ones as they are (an entry would reset their modes and times).
func tarOf(files []runtime.File) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("file path %q: not a clean absolute path", f.Path)
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: mode, Size: int64(len(f.Data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// StartAll starts the containers concurrently and returns them in order;
// addresses are given in order too.
func (r *Runtime) StartAll(ctx context.Context, specs []runtime.ContainerSpec) ([]*runtime.Container, error) {
	out := make([]*runtime.Container, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	ips := make([]string, len(specs))
	for i, s := range specs {
		ips[i] = r.address(s.Role) // in order, before the concurrent starts
	}
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = r.start(ctx, s, ips[i])
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Containers returns the containers started so far.
func (r *Runtime) Containers() []*runtime.Container {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*runtime.Container(nil), r.containers...)
}

// Signal sends a signal (SIGSTOP, SIGCONT, SIGKILL, ...) to the container's
// PID 1; SIGSTOP and SIGCONT go to every process of the container.
//
// A SIGSTOP returns only once every thread of every process in the
// container is stopped (WaitStopped): kill(2) returns as soon as the
// signal is queued, and a stop takes effect only when each thread next
// passes through the kernel, so a caller that let a frozen client go on
// right after the call (pause-holder's Proceed) could see that client's
// write leave before the stop landed. runtime.ErrNotStopped when that does
// not happen within StopTimeout.
func (r *Runtime) Signal(ctx context.Context, c *runtime.Container, sig string) error {
	if err := r.cli.ContainerKill(ctx, c.ID, sig); err != nil {
		return fmt.Errorf("docker: %s %s: %w", sig, c.Name, err)
	}
	// A pause freezes the whole container: its PID 1 and every other
	// process in it (PostgreSQL's backends, nginx's workers, a user's
	// client program beside the worker).
	if sig != "SIGSTOP" && sig != "SIGCONT" {
		return nil
	}
	pid, err := r.Pid(ctx, c)
	if err != nil || pid == 0 {
		return err
	}
	n := syscall.SIGSTOP
	if sig == "SIGCONT" {
		n = syscall.SIGCONT
	}
	pids, err := namespacePids(pid)
	if err != nil {
		return fmt.Errorf("docker: %s %s: %w", sig, c.Name, err)
	}
	if err := signalPids(pids, pid, n); err != nil {
		return fmt.Errorf("docker: %s %s: %w", sig, c.Name, err)
	}
	if n != syscall.SIGSTOP {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, StopTimeout)
	defer cancel()
	if err := WaitStopped(wctx, pids...); err != nil {
		return fmt.Errorf("docker: %s %s: %w", sig, c.Name, err)
	}
	return nil
}

// StopTimeout bounds how long Signal waits for a SIGSTOP to land on every
// thread of a container (a thread in uninterruptible sleep, waiting on a
// disk, stops only when that ends).
const StopTimeout = 10 * time.Second

// signalPids sends sig to each of pids but skip; processes that ended
// meanwhile are skipped.
func signalPids(pids []int, skip int, sig syscall.Signal) error {
	for _, p := range pids {
		if p == skip {
			continue
		}
		if err := syscall.Kill(p, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %d: %w", p, err)
		}
	}
	return nil
}

// namespacePids lists the host pids of every process in the PID namespace
// of the host process pid, pid included.
func namespacePids(pid int) ([]int, error) {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := []int{pid}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p)); err != nil || other != ns {
			continue
		}
		pids = append(pids, p)
	}
	return pids, nil
}

// WaitStopped waits until every thread of each process in pids is stopped
// (state T or t) or gone (Z, X, or no longer in /proc), polling /proc; it
// returns runtime.ErrNotStopped, naming a thread still running, when ctx
// ends first.
func WaitStopped(ctx context.Context, pids ...int) error {
	delay := 200 * time.Microsecond
	for {
		running := ""
		for _, p := range pids {
			if tid, st := runningThread(p); tid != 0 {
				running = fmt.Sprintf("process %d thread %d in state %s", p, tid, st)
				break
			}
		}
		if running == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", runtime.ErrNotStopped, running)
		case <-time.After(delay):
		}
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// runningThread returns a thread of process pid that is neither stopped
// nor gone, with its state letter, or 0 when there is none.
func runningThread(pid int) (int, string) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, "" // the process is gone
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := statState(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		switch st {
		case "T", "t", "Z", "X", "x":
		default:
			return tid, st
		}
	}
	return 0, ""
}

// Kill sends SIGKILL to the container's process and waits until the
// container has stopped; its file system (and so a server's data) stays. A
// kill begun before ctx's end is carried through past it (the signal within
// 10 s, the wait within 30 s): a signal call cut short may have killed the
// container all the same, and a restart made while that kill was still
// landing left a server down for good (CI: etcd's n2 never ready after a
// kill:one cut short by the time limit).
func (r *Runtime) Kill(ctx context.Context, c *runtime.Container) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	err := r.Signal(sctx, c, "SIGKILL")
	scancel()
	if err != nil {
		return err
	}
	// The SIGKILL is delivered: the container dies whatever ctx does
	// now, so the wait for it is not cut short by ctx's end (a run's
	// time limit arriving while a loaded Engine reaps it), only bounded.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	okc, errc := r.cli.ContainerWait(wctx, c.ID, container.WaitConditionNotRunning)
	select {
	case <-okc:
		return nil
	case err := <-errc:
		return fmt.Errorf("docker: wait for %s to stop: %w", c.Name, err)
	}
}

// Restart starts a stopped container again, on its own file system and at
// its fixed address, and replaces its network helper, if it had one.
func (r *Runtime) Restart(ctx context.Context, c *runtime.Container) error {
	if err := r.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("docker: restart %s: %w", c.Name, err)
	}
	r.mu.Lock()
	h := r.helpers[c.Name]
	r.mu.Unlock()
	if h != nil {
		// It had a network helper: one in the new namespace now, so the
		// next fault does not wait for it. Failing here is not the
		// restart's failure: NetExec tries again.
		h.mu.Lock()
		_ = r.ensureHelper(ctx, c, h)
		h.mu.Unlock()
	}
	return nil
}

// Pid returns the host pid of the container's process (0 when it does not
// run).
func (r *Runtime) Pid(ctx context.Context, c *runtime.Container) (int, error) {
	info, err := r.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return 0, fmt.Errorf("docker: inspect %s: %w", c.Name, err)
	}
	if info.State == nil {
		return 0, nil
	}
	return info.State.Pid, nil
}

// ProcessState returns the state letter of the container's PID 1 as the
// host's /proc shows it (R, S, T, Z, ...), or "" when it is not running.
func (r *Runtime) ProcessState(ctx context.Context, c *runtime.Container) (string, error) {
	info, err := r.cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return "", fmt.Errorf("docker: inspect %s: %w", c.Name, err)
	}
	if info.State == nil || info.State.Pid == 0 {
		return "", nil
	}
	return ProcState(info.State.Pid)
}

// ProcState reads a host process's state letter from /proc/PID/stat.
func ProcState(pid int) (string, error) {
	return statState(fmt.Sprintf("/proc/%d/stat", pid))
}

// statState reads the state letter from a /proc stat file.
func statState(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	// pid (comm) S ...: comm may hold spaces, so cut after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "", fmt.Errorf("docker: malformed %s", path)
	}
	return string(b[i+2]), nil
}

// SaveLogs writes the container's output (stdout and stderr, interleaved as
// the Engine kept them) to path.
func (r *Runtime) SaveLogs(ctx context.Context, c *runtime.Container, path string) error {
	rc, err := r.cli.ContainerLogs(ctx, c.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
	if err != nil {
		return fmt.Errorf("docker: logs of %s: %w", c.Name, err)
	}
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := stdcopy.StdCopy(f, f, rc); err != nil {
		return fmt.Errorf("docker: logs of %s: %w", c.Name, err)
	}
	return nil
}

// cpuPeriod is the CFS period a CPU quota is set in: 100 ms, the kernel's
// default.
const cpuPeriod = 100_000

// LimitCPU caps the container's CPU time at cpus cores (0.02: 2 % of one
// core) through the Engine's update API (a CFS quota per 100 ms period);
// cpus 0 lifts the cap. The container keeps running; its processes get
// that much CPU and wait for the rest.
func (r *Runtime) LimitCPU(ctx context.Context, c *runtime.Container, cpus float64) error {
	quota := int64(-1) // unlimited
	if cpus > 0 {
		quota = max(int64(cpus*cpuPeriod), 1000) // the kernel's least: 1 ms
	}
	_, err := r.cli.ContainerUpdate(ctx, c.ID, container.UpdateConfig{Resources: container.Resources{CPUPeriod: cpuPeriod, CPUQuota: quota}})
	if err != nil {
		return fmt.Errorf("docker: limit the CPU of %s: %w", c.Name, err)
	}
	return nil
}

// CPUTime is the CPU time every process of the container has used so far,
// as its cgroup counts it (the Engine's stats).
func (r *Runtime) CPUTime(ctx context.Context, c *runtime.Container) (time.Duration, error) {
	st, err := r.cli.ContainerStatsOneShot(ctx, c.ID)
	if err != nil {
		return 0, fmt.Errorf("docker: stats of %s: %w", c.Name, err)
	}
	defer st.Body.Close()
	var v container.StatsResponse
	if err := json.NewDecoder(st.Body).Decode(&v); err != nil {
		return 0, fmt.Errorf("docker: stats of %s: %w", c.Name, err)
	}
	return time.Duration(v.CPUStats.CPUUsage.TotalUsage), nil
}

// LogLines returns the container's log lines (stdout and stderr) written
// since the given time, each prefixed by the time the engine received it
// (RFC 3339 with nanoseconds, then a space).
func (r *Runtime) LogLines(ctx context.Context, c *runtime.Container, since time.Time) ([]string, error) {
	rc, err := r.cli.ContainerLogs(ctx, c.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true,
		Timestamps: true, Since: strconv.FormatInt(since.Unix(), 10)})
	if err != nil {
		return nil, fmt.Errorf("docker: logs of %s: %w", c.Name, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return nil, fmt.Errorf("docker: logs of %s: %w", c.Name, err)
	}
	return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n"), nil
}

// Exec runs a command in the container and returns its combined output; a
// non-zero exit is an error that includes the output.
func (r *Runtime) Exec(ctx context.Context, c *runtime.Container, cmd ...string) (string, error) {
	ex, err := r.cli.ContainerExecCreate(ctx, c.ID, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", fmt.Errorf("docker: exec in %s: %w", c.Name, err)
	}
	att, err := r.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", fmt.Errorf("docker: exec in %s: %w", c.Name, err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil && !errors.Is(err, io.EOF) {
		return out.String(), fmt.Errorf("docker: exec in %s: %w", c.Name, err)
	}
	st, err := r.cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return out.String(), fmt.Errorf("docker: exec in %s: %w", c.Name, err)
	}
	if st.ExitCode != 0 {
		return out.String(), fmt.Errorf("docker: %s in %s exited %d: %s", strings.Join(cmd, " "), c.Name, st.ExitCode, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// NetExec runs a command in c's network namespace, in c's network helper: a
// container of the helper image that joined the namespace (network mode
// container:ID, with NET_ADMIN) and only sleeps. So a fault changes a node's
// network (iptables, tc) with nothing inside the node's image: no shell, no
// iptables, as in a distroless or FROM-scratch image. The helper starts on
// first use and is replaced when c was restarted since, because a restarted
// container gets a fresh namespace (and the old one's rules went with it).
// It carries the run's labels, so Teardown and Clean remove it. c must be
// running.
func (r *Runtime) NetExec(ctx context.Context, c *runtime.Container, cmd ...string) (string, error) {
	if c.IP == "" {
		// A node on the host's network (Spec.HostNetwork): its helper
		// would change the host's own firewall.
		return "", fmt.Errorf("docker: %s is on the host's network: no network command runs in its namespace", c.Name)
	}
	h := r.helperOf(c.Name)
	// Held through the exec: a helper replaced meanwhile would otherwise
	// take the rules into a namespace that is gone.
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := r.ensureHelper(ctx, c, h); err != nil {
		return "", err
	}
	return r.Exec(ctx, &runtime.Container{ID: h.id, Name: c.Name + "'s network helper"}, cmd...)
}

// WarmHelpers starts the network helpers of cs at once, so that a network
// fault's first rules do not wait for container starts, one node after
// another, inside the fault's window.
func (r *Runtime) WarmHelpers(ctx context.Context, cs []*runtime.Container) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := r.helperOf(c.Name)
			h.mu.Lock()
			defer h.mu.Unlock()
			errs[i] = r.ensureHelper(ctx, c, h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// helperOf is the helper record of a node (made empty on first use).
func (r *Runtime) helperOf(node string) *helper {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.helpers == nil {
		r.helpers = map[string]*helper{}
	}
	h := r.helpers[node]
	if h == nil {
		h = &helper{}
		r.helpers[node] = h
	}
	return h
}

// netns is the network namespace of a running container's process, as the
// host's /proc names it ("net:[4026532]").
func (r *Runtime) netns(ctx context.Context, id, name string) (string, error) {
	pid, err := r.Pid(ctx, &runtime.Container{ID: id, Name: name})
	if err != nil {
		return "", err
	}
	if pid == 0 {
		return "", fmt.Errorf("docker: %s is not running", name)
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return "", fmt.Errorf("docker: network namespace of %s: %w", name, err)
	}
	return ns, nil
}

// ensureHelper makes h, held by the caller, c's network helper in c's
// current namespace: it starts one, or replaces one whose namespace is gone
// (c restarted). A restart of c while the helper starts is retried once.
func (r *Runtime) ensureHelper(ctx context.Context, c *runtime.Container, h *helper) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var again bool
		if again, err = r.startHelper(ctx, c, h); !again {
			return err
		}
	}
	return err
}

// startHelper is one attempt of ensureHelper; again reports that c
// restarted while its helper started.
func (r *Runtime) startHelper(ctx context.Context, c *runtime.Container, h *helper) (again bool, err error) {
	ns, err := r.netns(ctx, c.ID, c.Name)
	if err != nil {
		return false, err
	}
	if h.id != "" && h.netns == ns {
		return false, nil
	}
	if r.helperImage == "" {
		return false, fmt.Errorf("docker: %s: %w", c.Name, runtime.ErrNoNetHelper)
	}
	cname := fmt.Sprintf("fencecheck-%s-%s-net", r.runID, c.Name)
	if h.id != "" {
		// c restarted: its old namespace is gone, and the helper with it.
		if err := r.cli.ContainerRemove(ctx, h.id, container.RemoveOptions{Force: true}); err != nil && !client.IsErrNotFound(err) {
			return false, fmt.Errorf("docker: remove %s: %w", cname, err)
		}
		h.id, h.netns = "", ""
	}
	cfg := &container.Config{
		Image:      r.helperImage,
		Entrypoint: []string{"sleep"},
		Cmd:        []string{"infinity"},
		Labels: map[string]string{
			runtime.LabelManaged: "1", runtime.LabelRun: r.runID.String(), runtime.LabelRole: runtime.RoleNet, runtime.LabelNode: c.Name,
		},
	}
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode("container:" + c.ID),
		CapAdd:      []string{"NET_ADMIN", "NET_RAW"},
		LogConfig:   container.LogConfig{Type: "json-file"},
	}
	created, err := r.cli.ContainerCreate(ctx, cfg, host, nil, nil, cname)
	if err != nil {
		return false, fmt.Errorf("docker: create %s: %w", cname, err)
	}
	h.id = created.ID
	if err := r.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return false, fmt.Errorf("docker: start %s: %w", cname, err)
	}
	got, err := r.netns(ctx, created.ID, cname)
	if err != nil {
		return false, err
	}
	if got != ns {
		// h.netns stays empty: the next attempt replaces the helper.
		return true, fmt.Errorf("docker: %s restarted while its network helper started", c.Name)
	}
	h.netns = ns
	return false, nil
}

// Teardown resumes any stopped process, then removes every container of the
// run and its network, and says what it removed. It uses its own deadline,
// so that it still works when the run's context was cancelled (Ctrl-C).
func (r *Runtime) Teardown() (runtime.Cleaned, error) {
	// Two minutes: containers are removed one at a time (clean), each
	// a second or more on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return clean(ctx, r.cli, runFilter(r.runID))
}

// Clean removes every container and network labelled fencecheck=1 on this
// Engine, from any run, after sending SIGCONT to each container so that no
// process stays stopped. It touches nothing without the label, but for
// disconnecting a container from a labelled network it removes. Networks
// the Engine will not let go of (runtime.ErrStuckNetwork) are listed in Stuck.
func (e *Engine) Clean(ctx context.Context) (runtime.Cleaned, error) {
	return clean(ctx, e.cli, filters.NewArgs(filters.Arg("label", runtime.LabelManaged+"=1")))
}

// CleanRun is Clean for one run.
func (e *Engine) CleanRun(ctx context.Context, runID runtime.RunID) (runtime.Cleaned, error) {
	return clean(ctx, e.cli, runFilter(runID))
}

// runFilter selects what fencecheck made for one run.
func runFilter(runID runtime.RunID) filters.Args {
	return filters.NewArgs(
		filters.Arg("label", runtime.LabelManaged+"=1"),
		filters.Arg("label", runtime.LabelRun+"="+runID.String()))
}

// Object is a container or a network as the Engine lists it.
type Object struct {
	ID     string
	Name   string // a container's names, joined by ","
	State  string // a container's: "running", "exited", ...; a network's: ""
	Labels map[string]string
}

// LabelledContainers lists the containers, running or not, that carry
// label (KEY or KEY=VALUE): what tests check is gone.
func (e *Engine) LabelledContainers(ctx context.Context, label string) ([]Object, error) {
	cs, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	out := make([]Object, len(cs))
	for i, c := range cs {
		out[i] = Object{ID: c.ID, Name: strings.Join(c.Names, ","), State: c.State, Labels: c.Labels}
	}
	return out, nil
}

// LabelledNetworks lists the networks that carry label (KEY or KEY=VALUE).
func (e *Engine) LabelledNetworks(ctx context.Context, label string) ([]Object, error) {
	ns, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("docker: list networks: %w", err)
	}
	out := make([]Object, len(ns))
	for i, n := range ns {
		out[i] = Object{ID: n.ID, Name: n.Name, Labels: n.Labels}
	}
	return out, nil
}

func clean(ctx context.Context, cli *client.Client, f filters.Args) (runtime.Cleaned, error) {
	var done runtime.Cleaned
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return done, fmt.Errorf("docker: list containers: %w", err)
	}
	var errs []error
	// One container at a time, not all at once: Docker 20.10 deadlocks
	// its network controller when a container leaves a network (its
	// sandbox takes the network's lock, then the controller's) while the
	// controller's watch loop handles another endpoint of the same network
	// leaving (the controller's lock, then the network's). Removing a
	// run's containers together made that overlap likely: seen here, with
	// every network call and removal hanging from then on, until the
	// Engine restarts. One at a time, each leave is handled before the
	// next begins.
	for _, c := range cs {
		if c.State == "running" {
			// A stopped process would otherwise stay in state T until
			// the kill below; resuming first keeps the order clean.
			_ = cli.ContainerKill(ctx, c.ID, "SIGCONT")
		}
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("docker: remove %s: %w", strings.Join(c.Names, ","), err))
			continue
		}
		done.Containers++
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return done, errors.Join(append(errs, fmt.Errorf("docker: list networks: %w", err))...)
	}
	for _, n := range ns {
		if err := removeNetwork(ctx, cli, n.ID); errors.Is(err, runtime.ErrStuckNetwork) {
			done.Stuck = append(done.Stuck, n.Name)
			continue
		} else if err != nil {
			errs = append(errs, fmt.Errorf("docker: remove network %s: %w", n.Name, err))
			continue
		}
		done.Networks++
	}
	return done, errors.Join(errs...)
}

// removeNetwork removes a network whose containers are gone. An endpoint
// can outlive its container for a moment; the removal is tried again for up
// to 5 s, and endpoints the Engine still lists are disconnected by force,
// by name. A network that still cannot be removed though nothing is attached
// gives runtime.ErrStuckNetwork.
func removeNetwork(ctx context.Context, cli *client.Client, id string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := cli.NetworkRemove(ctx, id)
		if err == nil || client.IsErrNotFound(err) {
			return nil
		}
		if !strings.Contains(err.Error(), "active endpoints") {
			return err
		}
		info, ierr := cli.NetworkInspect(ctx, id, network.InspectOptions{})
		if ierr != nil {
			return errors.Join(err, ierr)
		}
		if time.Now().After(deadline) {
			if len(info.Containers) == 0 {
				return fmt.Errorf("%w: %w", runtime.ErrStuckNetwork, err)
			}
			return err
		}
		for cid, ep := range info.Containers {
			name := ep.Name
			if name == "" {
				name = cid
			}
			_ = cli.NetworkDisconnect(ctx, id, name, true)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}
