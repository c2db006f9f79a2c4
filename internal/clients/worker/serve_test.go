package worker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// A harness of another protocol version gets an error naming both versions
// (and what to do) in answer to its setup, before the worker dials
// anything.
func TestSetupOfAnotherProtocolRefused(t *testing.T) {
	dialled := false
	cat := Catalog{
		Target: func(string) (targets.Target, error) { dialled = true; return nil, targets.ErrBadConfig },
		Workload: func(string) (workloads.Workload, error) {
			dialled = true
			return nil, targets.ErrBadConfig
		},
		Resource: func(string) (resources.Resource, error) { dialled = true; return nil, targets.ErrBadConfig },
	}
	for _, tc := range []struct {
		name     string
		protocol int
	}{{"a harness without a version", 0}, {"a newer harness", Protocol + 1}} {
		t.Run(tc.name, func(t *testing.T) {
			h, w := net.Pipe()
			defer h.Close()
			done := make(chan error, 1)
			go func() {
				defer w.Close()
				done <- serveConn(context.Background(), NewConn(w), cat, slog.New(slog.NewTextHandler(io.Discard, nil)))
			}()
			hc := NewConn(h)
			h.SetDeadline(time.Now().Add(5 * time.Second))
			if err := hc.Send(Message{Kind: KindSetup, Protocol: tc.protocol, Setup: &Setup{Target: "etcd", Workload: "lock-append"}}); err != nil {
				t.Fatal(err)
			}
			m, err := hc.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != KindError || !strings.Contains(m.Error, "protocol") || !strings.Contains(m.Error, "make build") {
				t.Errorf("got %+v, want an error about the protocol", m)
			}
			if err := <-done; err != nil {
				t.Errorf("serveConn: %v", err)
			}
			if dialled {
				t.Error("the worker looked up the run's parts before refusing the setup")
			}
		})
	}
}
