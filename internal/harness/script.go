package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/targets"
)

// What scripted runs (package scenarios: the demos, the regression
// scenarios) need of a cluster beyond a run's: its clients one operation
// at a time, a fresh start of its workers per story, the armed waits for a
// holder withdrawn. The engine knows no script.

// ScriptedClient is the harness's client of worker i, driven one
// operation at a time by a script (Cluster.Scripted).
type ScriptedClient struct{ c *client }

// Pending is an operation a script invoked, until and after its
// completion.
type Pending struct{ p *pending }

// Completion decodes the recorded completion value into v (the
// workload's completion type); call it after Await.
func (p *Pending) Completion(v any) error { return p.p.completion(v) }

// Scripted is the client of worker i (0-based; process i runs on it), or
// an error when there is none (Connect not called, or fewer workers).
func (c *Cluster) Scripted(i int) (ScriptedClient, error) {
	if i < 0 || i >= len(c.clients) {
		return ScriptedClient{}, fmt.Errorf("%w: no client %d of %d", ErrHarness, i, len(c.clients))
	}
	return ScriptedClient{c.clients[i]}, nil
}

// Name is the worker's node name (w1, w2, ...).
func (s ScriptedClient) Name() string { return s.c.name }

// Invoke records the invocation of operation f with value as process p and
// op id, and sends it to the worker, with override (if not nil) in place
// of the run's workload configuration. The worker must be idle (its last
// operation awaited). A send that fails records the operation info and
// returns it still.
func (s ScriptedClient) Invoke(p history.Process, id int64, f string, value any, override *workloads.Config) (*Pending, error) {
	pend, err := s.c.invoke(p, id, f, value, override)
	if err != nil {
		return nil, err
	}
	return &Pending{pend}, nil
}

// Await waits for p's completion for at most timeout (or until ctx ends),
// records it info if none came, and returns the completion's type.
func (s ScriptedClient) Await(ctx context.Context, p *Pending, timeout time.Duration) history.Type {
	return s.c.await(ctx, p.p, timeout)
}

// Reconnect begins a story afresh on the same servers: it disconnects the
// workers, resets every resource and the audit log, and connects the
// workers again with workload configuration work and the run's first
// resource fenced with f, recording into rec from then on. Errors wrap
// ErrHarness, or targets.ErrBadConfig for a configuration the workers
// refuse.
func (c *Cluster) Reconnect(ctx context.Context, rec *history.Recorder, work workloads.Config, f targets.Fencing) error {
	if err := c.reset(ctx, c.Host()); err != nil {
		return fmt.Errorf("%w: reset: %w", ErrHarness, err)
	}
	for _, cl := range c.clients {
		cl.close()
	}
	c.clients = nil
	work.Fencings = map[string]targets.Fencing{c.cfg.Resources[0].Resource.Name(): f}
	c.cfg.Config = work
	c.cfg.Resources[0].Fencing = f
	c.setup = c.newSetup()
	return c.Connect(ctx, rec)
}

// Disarm withdraws every armed wait for a holder (ArmHolder); a holder
// already handed to one goes on. A script disarms before it plays a story
// again.
func (c *Cluster) Disarm() {
	c.mu.Lock()
	ws := c.waiters
	c.waiters = nil
	c.mu.Unlock()
	for _, w := range ws {
		select {
		case h := <-w:
			h.Proceed()
		default:
		}
	}
}

// TargetVersion is the version the servers run: the target's own, or
// what the servers of a user's image (TargetImage) said (ServerVersion).
func (c *Cluster) TargetVersion() string {
	return targetVersion(c.cfg.Target, c.cfg.TargetImage, c.foreign != nil, c)
}
