package harness

// The cluster as the faults see it: nemesisEnv, the nemesis.Env adapter of
// a Cluster. Its nodes by name, their processes, network and clocks, and
// the holders its workers hand over at their failpoints (ArmHolder,
// NextHolder). The engine's set-up, runs and teardown are cluster.go's.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/platform/netdelay"
	"github.com/fencecheck/fencecheck/internal/base/platform/vdso"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/targets"
)

// onFailpoint hands a client waiting at its failpoint to the fault that
// waits for a holder, if one does; else it lets the client go on at once.
func (e nemesisEnv) onFailpoint(cl *client, p history.Process, id, token int64) {
	c := e.c
	c.mu.Lock()
	ws := c.waiters
	c.waiters = nil
	c.mu.Unlock()
	if len(ws) == 0 {
		cl.proceed(id)
		return
	}
	var once sync.Once
	proceed := func() bool {
		ok := false
		once.Do(func() {
			// Still waiting unless the worker said it gave up.
			ok = !cl.gaveUp(id) && cl.proceed(id)
		})
		return ok
	}
	h := nemesis.Holder{Node: cl.name, Process: p, Token: token, Proceed: proceed}
	ws[0] <- h
	// Only one fault takes a holder; the others wait for the next.
	c.mu.Lock()
	c.waiters = append(ws[1:], c.waiters...)
	c.mu.Unlock()
}

// Lease is the longest the lock stays unavailable after its holder's last
// renewal (nemesis.Env).
func (e nemesisEnv) Lease() time.Duration { return targets.MaxLease(e.c.cfg.Target, e.c.cfg.Client) }

// NextHolder waits for the next client to reach its failpoint
// (nemesis.Env). The client waits there until the holder's Proceed.
func (e nemesisEnv) NextHolder(ctx context.Context) (nemesis.Holder, error) {
	c := e.c
	ch := c.ArmHolder()
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
		// A holder handed over meanwhile must not wait forever.
		select {
		case h := <-ch:
			h.Proceed()
		default:
		}
		return nemesis.Holder{}, ctx.Err()
	}
}

// ArmHolder registers a wait for the next client to reach its failpoint;
// the holder arrives on the channel (and waits there until its Proceed).
// Scripted runs arm before they invoke the operation they want to catch.
func (e nemesisEnv) ArmHolder() chan nemesis.Holder {
	c := e.c
	ch := make(chan nemesis.Holder, 1)
	c.mu.Lock()
	c.waiters = append(c.waiters, ch)
	c.mu.Unlock()
	return ch
}

// TTL is the lease TTL (nemesis.Env).
func (e nemesisEnv) TTL() time.Duration { return e.c.cfg.Client.TTL }

// Servers are the server nodes' names (nemesis.Env).
func (e nemesisEnv) Servers() []string {
	c := e.c
	if c.foreign != nil {
		// Attached servers: no container, but the client-side faults
		// cut the holder off from them (Addr).
		names := make([]string, len(c.Nodes))
		for i, n := range c.Nodes {
			names[i] = n.Name
		}
		return names
	}
	names := make([]string, len(c.servers))
	for i, s := range c.servers {
		names[i] = s.Name
	}
	return names
}

// Tier is a server's tier (nemesis.Env): its NodeSpec's.
func (e nemesisEnv) Tier(node string) string {
	for _, n := range e.c.Nodes {
		if n.Name == node {
			return n.Tier
		}
	}
	return ""
}

// Resources are the nodes that faults with the resource scope hit: each
// resource's first container (nemesis.Env).
func (e nemesisEnv) Resources() []string {
	c := e.c
	var names []string
	for _, n := range c.cfg.resourceNodes() {
		if ns := c.ResourceNodes[n.res.Name()]; len(ns) > 0 && !slices.Contains(names, ns[0].Name) {
			names = append(names, ns[0].Name)
		}
	}
	return names
}

// Clients are the worker nodes' names (nemesis.Env).
func (e nemesisEnv) Clients() []string {
	c := e.c
	names := make([]string, len(c.clients))
	for i, cl := range c.clients {
		names[i] = cl.name
	}
	return names
}

// Healthy waits until every server and every resource serves
// (nemesis.Env).
func (e nemesisEnv) Healthy(ctx context.Context) error {
	c := e.c
	return c.ready(ctx)
}

func (e nemesisEnv) node(name string) (*runtime.Container, error) {
	c := e.c
	ct, ok := c.byNode[name]
	if _, foreign := c.foreign[name]; foreign {
		return nil, fmt.Errorf("harness: server %s is not fencecheck's (--endpoints): nothing acts on it", name)
	}
	if !ok {
		return nil, fmt.Errorf("harness: no node %q", name)
	}
	return ct, nil
}

// Signal signals a node's process (nemesis.Env).
func (e nemesisEnv) Signal(ctx context.Context, node, sig string) error {
	c := e.c
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	return c.rt.Signal(ctx, ct, sig)
}

// Kill kills a node's container with SIGKILL and waits until it stopped
// (nemesis.Env). For a client it then ends the harness's connection to the
// worker, so that the operation in flight completes info at once (whether
// or not the peer's end of the connection was seen to close) and the
// client is dead until Restart.
func (e nemesisEnv) Kill(ctx context.Context, node string) error {
	c := e.c
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	err = c.rt.Kill(ctx, ct)
	if cl := c.client(node); cl != nil {
		cl.close()
	}
	return err
}

// Restart starts a killed node's container again, on its file system and
// at its address (nemesis.Env). For a client it then connects to the new
// worker and sets it up, like Connect; the generator continues on it under
// a fresh process.
func (e nemesisEnv) Restart(ctx context.Context, node string) error {
	c := e.c
	ct, err := c.node(node)
	if err != nil {
		return err
	}
	if err := c.rt.Restart(ctx, ct); err != nil {
		return err
	}
	cl := c.client(node)
	if cl == nil || !cl.isDead() {
		return nil // not a client, or one whose kill never took
	}
	cn, _, err := dialWorker(ctx, ct, c.workerSetup(workerIndex(ct.Name)-1))
	if err != nil {
		return fmt.Errorf("harness: reconnect %s: %w", node, err)
	}
	cl.revive(cn)
	return nil
}

// client is the harness's client of a worker node, nil for other nodes.
func (e nemesisEnv) client(node string) *client {
	c := e.c
	for _, cl := range c.clients {
		if cl.name == node {
			return cl
		}
	}
	return nil
}

// Exec runs a command in a node's container: it needs the tool in the
// node's image (faults use NetExec instead).
func (e nemesisEnv) Exec(ctx context.Context, node string, cmd ...string) (string, error) {
	c := e.c
	ct, err := c.node(node)
	if err != nil {
		return "", err
	}
	return c.rt.Exec(ctx, ct, cmd...)
}

// NetExec runs a command in a node's network namespace, from the node's
// network helper (runtime.Commands.NetExec), so that it needs nothing in the
// node's image (nemesis.Env).
func (e nemesisEnv) NetExec(ctx context.Context, node string, cmd ...string) (string, error) {
	c := e.c
	ct, err := c.node(node)
	if err != nil {
		return "", err
	}
	return c.rt.NetExec(ctx, ct, cmd...)
}

// WarmNet starts the network helpers of the nodes at once (see
// runtime.Commands.WarmHelpers), before a schedule whose faults will change
// their network.
func (e nemesisEnv) WarmNet(ctx context.Context, nodes []string) error {
	c := e.c
	var cs []*runtime.Container
	for _, n := range nodes {
		ct, err := c.node(n)
		if err != nil {
			return err
		}
		cs = append(cs, ct)
	}
	return c.rt.WarmHelpers(ctx, cs)
}

// Addr is a node's address (nemesis.Env).
func (e nemesisEnv) Addr(node string) string {
	c := e.c
	if ct, ok := c.byNode[node]; ok {
		return ct.IP
	}
	return c.foreign[node]
}

// Shape gives every packet a node sends the treatment p says, through a
// netfilter queue the harness serves (nemesis.Env).
func (e nemesisEnv) Shape(ctx context.Context, node string, p netdelay.Policy) error {
	c := e.c
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
		return fmt.Errorf("harness: %s is shaped already", node)
	}
	d, err := netdelay.Start(pid, 0, p, uint64(pid))
	if err != nil {
		return err
	}
	if _, err := c.rt.NetExec(ctx, ct, "sh", "-c", "iptables -w -A "+netdelay.Rule(0)); err != nil {
		return errors.Join(err, d.Stop())
	}
	c.mu.Lock()
	c.delayers[node] = d
	c.mu.Unlock()
	return nil
}

// Unshape ends a node's shaping: the rule goes, then every held packet is
// released (nemesis.Env).
func (e nemesisEnv) Unshape(ctx context.Context, node string) (netdelay.Counts, error) {
	c := e.c
	c.mu.Lock()
	d := c.delayers[node]
	delete(c.delayers, node)
	c.mu.Unlock()
	if d == nil {
		return netdelay.Counts{}, nil
	}
	ct, err := c.node(node)
	if err != nil {
		return d.Counts(), errors.Join(err, d.Stop())
	}
	_, err = c.rt.NetExec(ctx, ct, "sh", "-c", "iptables -w -D "+netdelay.Rule(0))
	err = errors.Join(err, d.Stop())
	return d.Counts(), err
}

// SkewProcessClock sets the wall-clock offset of a node's processes by
// patching their vDSO; 0 restores the true clock (nemesis.Env).
func (e nemesisEnv) SkewProcessClock(ctx context.Context, node string, offset time.Duration) error {
	return e.eachProcess(ctx, node, func(pid int) error {
		if offset == 0 {
			return vdso.Reset(pid)
		}
		return vdso.SetOffset(pid, offset)
	})
}

// RateProcessClock sets the rate of a node's processes' clocks by patching
// their vDSO; 1 makes them true again (nemesis.Env).
func (e nemesisEnv) RateProcessClock(ctx context.Context, node string, rate float64) error {
	return e.eachProcess(ctx, node, func(pid int) error {
		if rate == 1 {
			return vdso.Reset(pid)
		}
		return vdso.SetRate(pid, rate)
	})
}

// eachProcess calls f on the process of a node's container and on every
// process it started (a client program under the worker), as the host sees
// their pids.
func (e nemesisEnv) eachProcess(ctx context.Context, node string, f func(pid int) error) error {
	c := e.c
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
	var errs []error
	for _, p := range descendants(pid) {
		if err := f(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s: process %d: %w", node, p, err))
		}
	}
	return errors.Join(errs...)
}

// descendants is pid and every process below it, parents first, from
// /proc/PID/task/TID/children.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", out[i]))
		for _, t := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", out[i], t.Name()))
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil && !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// SkewClientClock sets a client's lease-clock offset (nemesis.Env).
func (e nemesisEnv) SkewClientClock(ctx context.Context, node string, offset time.Duration) error {
	c := e.c
	if cl := c.client(node); cl != nil {
		return cl.send(worker.Message{Kind: worker.KindSkew, Skew: offset})
	}
	return fmt.Errorf("harness: no client %q", node)
}

// LimitCPU caps a node's container's CPU time (nemesis.Env).
func (e nemesisEnv) LimitCPU(ctx context.Context, node string, cpus float64) error {
	ct, err := e.node(node)
	if err != nil {
		return err
	}
	return e.c.rt.LimitCPU(ctx, ct, cpus)
}

// CPUTime is the CPU time a node's container has used (nemesis.Env).
func (e nemesisEnv) CPUTime(ctx context.Context, node string) (time.Duration, error) {
	ct, err := e.node(node)
	if err != nil {
		return 0, err
	}
	return e.c.rt.CPUTime(ctx, ct)
}

// ProcessState returns the state letter of a node's process (R, S, T, ...).
func (e nemesisEnv) ProcessState(ctx context.Context, node string) (string, error) {
	c := e.c
	ct, ok := c.byNode[node]
	if !ok {
		return "", fmt.Errorf("harness: no node %q", node)
	}
	return c.rt.ProcessState(ctx, ct)
}

// Leader is the node that leads now.
func (e nemesisEnv) Leader(ctx context.Context) (string, error) {
	c := e.c
	return c.cfg.Target.Leader(ctx, c.Nodes)
}

// leaderAsker is how the leader watch asks the cluster's target for its
// leader: through the target's own asker where it has one
// (targets.LeaderAsker: one client for the whole watch), else Leader.
// done releases the asker.
func (c *Cluster) leaderAsker(ctx context.Context) (ask func(context.Context) (string, error), done func()) {
	if a, ok := c.cfg.Target.(targets.LeaderAsker); ok {
		if ask, done, err := a.LeaderAsker(ctx, c.Nodes); err == nil {
			return ask, done
		}
	}
	return c.Leader, func() {}
}

// nemesisEnv is the nemesis.Env of the cluster it points to; a Cluster
// embeds its own, so that it is a nemesis.Env itself.
type nemesisEnv struct{ c *Cluster }

var (
	_ nemesis.Env = nemesisEnv{}
	_ nemesis.Env = (*Cluster)(nil)
)
