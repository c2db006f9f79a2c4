package harness

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
)

// sideWriter runs the workload's side writer from the harness until ctx
// ends: a batch every cfg.SideWriterInterval, each recorded as an operation
// of process history.SideWriter (the next one after an info). Its elements
// come from the generator's counter, so they are unique in the run.
func sideWriter(ctx context.Context, host workloads.Clients, gen *generator, rec *history.Recorder, cfg Config, log *slog.Logger) {
	sw, ok := cfg.Workload.(workloads.SideWriting)
	if !ok {
		return
	}
	p := history.SideWriter
	r := rand.New(rand.NewPCG(cfg.Seed, uint64(p)))
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(cfg.SideWriterInterval):
		}
		id := gen.n.Add(1)
		f, inv := cfg.Workload.Next(r, gen.cfg, id)
		rec.Record(p, history.Invoke, f, inv)
		// The batch runs to its end even past the time limit, as a
		// client's operation does.
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.OpTimeout)
		t, done := sw.SideWrite(octx, host, id)
		cancel()
		rec.Record(p, t, f, done)
		log.Debug("side writer", "element", id, "type", t)
		if t == history.Info {
			p++
		}
	}
}
