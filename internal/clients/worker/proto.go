// Package worker is what runs inside a worker container: the server side of
// the worker protocol (Serve), its messages (shared with the harness's
// client side, package harness), and the commands of the worker binary
// (worker, proxy, client-probe; Main). It links no Docker SDK and no
// report, only the targets', resources' and workloads' client code, so the
// worker binary (cmd/fencecheck-worker) stays small and its image's tag
// changes only when that code does (TestWorkerDeps).
package worker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// The worker protocol: JSON objects, one a line, over one TCP connection
// that the harness opens to each worker. A TCP connection survives a SIGSTOP
// of the worker (the kernel keeps it; the worker reads what waited once it
// resumes) and partitions between the worker and the servers (it runs to the
// harness's address, which no fault cuts).
//
//	harness -> worker  {"kind":"setup","setup":{...}}
//	worker  -> harness {"kind":"ready"} | {"kind":"error","error":"..."}
//	harness -> worker  {"kind":"op","id":7,"f":"append","value":{"element":42}}
//	worker  -> harness {"kind":"phase","id":7,"phase":"acquired","value":{"token":1234}}
//	worker  -> harness {"kind":"failpoint","id":7,"token":1234}
//	harness -> worker  {"kind":"proceed","id":7}
//	worker  -> harness {"kind":"done","id":7,"type":"ok","value":{...}}
//	harness -> worker  {"kind":"skew","skew":-6000000000}   (clock-skew:client; any time)
//
// A worker runs one operation at a time, in the order received, and reports
// every phase before the operation's done. At its failpoint (workloads.Env)
// it waits for the harness's proceed for that operation, at most the
// setup's FailpointTimeout; the harness answers at once unless a fault
// waits for a holder, in which case it answers once the fault is in place.

// Port is the port a worker listens on.
const Port = 7000

// Protocol is the protocol's version, which the harness sends in its setup
// and the worker checks: a worker binary built from other sources than the
// harness's (a stale bin/fencecheck-worker) refuses the setup, saying so,
// rather than misread a message. Change it with any change of the
// messages' meaning (2: the workloads' configuration carries the spec's
// knobs, spec.WorkerKnobs, under their names: "concurrency", not
// "clients").
const Protocol = 2

// Message kinds.
const (
	KindSetup = "setup"
	KindReady = "ready"
	KindError = "error"
	KindOp    = "op"
	KindPhase = "phase"
	KindDone  = "done"
	KindSkew  = "skew"
	// KindFailpoint: the worker waits at its failpoint; KindProceed: the
	// harness lets it go on.
	KindFailpoint = "failpoint"
	KindProceed   = "proceed"
)

// Setup is what a worker needs to run operations.
type Setup struct {
	Target   string               `json:"target"`
	Client   targets.ClientConfig `json:"client"`
	Workload string               `json:"workload"`
	Config   workloads.Config     `json:"config"`
	// Resources are the run's resources, in order.
	Resources []ResourceSetup `json:"resources"`
	// Audit is the resource that keeps the audit log, nil without one.
	Audit *ResourceSetup `json:"audit,omitempty"`
	// FailpointTimeout bounds a worker's wait at its failpoint.
	FailpointTimeout time.Duration `json:"failpoint_timeout"`
	// Program, if not nil, is the user's lock client, which the worker
	// starts beside itself and uses as its lock client (package
	// clientproto); the harness's own clients ignore it.
	Program *clientproto.Program `json:"program,omitempty"`
}

// ResourceSetup is one resource of the run: its name in the resource table,
// its fencing mode and its store's configuration.
type ResourceSetup struct {
	Name    string           `json:"name"`
	Fencing targets.Fencing  `json:"fencing"`
	Config  resources.Config `json:"config"`
}

// Message is every message of the protocol; Kind says which fields matter.
type Message struct {
	Kind string `json:"kind"`
	ID   int64  `json:"id,omitempty"`
	// Protocol is the harness's Protocol, in its setup.
	Protocol int    `json:"protocol,omitempty"`
	Setup    *Setup `json:"setup,omitempty"`
	// op: F and Value (the invocation's); phase: Phase and Value; done:
	// Type and Value (the completion's).
	F     string          `json:"f,omitempty"`
	Phase string          `json:"phase,omitempty"`
	Type  history.Type    `json:"type,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// Override replaces the setup's workload config for this op only
	// (scripted runs such as the demo use it).
	Override *workloads.Config `json:"override,omitempty"`
	// Process is the history process an op runs as.
	Process history.Process `json:"process,omitempty"`
	// Token is the lock's token at a failpoint.
	Token int64 `json:"token,omitempty"`
	// Skew is the worker's lease-clock offset (skew).
	Skew  time.Duration `json:"skew,omitempty"`
	Error string        `json:"error,omitempty"`
	// BadConfig marks an error of setup that is the configuration's (a
	// client program that cannot run with the run's fencing): exit 254.
	BadConfig bool `json:"bad_config,omitempty"`
	// Client, in ready, is the client program's name for itself (its
	// init_ok's: the library and its version), when a program runs.
	Client string `json:"client,omitempty"`
}

// Conn is one end of the protocol: line-delimited JSON with serialized
// writes (Send is safe to call from several goroutines; Recv from one).
type Conn struct {
	c   net.Conn
	r   *bufio.Reader
	wmu sync.Mutex
}

// NewConn wraps a connection to the other end.
func NewConn(c net.Conn) *Conn {
	return &Conn{c: c, r: bufio.NewReaderSize(c, 64*1024)}
}

// Send writes m as one line.
func (c *Conn) Send(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.c.Write(b)
	return err
}

// Recv reads the next message; a line that is not one is an error.
func (c *Conn) Recv() (Message, error) {
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return Message{}, err
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("worker protocol: bad message %q: %w", line, err)
	}
	return m, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
