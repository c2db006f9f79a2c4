// Command client-go-cle is a fencecheck client program in Go: client-go's
// leader election (k8s.io/client-go/tools/leaderelection) with Coordinated
// Leader Election, driven over fencecheck's client protocol (JSON lines on
// stdin and stdout, docs/client-protocol.md).
//
// With Coordinated Leader Election (the CoordinatedLeaderElection feature
// gate of kube-apiserver, beta and off by default in 1.37, and its
// coordination.k8s.io/v1beta1 LeaseCandidates; the target kubernetes-cle
// turns both on) the candidates do not race for the Lease: each one
// announces itself with a LeaseCandidate (leaderelection.NewCandidate),
// and the apiserver's leader-election controller writes the Lease's holder
// itself, picking among the candidates that answered its ping the one of
// the oldest version (strategy OldestEmulationVersion; between equal
// versions, the oldest LeaseCandidate). The elected candidate's
// LeaderElector (LeaderElectionConfig.Coordinated) only renews a Lease that
// names it, and the controller hands the Lease to another candidate once
// it expired, which it judges by its own clock against the renewTime the
// leader wrote by the leader's wall clock (client-go's own elector times
// expiry from when it observed a change, on the monotonic clock).
//
// The recipe follows client-go's: NewCandidate(clientset, namespace,
// identity, lease, binary version, emulation version,
// OldestEmulationVersion) run beside a LeaderElector of the same identity
// on a LeaseLock of that Lease, with Coordinated: true and ReleaseOnCancel.
// A lock maps on it as fencecheck's own kubernetes election does
// (internal/systems/lockservices/kubernetes/elect.go): an acquire is a
// candidate of its own (identity HOST-PID-N, its LeaseCandidate of the same
// name), running until it leads (OnStartedLeading), so that every grant
// changes the Lease's holder; a release deletes its LeaseCandidate (a
// candidate left behind would be the oldest, so the one the controller
// prefers, until the controller's garbage collection removes it 30 minutes
// later), then cancels its election, whose ReleaseOnCancel gives the Lease
// back. Lease duration = the run's TTL, renew deadline and retry period
// in client-go's default proportions (15 s, 10 s, 2 s).
//
// held (implements "held"): the library's own belief, LeaderElector.
// IsLeader() (the Lease it last observed names this candidate), while its
// election has not stopped leading (OnStoppedLeading). remaining: what
// leaderelection allows its leader, the renew deadline after the send time
// of the last write that renewed the Lease, and 0 once it stopped leading.
//
// Token: none. The Lease's leaseTransitions does not count grants here:
// the controller writes a new holder without adding to it, and an elected
// candidate renews the count it found. "tokens": false, so --fencing token
// is refused before anything starts.
//
// Credentials: the run's bearer token and the authority that signed the
// apiservers' certificates, from init's "credentials".
//
// client.json builds it on the machine that runs fencecheck (go build) and
// starts ./client in each worker container.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// namespace holds the Lease and the LeaseCandidates.
const namespace = "default"

// The candidates' versions (a LeaseCandidate must name both, as semantic
// versions): this program's, the same for every candidate, so the
// controller prefers the oldest LeaseCandidate.
const (
	binaryVersion    = "1.0.0"
	emulationVersion = "1.0.0"
)

type request struct {
	ID           int64        `json:"id"`
	Type         string       `json:"type"`
	Endpoints    []string     `json:"endpoints"`
	TTLMS        int64        `json:"ttl_ms"`
	Prefix       string       `json:"prefix"`
	RPCTimeoutMS int64        `json:"rpc_timeout_ms"`
	TimeoutMS    int64        `json:"timeout_ms"`
	Credentials  *credentials `json:"credentials"`
}

// credentials are init's: the apiservers' authority (PEM), the name on
// their certificates, and the bearer token.
type credentials struct {
	CA         string `json:"ca"`
	ServerName string `json:"server_name"`
	Token      string `json:"token"`
}

type reply map[string]any

func fail(kind, format string, args ...any) reply {
	return reply{"type": "error", "kind": kind, "message": fmt.Sprintf(format, args...)}
}

type client struct {
	cs kubernetes.Interface
	// candidates is cs without its request timeout, for the
	// LeaseCandidates' informer, whose watch a timeout would cut.
	candidates kubernetes.Interface
	lease      string // the Lease's name
	host       string // the candidates' names start with it
	n          int
	ttl        time.Duration
	rpc        time.Duration
	held       *leadership
}

// leadership is one acquire's candidate: its LeaseCandidate's runner, its
// elector, and what its own writes to the Lease said.
type leadership struct {
	identity string
	le       *leaderelection.LeaderElector
	lock     *watchedLock
	renew    time.Duration

	stopElection  context.CancelFunc
	electionDone  chan struct{}
	stopCandidate context.CancelFunc
	candidateDone chan struct{}
	started       chan struct{} // closed by OnStartedLeading
	stopped       atomic.Bool   // OnStoppedLeading
}

// watchedLock is client-go's LeaseLock, keeping the send time of the last
// write of it that named this candidate the holder and succeeded.
type watchedLock struct {
	*resourcelock.LeaseLock
	mu      sync.Mutex
	renewed time.Time
}

func (w *watchedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	if err := w.LeaseLock.Update(ctx, r); err != nil {
		return err
	}
	if r.HolderIdentity == w.Identity() {
		w.mu.Lock()
		w.renewed = sent
		w.mu.Unlock()
	}
	return nil
}

func (w *watchedLock) lastRenewal() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.renewed
}

// name is s as a name's segment: lower case, every character a DNS label
// cannot hold made a dash.
func name(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}

// leaseName is the run's Lease: the prefix's path segments and
// "client-cle", joined by dots (a Lease's name is a DNS subdomain).
func leaseName(prefix string) string {
	var segs []string
	for _, s := range strings.Split(prefix, "/") {
		if s = name(s); s != "" {
			segs = append(segs, s)
		}
	}
	return strings.Join(append(segs, "client-cle"), ".")
}

func (c *client) init(r request) reply {
	if len(r.Endpoints) == 0 {
		return fail("fail", "no endpoints")
	}
	cr := r.Credentials
	if cr == nil || cr.Token == "" || cr.CA == "" {
		return fail("fail", "init carries no credentials (a bearer token and the apiservers' CA): the target must be kubernetes-cle (or kubernetes)")
	}
	c.ttl, c.rpc = time.Duration(r.TTLMS)*time.Millisecond, time.Duration(r.RPCTimeoutMS)*time.Millisecond
	if c.ttl < time.Second || c.ttl%time.Second != 0 {
		return fail("fail", "ttl %s: a Lease's duration is whole seconds, at least 1 s", c.ttl)
	}
	if c.rpc <= 0 {
		c.rpc = 5 * time.Second
	}
	cfg := &rest.Config{
		Host:            "https://" + r.Endpoints[rand.IntN(len(r.Endpoints))],
		BearerToken:     cr.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(cr.CA), ServerName: cr.ServerName},
		Timeout:         c.rpc,
		// No client-side rate limit: the scaled-down retry period (0.27 s
		// at a 2 s TTL) renews more often than client-go's default 5
		// requests a second allow.
		QPS:       -1,
		UserAgent: "fencecheck-client-go-cle",
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail("fail", "clientset: %v", err)
	}
	untimed := rest.CopyConfig(cfg)
	untimed.Timeout = 0
	candidates, err := kubernetes.NewForConfig(untimed)
	if err != nil {
		return fail("fail", "clientset: %v", err)
	}
	host, _ := os.Hostname()
	c.cs, c.candidates, c.lease, c.host = cs, candidates, leaseName(r.Prefix), fmt.Sprintf("%s-%d", name(host), os.Getpid())
	return reply{"implements": []string{"lock", "held"}, "tokens": false, "name": "client-go " + clientGoVersion() + " leader election, Coordinated"}
}

func clientGoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

func (c *client) acquire(r request) reply {
	if c.held != nil {
		return fail("fail", "already holding the lock")
	}
	// The wait leaves a second of the acquire's time, when it has more
	// than two, for giving up the candidacy.
	wait := time.Duration(r.TimeoutMS) * time.Millisecond
	if wait > 2*time.Second {
		wait -= time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c.n++
	identity := fmt.Sprintf("%s-%d", c.host, c.n)
	leaseD, renew, retry := c.ttl, c.ttl*10/15, c.ttl*2/15

	l := &leadership{identity: identity, renew: renew, started: make(chan struct{}),
		electionDone: make(chan struct{}), candidateDone: make(chan struct{})}

	candidate, _, err := leaderelection.NewCandidate(c.candidates, namespace, identity, c.lease,
		binaryVersion, emulationVersion, coordinationv1.OldestEmulationVersion)
	if err != nil {
		return fail("fail", "candidate: %v", err)
	}
	cctx, stopCandidate := context.WithCancel(context.Background())
	l.stopCandidate = stopCandidate
	go func() {
		defer close(l.candidateDone)
		candidate.Run(cctx)
	}()

	l.lock = &watchedLock{LeaseLock: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: c.lease, Namespace: namespace},
		Client:     c.cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}}
	l.le, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: l.lock, LeaseDuration: leaseD, RenewDeadline: renew, RetryPeriod: retry,
		ReleaseOnCancel: true, Name: c.lease, Coordinated: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(l.started) },
			OnStoppedLeading: func() { l.stopped.Store(true) },
		},
	})
	if err != nil {
		_ = c.leave(l, c.rpc)
		return fail("fail", "leader elector: %v", err)
	}
	ectx, stopElection := context.WithCancel(context.Background())
	l.stopElection = stopElection
	go func() {
		defer close(l.electionDone)
		l.le.Run(ectx)
	}()

	select {
	case <-l.started:
		c.held = l
		return reply{"remaining_ms": l.remaining().Milliseconds()}
	case <-ctx.Done():
		err := c.leave(l, time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, "client-go-cle: leaving the candidacy %s: %v\n", l.identity, err)
		}
		if !l.lock.lastRenewal().IsZero() {
			// It was elected just as the wait ended: its release gave the
			// Lease back, or (err) may not have.
			return fail("info", "not leading within %d ms (elected as the wait ended; leaving: %v)", r.TimeoutMS, err)
		}
		return fail("fail", "not leading within %d ms", r.TimeoutMS)
	}
}

// errStillRunning: the election had not stopped (nor given the Lease
// back) when leave gave up.
var errStillRunning = errors.New("the election did not stop")

// leave ends a candidacy within budget: it stops the LeaseCandidate's
// runner and deletes the LeaseCandidate, then cancels the election
// (ReleaseOnCancel gives the Lease back if this candidate holds it) and
// waits until it stopped. The candidate goes first: the controller elects
// on the Lease's release, among the candidates it knows of then, and a
// candidate still listed that answered its last ping within 5 s counts as
// one that answered; the oldest, it would be elected again, and the Lease
// would pass to another only once that election expired. It returns why
// it could not, if it could not.
func (c *client) leave(l *leadership, budget time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	l.stopCandidate()
	var errs []error
	select {
	case <-l.candidateDone:
		err := c.cs.CoordinationV1beta1().LeaseCandidates(namespace).Delete(ctx, l.identity, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the LeaseCandidate: %w", err))
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("the LeaseCandidate's runner did not stop within %s", budget))
	}
	if l.stopElection != nil {
		l.stopElection()
		select {
		case <-l.electionDone:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("%w within %s", errStillRunning, budget))
		}
	}
	return errors.Join(errs...)
}

func (l *leadership) remaining() time.Duration {
	if l.stopped.Load() {
		return 0
	}
	return max(0, time.Until(l.lock.lastRenewal().Add(l.renew)))
}

func (c *client) remaining() reply {
	if c.held == nil {
		return reply{"remaining_ms": 0}
	}
	return reply{"remaining_ms": c.held.remaining().Milliseconds()}
}

// believes is the held answer: client-go's own, LeaderElector.IsLeader(),
// while the election has not stopped leading.
func (c *client) believes() reply {
	l := c.held
	return reply{"held": l != nil && !l.stopped.Load() && l.le.IsLeader()}
}

func (c *client) release() reply {
	l := c.held
	c.held = nil
	if l == nil {
		return fail("fail", "no lock held")
	}
	if err := c.leave(l, c.rpc); err != nil {
		// The LeaseCandidate remains until the controller collects it.
		fmt.Fprintf(os.Stderr, "client-go-cle: leaving the candidacy %s: %v\n", l.identity, err)
		if errors.Is(err, errStillRunning) {
			// Whether the Lease was given back is unknown; if not, it
			// expires.
			return fail("info", "release: %v", err)
		}
	}
	return reply{}
}

func main() {
	c := &client{}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "client-go-cle: bad request: %v\n", err)
			os.Exit(2)
		}
		var rep reply
		switch {
		case r.Type == "init":
			rep = c.init(r)
		case c.cs == nil:
			rep = fail("fail", "%s before init", r.Type)
		case r.Type == "acquire":
			rep = c.acquire(r)
		case r.Type == "remaining":
			rep = c.remaining()
		case r.Type == "held":
			rep = c.believes()
		case r.Type == "release":
			rep = c.release()
		default:
			rep = fail("fail", "unknown request %q", r.Type)
		}
		if _, ok := rep["type"]; !ok {
			rep["type"] = r.Type + "_ok"
		}
		rep["id"] = r.ID
		if err := out.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "client-go-cle:", err)
			os.Exit(1)
		}
	}
}
