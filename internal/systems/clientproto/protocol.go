// Package clientproto is fencecheck's client protocol: a user's own lock
// client, in any language, as a program that a worker starts beside itself
// in its container and drives over the program's stdin and stdout, one JSON
// object a line, one request at a time (docs/client-protocol.md is the
// reference for client authors).
//
// The worker keeps the critical section: it acquires through the program,
// asks it for the time left on the lease, reads and writes the run's
// resource (itself with the program's token, or through the program when it
// implements the resource access too), and reports the phases as for a
// built-in recipe. The program only has to be a lock client.
//
// A program can misbehave in every way: answer garbage, never answer, exit.
// None of it may hang the worker or lose the history: a request has a
// deadline; a malformed line, a missed deadline or an exit retires the
// process (it is killed, with its process group) and the request's outcome
// is unknown (Info) unless nothing can have happened yet; the next request
// starts a new process, which is sent init again.
package clientproto

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fencecheck/fencecheck/targets"
)

// Version is the protocol's version, sent in init.
const Version = 1

// Request types (harness to program).
const (
	TypeInit      = "init"
	TypeAcquire   = "acquire"
	TypeRemaining = "remaining"
	TypeRelease   = "release"
	TypeRead      = "read"
	TypeWrite     = "write"
	// TypeHeld asks whether the program's lock library still believes it
	// holds the lock (only to a program that implements ImplHeld).
	TypeHeld = "held"
)

// TypeError is the type of an error reply; a successful reply's type is the
// request's with "_ok" appended ("acquire_ok").
const TypeError = "error"

// Error kinds, as in a history: Fail says the request certainly had no
// effect; Info says its effect is unknown.
const (
	KindFail = "fail"
	KindInfo = "info"
)

// Results of read and write replies.
const (
	ResultOK      = "ok"
	ResultFenced  = "fenced"
	ResultUnknown = "unknown"
)

// What a program can implement (init's reply): the lock always, the
// resource access and the held question optionally.
const (
	ImplLock     = "lock"
	ImplResource = "resource"
	// ImplHeld: the program answers held with its library's own belief
	// (targets.Believer); a program that does not cannot be asked, and
	// its belief windows are unknown.
	ImplHeld = "held"
)

// Request is a message to the program. ID is unique per process and grows;
// the reply carries it back.
type Request struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
	// init (its Fencing is Request's, which shadows Init's in JSON: both
	// are set)
	*Init
	// acquire: how long the program may wait for the lock.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// read, write: the lease's token (absent without one) and the run's
	// fencing mode at the resource.
	Token   *int64 `json:"token,omitempty"`
	Fencing string `json:"fencing,omitempty"`
	// write: the list to write.
	Value []int64 `json:"value,omitempty"`
}

// Init is what a program needs to set up its client (the init request).
type Init struct {
	Protocol int `json:"protocol"`
	// Target is the lock service's name in fencecheck (etcd, redis, ...).
	Target    string   `json:"target"`
	Endpoints []string `json:"endpoints"`
	TTLMS     int64    `json:"ttl_ms"`
	// Prefix scopes the run's keys: the program's lock lives under it (the
	// resource's keys prefix+"value", prefix+"fence", prefix+"rev" and
	// prefix+"lock" are fencecheck's own; use other names).
	Prefix string `json:"prefix"`
	// Fencing is the run's fencing mode at the resource (none, token, cas).
	Fencing      string `json:"fencing"`
	RPCTimeoutMS int64  `json:"rpc_timeout_ms"`
	// LockDelayMS is Consul's lock-delay, when the run sets one.
	LockDelayMS *int64 `json:"lock_delay_ms,omitempty"`
	// Resource is the run's first resource, for a program that implements
	// the resource access.
	Resource *ResourceInfo `json:"resource,omitempty"`
	// Credentials are what the program presents to the servers and
	// trusts in them (targets.Credentials), when the run has any: those
	// the harness made for its servers (targets.Secured: kubernetes), or
	// those given for attached ones. Secrets: they go to the program,
	// never to test.json.
	Credentials *targets.Credentials `json:"credentials,omitempty"`
}

// ResourceInfo names the run's resource and where it is.
type ResourceInfo struct {
	Name      string   `json:"name"`
	Endpoints []string `json:"endpoints,omitempty"`
	Prefix    string   `json:"prefix"`
}

// Reply is a message from the program.
type Reply struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
	// init_ok: what the program implements, whether its leases carry a
	// fencing token, and its name for the report.
	Implements []string `json:"implements,omitempty"`
	Tokens     *bool    `json:"tokens,omitempty"`
	Name       string   `json:"name,omitempty"`
	// acquire_ok: the token (absent: the lock has none) and the time left.
	Token       *int64 `json:"token,omitempty"`
	RemainingMS *int64 `json:"remaining_ms,omitempty"`
	// read_ok, write_ok: ok (the default), fenced, unknown (write only);
	// read's list; write's revision at the resource, when it has one.
	Result string  `json:"result,omitempty"`
	Value  []int64 `json:"value,omitempty"`
	Rev    int64   `json:"rev,omitempty"`
	// held_ok: whether the library believes the program holds the lock
	// (required in held_ok).
	Held *bool `json:"held,omitempty"`
	// error
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message,omitempty"`
}

// Error is a request that did not succeed: the program's error reply, or a
// failure of the program itself (Cause says which). Its text (Error) holds
// at most MaxDetail bytes of Message and of Line each, as a step of
// client-check does: it goes into the history, and a program's error text
// can be megabytes long.
type Error struct {
	Request string // the request's type
	// Kind is KindFail (certainly no effect) or KindInfo (unknown).
	Kind string
	// Cause is "reply" for an error reply; "malformed", "timeout",
	// "exited", "cancelled" (the run ended) or "start" when the program
	// failed (the process is retired); "lost" for a request of a lease
	// whose process was retired (nothing was sent).
	Cause   string
	Message string
	// Line is the offending line of a malformed reply.
	Line string
}

func (e *Error) Error() string {
	msg := clipDetail(e.Message)
	s := fmt.Sprintf("client program: %s: %s", e.Request, msg)
	if e.Cause != "reply" {
		s = fmt.Sprintf("client program: %s: %s: %s", e.Request, e.Cause, msg)
	}
	if e.Line != "" {
		s += fmt.Sprintf(" (line %q)", clipDetail(e.Line))
	}
	return s
}

// MaxRemainingMS is the most time a lease can have left, in milliseconds,
// either way: the most a time.Duration holds (some 292 years). A
// remaining_ms beyond it is malformed: converted, it would wrap (2^63-1 ms
// to -1 ms).
const MaxRemainingMS = math.MaxInt64 / int64(time.Millisecond)

// parseReply decodes one line of the program's stdout and checks its shape:
// a JSON object with an id and a type, and a remaining_ms that a lease can
// have (MaxRemainingMS). The line is in the error.
func parseReply(line []byte) (Reply, error) {
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil {
		return Reply{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if r.ID <= 0 {
		return Reply{}, errors.New("no id")
	}
	if r.Type == "" {
		return Reply{}, errors.New("no type")
	}
	if r.Type == TypeError && r.Kind != KindFail && r.Kind != KindInfo {
		return Reply{}, fmt.Errorf("error kind %q (valid: fail, info)", clipDetail(r.Kind))
	}
	if ms := r.RemainingMS; ms != nil && (*ms > MaxRemainingMS || *ms < -MaxRemainingMS) {
		return Reply{}, fmt.Errorf("remaining_ms %d: no lease can have that (at most %d ms either way)", *ms, MaxRemainingMS)
	}
	return r, nil
}

// ms is d in milliseconds.
func ms(d time.Duration) int64 { return d.Milliseconds() }
