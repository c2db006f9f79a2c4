package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/targets"
)

// ServeWorker is the worker side of the protocol: `fencecheck worker` in a
// client container. It serves one harness connection at a time until ctx
// ends. lookup finds a target by name.
func ServeWorker(ctx context.Context, ln net.Listener, lookup func(string) (targets.Target, error), log *slog.Logger) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker: accept: %w", err)
		}
		log.Info("harness connected", "from", c.RemoteAddr())
		err = serveConn(ctx, newConn(c), lookup, log)
		c.Close()
		log.Info("harness gone", "err", err)
	}
}

func serveConn(ctx context.Context, c *conn, lookup func(string) (targets.Target, error), log *slog.Logger) error {
	m, err := c.recv()
	if err != nil {
		return err
	}
	if m.Kind != kindSetup || m.Setup == nil {
		return c.send(message{Kind: kindError, Error: "first message must be setup"})
	}
	setup := *m.Setup
	t, err := lookup(setup.Target)
	if err != nil {
		return c.send(message{Kind: kindError, Error: err.Error()})
	}
	w, err := lookupWorkload(setup.Workload)
	if err != nil {
		return c.send(message{Kind: kindError, Error: err.Error()})
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	client, err := t.Dial(dctx, setup.Client)
	cancel()
	if err != nil {
		return c.send(message{Kind: kindError, Error: err.Error()})
	}
	defer client.Close()
	log.Info("set up", "target", setup.Target, "endpoints", setup.Client.Endpoints, "workload", setup.Workload, "config", setup.Config)
	if err := c.send(message{Kind: kindReady}); err != nil {
		return err
	}

	// Operations run one at a time, in order; the connection is read all the
	// while so that a closed connection cancels the running operation.
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	ops := make(chan message, 64)
	readErr := make(chan error, 1)
	var skew atomic.Int64 // the lease clock's offset, set by clock-skew:client
	go func() {
		defer close(ops)
		for {
			m, err := c.recv()
			if err != nil {
				readErr <- err
				stop()
				return
			}
			if m.Kind == kindSkew {
				skew.Store(int64(m.Skew))
				log.Info("lease clock skewed", "offset", m.Skew)
				continue
			}
			if m.Kind != kindOp {
				readErr <- fmt.Errorf("unexpected %q message", m.Kind)
				stop()
				return
			}
			ops <- m
		}
	}()
	for m := range ops {
		cfg := setup.Config
		if m.Override != nil {
			cfg = *m.Override
		}
		id := m.ID
		report := func(phase string, v any) {
			var raw json.RawMessage
			if v != nil {
				raw, _ = json.Marshal(v)
			}
			if err := c.send(message{Kind: kindPhase, ID: id, Phase: phase, Value: raw}); err != nil {
				log.Warn("phase not sent", "op", id, "phase", phase, "err", err)
			}
		}
		env := WorkerEnv{Report: report, Skew: func() time.Duration { return time.Duration(skew.Load()) }}
		typ, done := w.Execute(cctx, client, cfg, m.F, m.Value, env)
		raw, _ := json.Marshal(done)
		log.Info("op", "id", id, "f", m.F, "invoke", string(m.Value), "type", typ, "done", string(raw))
		if err := c.send(message{Kind: kindDone, ID: id, Type: typ, Value: raw}); err != nil {
			return err
		}
	}
	err = <-readErr
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
