package kubernetes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/fencecheck/fencecheck/targets"
)

// client-go logs through klog, to the process's standard error; the
// lock's story is in the history, so its log is silenced (as ZooKeeper's
// client's is).
func init() { klog.SetLogger(logr.Discard()) }

// namespace holds every object of a run.
const namespace = "default"

// Dial returns a client of one apiserver, picked at random from the
// endpoints, that presents the run's token and trusts the run's CA alone.
// The lock of prefix P is the Lease named LeaseName(P); the list the lock
// protects (the lock-store) is kept in that Lease's annotations (store.go).
func (t Target) Dial(ctx context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: kubernetes: no endpoints", targets.ErrBadConfig)
	}
	if cfg.Credentials == nil || cfg.Credentials.Token == "" || cfg.Credentials.CA == "" {
		return nil, fmt.Errorf("%w: kubernetes: no credentials (a token and the servers' CA)", targets.ErrBadConfig)
	}
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	addr := cfg.Endpoints[rand.IntN(len(cfg.Endpoints))]
	rc := &rest.Config{
		Host:        "https://" + addr,
		BearerToken: cfg.Credentials.Token,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:     []byte(cfg.Credentials.CA),
			ServerName: cfg.Credentials.ServerName,
		},
		// One attempt per call, bounded by the RPC timeout; no client-side
		// rate limit that would queue a renewal behind a write.
		Timeout:   rpc,
		QPS:       -1,
		UserAgent: "fencecheck",
	}
	cs, err := coordinationv1.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &client{cs: cs, addr: addr, ttl: cfg.TTL, rpc: rpc, name: LeaseName(cfg.Prefix), recipe: cfg.Recipe,
		id: fmt.Sprintf("%s-%08x", strings.ReplaceAll(addr, ":", "-"), rand.Uint32())}, nil
}

// LeaseName is the Lease of a run's lock prefix: the prefix's path
// segments joined by dots, lower-cased, every character a name cannot hold
// made a dash ("/fencecheck/ab12/lock-2" is "fencecheck.ab12.lock-2"), as
// a DNS subdomain (at most 253 characters) that a Lease's name must be.
func LeaseName(prefix string) string {
	var segs []string
	for _, s := range strings.Split(strings.ToLower(prefix), "/") {
		b := []byte(s)
		for i, c := range b {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				b[i] = '-'
			}
		}
		if s := strings.Trim(string(b), "-"); s != "" {
			segs = append(segs, s)
		}
	}
	name := strings.Join(segs, ".")
	if name == "" {
		name = "fencecheck"
	}
	if len(name) > 253 {
		name = strings.Trim(name[len(name)-253:], ".-")
	}
	return name
}

type client struct {
	cs     *coordinationv1.CoordinationV1Client
	addr   string
	ttl    time.Duration
	rpc    time.Duration
	name   string // the Lease
	recipe string
	id     string // this client's part of its candidates' identities
	n      atomic.Int64

	mu     sync.Mutex
	leases map[held]bool
}

// held is a lease of either recipe, while its client renews it.
type held interface {
	// holder is its candidate's identity, the Lease's holderIdentity
	// while it holds it.
	holder() string
	// abandon stops renewing without giving the Lease back, as a
	// crashed process does.
	abandon()
}

func (c *client) track(l held) {
	c.mu.Lock()
	if c.leases == nil {
		c.leases = map[held]bool{}
	}
	c.leases[l] = true
	c.mu.Unlock()
}

func (c *client) forget(l held) {
	c.mu.Lock()
	delete(c.leases, l)
	c.mu.Unlock()
}

func (c *client) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.rpc)
}

// Close stops every leader election of the client without releasing its
// Lease, as a crashed process would.
func (c *client) Close() error {
	c.mu.Lock()
	ls := c.leases
	c.leases = nil
	c.mu.Unlock()
	for l := range ls {
		l.abandon()
	}
	return nil
}
