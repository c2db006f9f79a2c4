// Package consul is the Consul target: a cluster of Consul servers (1.14.x,
// the last MPL-2.0 line), the official api package's Lock as the lock
// recipe, and a key of the same cluster's KV store as the protected resource.
//
// Lease: a Consul session with a TTL of --ttl (at least 10 s, Consul's
// session_ttl_min), no health checks (only the TTL ends it), behavior
// "release", and a lock-delay of --lock-delay (Consul's default 15 s when
// unset; 0 is honoured). The client renews the session every TTL/2. The
// leader invalidates a session 2 TTL after the last renewal it received
// (Consul's grace multiplier), releases its locks, and then refuses to grant
// them again for the lock-delay; a waiter of the api's Lock that was refused
// during a lock-delay tries again 5 s later. MaxLease is 2 TTL + 1 s, plus
// lock-delay + 5 s when there is a lock-delay. The client's own estimate
// (Lease.Remaining) counts a single TTL from its last successful renewal, as
// a careful client does.
//
// Fencing token: the lock key's ModifyIndex right after the grant. Consul's
// KV indexes are Raft log indexes, which the whole cluster shares and which
// only grow, across leader changes too; a grant is a Raft entry that sets the
// key's Session and ModifyIndex, and nothing else writes the key while the
// session holds it, so every later grant has a larger ModifyIndex. (The
// key's LockIndex counts grants but restarts when the key is deleted, and
// its CreateIndex does not change between grants.)
//
// Fencing modes:
//   - none: a plain KV put of the value;
//   - token: PREFIX/fence holds the highest accepted token. The writer reads
//     it (value and ModifyIndex), refuses if it is greater than its token,
//     else sends a transaction [check-index fence = the index it read; set
//     fence = its token; set value]. Consul has no compare of values in a
//     transaction; check-index makes the read and the write one atomic step,
//     since the transaction applies only if nobody wrote the fence since. A
//     transaction that fails that check is rejected (the fence moved under
//     the writer): it certainly did not apply;
//   - cas: a transaction [check-session lock key = our session; set value]:
//     Consul's own concurrency control applies the write only while the lock
//     key is still held by the writer's session.
//
// No hidden retries: the api package retries nothing but a lock monitor's
// reads (MonitorRetries, left at 0), and the HTTP transport keeps no idle
// connections, so net/http never replays a request on a reused connection.
// Every call is one attempt.
package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/fencecheck/fencecheck/internal/images/kinds"
	"github.com/fencecheck/fencecheck/targets"
)

const (
	httpPort = 8500

	// MinTTL is Consul's shortest session TTL (session_ttl_min).
	MinTTL = 10 * time.Second
	// MaxTTL is Consul's longest session TTL.
	MaxTTL = 24 * time.Hour
	// DefaultLockDelay is the lock-delay of a session that names none.
	DefaultLockDelay = 15 * time.Second
	// MaxLockDelay is Consul's cap on a session's lock-delay.
	MaxLockDelay = 60 * time.Second
	// ttlMultiplier: the leader invalidates a session this many TTLs after
	// the last renewal it received.
	ttlMultiplier = 2
	// timerSlack covers what lies between the leader's session timer and a
	// waiter's grant: the invalidation's Raft commit, the waiter's wake-up
	// from its blocking query, its acquire's Raft commit.
	timerSlack = time.Second
	// lockWait bounds each blocking read of a waiting Lock, so that a
	// cancelled Acquire returns within about a second.
	lockWait = time.Second

	// Read modes of the KV.
	ModeDefault    = "default"
	ModeConsistent = "consistent"
	ModeStale      = "stale"
)

// Target is Consul.
type Target struct {
	// Release is the server version the cluster runs, a name of the consul
	// image's version table (kinds.Versions); "" is the default, the
	// table's first. Every version runs with the same command line and the
	// same client library (github.com/hashicorp/consul/api of fencecheck's
	// go.mod).
	Release string
}

// Name is "consul".
func (Target) Name() string { return "consul" }

// release is the target's version in the image table.
func (t Target) release() kinds.ServerVersion {
	v, ok := kinds.LookupVersion(kinds.Consul, t.Release)
	if !ok {
		// WithVersion only sets names of the table.
		panic(fmt.Sprintf("consul: no version %q in the image table", t.Release))
	}
	return v
}

// Image is the consul image of the target's version.
func (t Target) Image() string { return kinds.VersionKind(kinds.Consul, t.release().Name) }

// Version is the Consul server version the image runs.
func (t Target) Version() string { return t.release().Server }

// Versions are the names of the consul image's version table (--version).
func (Target) Versions() []string {
	var out []string
	for _, v := range kinds.Versions(kinds.Consul) {
		out = append(out, v.Name)
	}
	return out
}

// WithVersion is Consul running version v (targets.Versioned).
func (t Target) WithVersion(v string) targets.Target {
	t.Release = v
	return t
}

// VersionName is the --version it runs (targets.Versioned).
func (t Target) VersionName() string { return t.release().Name }

// ReadModes are the KV's read modes: "default" (served by the leader without
// a quorum check), "consistent" (the leader confirms its leadership with a
// quorum first), "stale" (any server, from its own state).
func (Target) ReadModes() []string { return []string{ModeDefault, ModeConsistent, ModeStale} }

// LinearizableReadModes: only consistent reads are promised linearizable
// (Consul's documentation: default reads may be stale for a moment after a
// leader change).
func (Target) LinearizableReadModes() []string { return []string{ModeConsistent} }

// Nodes returns an n-server cluster, n in 1, 3, 5 (or any n from 1 to 7).
func (Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n < 1 || n > 7 {
		return nil, fmt.Errorf("%w: consul runs 1 to 7 servers (usually 1, 3 or 5), not %d", targets.ErrBadConfig, n)
	}
	specs := make([]targets.NodeSpec, n)
	for i := range specs {
		name := fmt.Sprintf("n%d", i+1)
		cmd := []string{"/usr/local/bin/consul", "agent", "-server",
			"-bootstrap-expect", strconv.Itoa(n),
			"-node", name,
			"-datacenter", "dc1",
			"-data-dir", "/var/lib/consul",
			"-client", "0.0.0.0",
			"-http-port", strconv.Itoa(httpPort),
			"-dns-port", "-1",
			"-retry-interval", "1s",
			// Production Raft timing (the default multiplier 5 is for
			// development machines): elections in about a second.
			"-hcl", "performance { raft_multiplier = 1 }",
			// No call home: the agent would look up HashiCorp's
			// update-check service at start.
			"-hcl", "disable_update_check = true",
			"-log-level", "info",
		}
		for j := 1; j <= n; j++ {
			if j != i+1 {
				cmd = append(cmd, "-retry-join", fmt.Sprintf("n%d", j))
			}
		}
		specs[i] = targets.NodeSpec{Name: name, Port: httpPort, Cmd: cmd}
	}
	return specs, nil
}

// lockDelay is the lock-delay cfg asks for.
func lockDelay(cfg targets.ClientConfig) time.Duration {
	if cfg.LockDelay == nil {
		return DefaultLockDelay
	}
	return *cfg.LockDelay
}

// Validate rejects what Consul cannot honour: a TTL under 10 s, over 24 h or
// not in whole seconds, a negative lock-delay, one over Consul's 60 s cap,
// or one not in whole milliseconds.
func (Target) Validate(cfg targets.ClientConfig) error {
	switch {
	case cfg.TTL < MinTTL:
		return fmt.Errorf("%w: consul sessions have a TTL of at least %s (session_ttl_min); --ttl %s is shorter", targets.ErrBadConfig, MinTTL, cfg.TTL)
	case cfg.TTL > MaxTTL:
		return fmt.Errorf("%w: consul sessions have a TTL of at most 24h; --ttl %s is longer", targets.ErrBadConfig, cfg.TTL)
	case cfg.TTL%time.Second != 0:
		return fmt.Errorf("%w: consul session TTLs are whole seconds here; --ttl %s is not", targets.ErrBadConfig, cfg.TTL)
	}
	if cfg.LockDelay != nil {
		d := *cfg.LockDelay
		switch {
		case d < 0:
			return fmt.Errorf("%w: --lock-delay %s is negative", targets.ErrBadConfig, d)
		case d > MaxLockDelay:
			return fmt.Errorf("%w: consul caps the lock-delay at 60s; --lock-delay %s is longer", targets.ErrBadConfig, d)
		case d%time.Millisecond != 0:
			return fmt.Errorf("%w: --lock-delay %s is not in whole milliseconds", targets.ErrBadConfig, d)
		}
	}
	return nil
}

// Profile: the TTL is MinTTL, the shortest lease Consul grants, so that
// pauses and runs stay as short as Consul allows; the lock-delay is 0 (the
// worst case: with Consul's default 15 s a paused holder's lock stays
// untaken 20 s longer, so each pause would have to last over a minute);
// faults come 2 s apart; and a run lasts 45 s: a holder paused at about 3 s
// loses its session by 24 s (MaxLease 21 s), another client takes the lock
// and writes, and the paused holder writes when it resumes, at the latest
// when the time limit heals the pause.
func (Target) Profile() targets.Profile {
	zero := time.Duration(0)
	return targets.Profile{
		TTL: MinTTL, LockDelay: &zero, NemesisInterval: 2 * time.Second, TimeLimit: 45 * time.Second,
		Why: "TTL 10s (Consul's minimum), lock-delay 0, faults 2s apart, 45s runs: a pause must outlast 2 TTL + 1s",
	}
}

// MaxLease is 2 TTL + 1 s, plus lock-delay + 5 s when the lock-delay is not
// zero. The leader invalidates the session 2 TTL after the last renewal it
// received, and a second covers the Raft commits and a waiter's wake-up in
// between. The lock-delay then keeps the lock from anyone else; a waiter
// (the api's Lock) whose acquire was refused during it sleeps
// api.DefaultLockRetryTime (5 s) before it tries again, so the lock can stay
// untaken up to that much longer. With lock-delay 0 no acquire is refused
// and waiters, woken by the release of the key, take it at once.
func (Target) MaxLease(cfg targets.ClientConfig) time.Duration {
	d := ttlMultiplier*cfg.TTL + timerSlack
	if delay := min(lockDelay(cfg), MaxLockDelay); delay > 0 {
		d += delay + api.DefaultLockRetryTime
	}
	return d
}

// newAPI returns an api client of one server. It keeps no idle connections:
// every request goes on a fresh one, which net/http never replays. timeout
// bounds every request, the api's own blocking reads included.
func newAPI(addr string, timeout time.Duration) (*api.Client, error) {
	tr := &http.Transport{
		DialContext:       (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableKeepAlives: true,
	}
	return api.NewClient(&api.Config{
		Address:    addr,
		Scheme:     "http",
		HttpClient: &http.Client{Transport: tr, Timeout: timeout},
	})
}

// Ready returns nil once every server knows the same leader and serves a
// consistent (linearizable) read.
func (Target) Ready(ctx context.Context, nodes []targets.Node) error {
	clients := make([]*api.Client, len(nodes))
	for i, n := range nodes {
		c, err := newAPI(n.Addr, 2*time.Second)
		if err != nil {
			return err
		}
		clients[i] = c
	}
	for {
		last := ready(ctx, nodes, clients)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("consul not ready: %w", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, nodes []targets.Node, clients []*api.Client) error {
	leader := ""
	for i, n := range nodes {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		l, err := clients[i].Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(sctx))
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", n.Name, err)
		case l == "":
			return fmt.Errorf("%s: no leader", n.Name)
		case leader != "" && l != leader:
			return fmt.Errorf("%s: servers disagree on the leader (%s, %s)", n.Name, leader, l)
		}
		leader = l
	}
	for i, n := range nodes {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _, err := clients[i].KV().Get("fencecheck-ready", (&api.QueryOptions{RequireConsistent: true}).WithContext(sctx))
		cancel()
		if err != nil {
			return fmt.Errorf("%s: consistent read: %w", n.Name, err)
		}
	}
	return nil
}

// Leader returns the node name of the server that leads, from the Raft
// configuration as the first server that answers reports it.
func (Target) Leader(ctx context.Context, nodes []targets.Node) (string, error) {
	var errs []error
	for _, n := range nodes {
		c, err := newAPI(n.Addr, 2*time.Second)
		if err != nil {
			return "", err
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conf, err := c.Operator().RaftGetConfiguration((&api.QueryOptions{}).WithContext(sctx))
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		for _, s := range conf.Servers {
			if s.Leader {
				return s.Node, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: no leader in the raft configuration", n.Name))
	}
	return "", fmt.Errorf("consul: no leader found: %w", errors.Join(errs...))
}

// ServerBinary is "consul" (targets.ImageRunner): the command Nodes gives
// is the consul binary and its flags.
func (Target) ServerBinary() string { return "consul" }

// ServerVersion is the version each agent reports in /v1/agent/self, each
// distinct one once, in node order (targets.ImageRunner).
func (Target) ServerVersion(ctx context.Context, nodes []targets.Node) (string, error) {
	var seen []string
	for _, n := range nodes {
		c, err := newAPI(n.Addr, 2*time.Second)
		if err != nil {
			return "", err
		}
		self, err := c.Agent().Self()
		if err != nil {
			return "", fmt.Errorf("consul: version of %s: %w", n.Name, err)
		}
		v, _ := self["Config"]["Version"].(string)
		if v == "" {
			return "", fmt.Errorf("consul: %s reports no version", n.Name)
		}
		if !slices.Contains(seen, v) {
			seen = append(seen, v)
		}
	}
	return strings.Join(seen, ", "), nil
}

// Dial returns a client of one server, picked at random from the endpoints
// (every server forwards writes and default reads to the leader). Keys:
// PREFIX/lock (the lock), PREFIX/value (the list, as JSON), PREFIX/fence (the
// highest accepted token, in decimal), PREFIX/kv/KEY (the KV's registers).
// Consul keys have no leading slash; one in the prefix is dropped.
func (t Target) Dial(ctx context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: consul: no endpoints", targets.ErrBadConfig)
	}
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	addr := cfg.Endpoints[rand.IntN(len(cfg.Endpoints))]
	// The api's own requests without a context (a waiting Lock's blocking
	// reads, Unlock) end after this.
	cli, err := newAPI(addr, rpc+lockWait+lockWait/16+time.Second)
	if err != nil {
		return nil, fmt.Errorf("consul: %w", err)
	}
	pfx := strings.Trim(cfg.Prefix, "/")
	return &client{api: cli, addr: addr, ttl: cfg.TTL, delay: lockDelay(cfg), rpc: rpc,
		lock: pfx + "/lock", leader: pfx + "/leader", value: pfx + "/value", fence: pfx + "/fence", kv: pfx + "/kv/",
		leases: map[*lease]bool{}}, nil
}

type client struct {
	api              *api.Client
	addr             string
	ttl, delay, rpc  time.Duration
	lock, leader     string
	value, fence, kv string

	mu     sync.Mutex
	leases map[*lease]bool // leases whose session this client renews
}

// Election names the recipe of Campaign (targets.Electing).
func (Target) Election() string {
	return "Consul's leader election: a session lock on the leader key (TTL --ttl, lock-delay --lock-delay); term: the leader key's ModifyIndex at the grant"
}

// ReadModes is Target.ReadModes.
func (c *client) ReadModes() []string { return Target{}.ReadModes() }

// Close stops renewing every session of the client, as a frozen or crashed
// process would (the sessions stay until Consul invalidates them).
func (c *client) Close() error {
	c.mu.Lock()
	ls := c.leases
	c.leases = map[*lease]bool{}
	c.mu.Unlock()
	for l := range ls {
		l.stopRenewing()
	}
	return nil
}

func (c *client) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.rpc)
}

func query(ctx context.Context) *api.QueryOptions { return (&api.QueryOptions{}).WithContext(ctx) }

func consistent(ctx context.Context) *api.QueryOptions {
	return (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx)
}

func write(ctx context.Context) *api.WriteOptions { return (&api.WriteOptions{}).WithContext(ctx) }

// ttlString is the TTL as Consul takes it ("10s").
func (c *client) ttlString() string { return fmt.Sprintf("%ds", c.ttl/time.Second) }

// createSession creates the session of one grant: TTL, no health checks
// (only the TTL ends it), behavior release, and the lock-delay given
// explicitly. (The api's Session().Create leaves a zero LockDelay out of its
// request, and Consul then applies its 15 s default: a lock-delay of 0 has
// to be sent as "0s".)
func (c *client) createSession(ctx context.Context) (string, error) {
	body := map[string]any{
		"Name":          "fencecheck",
		"TTL":           c.ttlString(),
		"LockDelay":     c.delay.String(),
		"Behavior":      api.SessionBehaviorRelease,
		"NodeChecks":    []string{},
		"ServiceChecks": []api.ServiceCheck{},
	}
	var out struct{ ID string }
	if _, err := c.api.Raw().Write("/v1/session/create", body, &out, write(ctx)); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("session create returned no ID")
	}
	return out.ID, nil
}

// Acquire creates a session, renews it in the background, and takes the lock
// with the api's Lock on it; the token is the lock key's ModifyIndex as a
// consistent read returns it right after the grant.
func (c *client) Acquire(ctx context.Context) (targets.Lease, error) {
	return c.acquireOn(ctx, c.lock, nil)
}

// Campaign is Consul's documented leader election: a session lock on the
// leader key PREFIX/leader, holding the candidate's name; the term is the
// leader key's ModifyIndex right after the grant, as for a lock's token.
func (c *client) Campaign(ctx context.Context, candidate string) (targets.Lease, error) {
	return c.acquireOn(ctx, c.leader, []byte(candidate))
}

// acquireOn takes a session lock on key, with value as the key's value.
func (c *client) acquireOn(ctx context.Context, key string, value []byte) (targets.Lease, error) {
	sent := time.Now()
	sctx, cancel := c.timeout(ctx)
	id, err := c.createSession(sctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("consul: create session: %w", err)
	}
	l := &lease{c: c, id: id, key: key, stop: make(chan struct{}), expiry: sent.Add(c.ttl)}
	c.mu.Lock()
	c.leases[l] = true
	c.mu.Unlock()
	go l.renew()

	lk, err := c.api.LockOpts(&api.LockOptions{
		Key:          key,
		Value:        value,
		Session:      id,
		SessionTTL:   c.ttlString(),
		LockWaitTime: lockWait,
		// MonitorRetries 0: the monitor retries nothing.
	})
	if err != nil {
		l.abandon(false)
		return nil, fmt.Errorf("consul: lock: %w", err)
	}
	stopCh := make(chan struct{})
	acquired := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			close(stopCh)
		case <-acquired:
		}
	}()
	lost, err := lk.Lock(stopCh)
	close(acquired)
	switch {
	case err != nil:
		l.abandon(false)
		return nil, fmt.Errorf("consul: lock: %w", err)
	case lost == nil: // stopCh closed before the grant
		l.abandon(false)
		return nil, fmt.Errorf("consul: lock not acquired: %w", ctx.Err())
	}
	l.lock = lk

	// The grant's own index. A caller whose deadline passed just as it got
	// the lock still holds it: read the token regardless.
	rctx, cancel := c.timeout(context.WithoutCancel(ctx))
	pair, _, err := c.api.KV().Get(key, consistent(rctx))
	cancel()
	switch {
	case err != nil:
		l.abandon(true)
		return nil, fmt.Errorf("consul: read the lock key for its token: %w", err)
	case pair == nil || pair.Session != id:
		l.abandon(true)
		return nil, fmt.Errorf("consul: lock key %s no longer held by session %s right after the grant", key, id)
	}
	l.token = int64(pair.ModifyIndex)
	return l, nil
}

type lease struct {
	c     *client
	id    string // the session
	key   string // the lock's or the leader's key
	lock  *api.Lock
	token int64

	stop     chan struct{}
	stopOnce sync.Once

	m      sync.Mutex
	expiry time.Time
}

// renew renews the session every TTL/2 until stopped or until Consul no
// longer knows it. After a successful renewal the client counts on one TTL
// from the moment it sent the request (Consul's 2 TTL grace is not promised
// to it). A renewal that fails is tried again a second later: renewals write
// nothing the test records.
func (l *lease) renew() {
	every := l.c.ttl / 2
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.c.rpc)
		se, _, err := l.c.api.Session().Renew(l.id, write(ctx))
		cancel()
		switch {
		case err != nil:
			t.Reset(min(time.Second, every))
			continue
		case se == nil: // invalidated: nothing left to renew
			return
		}
		l.m.Lock()
		l.expiry = sent.Add(l.c.ttl)
		l.m.Unlock()
		t.Reset(every)
	}
}

func (l *lease) stopRenewing() { l.stopOnce.Do(func() { close(l.stop) }) }

func (l *lease) Token() int64 { return l.token }

func (l *lease) Remaining() time.Duration {
	l.m.Lock()
	defer l.m.Unlock()
	return time.Until(l.expiry)
}

// abandon gives up a session, best effort: it releases the lock first if it
// was granted (destroying a session that holds a lock would impose the
// lock-delay on the next holder), then destroys the session.
func (l *lease) abandon(locked bool) {
	l.stopRenewing()
	l.c.forget(l)
	if locked && l.lock != nil {
		_ = l.lock.Unlock()
	}
	ctx, cancel := l.c.timeout(context.Background())
	defer cancel()
	_, _ = l.c.api.Session().Destroy(l.id, write(ctx))
}

func (c *client) forget(l *lease) {
	c.mu.Lock()
	delete(c.leases, l)
	c.mu.Unlock()
}

// Release releases the lock (a KV release, which imposes no lock-delay),
// stops renewing, and destroys the session.
func (l *lease) Release(ctx context.Context) error {
	err := l.lock.Unlock()
	l.stopRenewing()
	l.c.forget(l)
	dctx, cancel := l.c.timeout(ctx)
	defer cancel()
	if _, derr := l.c.api.Session().Destroy(l.id, write(dctx)); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("consul: release: %w", err)
	}
	return nil
}

// Reset deletes the lock key, sets the list to [] and the fence to 0, in one
// transaction.
func (c *client) Reset(ctx context.Context) error {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.lock}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.leader}},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.value, Value: []byte("[]")}},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.fence, Value: []byte("0")}},
	}, query(rctx))
	if err != nil {
		return fmt.Errorf("consul: reset: %w", err)
	}
	if !ok {
		return fmt.Errorf("consul: reset: %s", txnErrors(resp))
	}
	return nil
}

func (c *client) Read(ctx context.Context) ([]int64, error) {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	pair, _, err := c.api.KV().Get(c.value, consistent(rctx))
	if err != nil {
		return nil, fmt.Errorf("consul: read: %w", err)
	}
	list := []int64{}
	if pair == nil {
		return list, nil
	}
	if err := json.Unmarshal(pair.Value, &list); err != nil {
		return nil, fmt.Errorf("consul: read: value %q: %w", pair.Value, err)
	}
	return list, nil
}

func (c *client) Write(ctx context.Context, list []int64, held targets.Lease, f targets.Fencing) (int64, error) {
	val, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	switch f {
	case targets.FencingNone:
		if _, err := c.api.KV().Put(&api.KVPair{Key: c.value, Value: val}, write(rctx)); err != nil {
			return 0, fmt.Errorf("consul: put: %w", err)
		}
		return 0, nil
	case targets.FencingToken:
		return c.writeToken(rctx, val, held.Token())
	case targets.FencingCAS:
		l, ok := held.(*lease)
		if !ok {
			return 0, errors.New("consul: cas fencing needs a consul lease")
		}
		ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
			{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: l.key, Session: l.id}},
			{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.value, Value: val}},
		}, query(rctx))
		if err != nil {
			return 0, fmt.Errorf("consul: txn: %w", err)
		}
		if !ok {
			return 0, fmt.Errorf("%w: lock key %s is no longer held by session %s (%s)", targets.ErrFenced, l.key, l.id, txnErrors(resp))
		}
		return c.revOf(resp, c.value), nil
	}
	return 0, fmt.Errorf("consul: unknown fencing %q", f)
}

// ReadFenced raises the fence to the lease's token and reads the list in
// one transaction (check-index on the fence as read, set it, get the value),
// unless the fence holds a higher token or moved meanwhile (then the read is
// refused: only a holder with a token at least as high moves it).
func (c *client) ReadFenced(ctx context.Context, held targets.Lease) ([]int64, error) {
	token := held.Token()
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	highest, index, err := c.readFence(rctx)
	if err != nil {
		return nil, err
	}
	if highest > token {
		return nil, fmt.Errorf("%w: read with token %d < highest accepted %d", targets.ErrFenced, token, highest)
	}
	check := &api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.fence, Index: index}
	if index == 0 {
		check = &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: c.fence}
	}
	ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
		{KV: check},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.fence, Value: []byte(strconv.FormatInt(token, 10))}},
		{KV: &api.KVTxnOp{Verb: api.KVGet, Key: c.value}},
	}, query(rctx))
	if err != nil {
		return nil, fmt.Errorf("consul: fenced read: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: read with token %d: the fence moved under the read (%s)", targets.ErrFenced, token, txnErrors(resp))
	}
	list := []int64{}
	for _, r := range resp.Results {
		if r != nil && r.KV != nil && r.KV.Key == c.value && len(r.KV.Value) > 0 {
			if err := json.Unmarshal(r.KV.Value, &list); err != nil {
				return nil, fmt.Errorf("consul: read: value %q: %w", r.KV.Value, err)
			}
		}
	}
	return list, nil
}

// writeToken writes val if the highest accepted token is not greater than
// token, and records token as the highest.
func (c *client) writeToken(ctx context.Context, val []byte, token int64) (int64, error) {
	highest, index, err := c.readFence(ctx)
	if err != nil {
		return 0, err
	}
	if highest > token {
		return 0, fmt.Errorf("%w: token %d < highest accepted %d", targets.ErrFenced, token, highest)
	}
	check := &api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.fence, Index: index}
	if index == 0 {
		check = &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: c.fence}
	}
	ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
		{KV: check},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.fence, Value: []byte(strconv.FormatInt(token, 10))}},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.value, Value: val}},
	}, query(ctx))
	if err != nil {
		return 0, fmt.Errorf("consul: txn: %w", err)
	}
	if !ok {
		// Another write moved the fence between our read and our
		// transaction: the transaction was rolled back.
		now := "?"
		if h, _, err := c.readFence(ctx); err == nil {
			now = strconv.FormatInt(h, 10)
		}
		return 0, fmt.Errorf("%w: token %d: the fence moved under the write (highest accepted now %s; %s)", targets.ErrFenced, token, now, txnErrors(resp))
	}
	return c.revOf(resp, c.value), nil
}

// readFence returns the highest accepted token and the fence key's
// ModifyIndex (0 when the key does not exist).
func (c *client) readFence(ctx context.Context) (int64, uint64, error) {
	pair, _, err := c.api.KV().Get(c.fence, query(ctx))
	if err != nil {
		return 0, 0, fmt.Errorf("consul: read fence: %w", err)
	}
	if pair == nil {
		return 0, 0, nil
	}
	h, err := strconv.ParseInt(string(pair.Value), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("consul: fence %q: %w", pair.Value, err)
	}
	return h, pair.ModifyIndex, nil
}

// revOf is the ModifyIndex of key's entry in a transaction's results.
func (c *client) revOf(resp *api.TxnResponse, key string) int64 {
	if resp == nil {
		return 0
	}
	for _, r := range resp.Results {
		if r != nil && r.KV != nil && r.KV.Key == key {
			return int64(r.KV.ModifyIndex)
		}
	}
	return 0
}

func txnErrors(resp *api.TxnResponse) string {
	if resp == nil || len(resp.Errors) == 0 {
		return "transaction rolled back"
	}
	var s []string
	for _, e := range resp.Errors {
		s = append(s, fmt.Sprintf("op %d: %s", e.OpIndex, e.What))
	}
	return strings.Join(s, "; ")
}

// Get reads a register in one of ReadModes ("" is the default mode).
func (c *client) Get(ctx context.Context, key, mode string) (int64, bool, error) {
	q := &api.QueryOptions{}
	switch mode {
	case "", ModeDefault:
	case ModeConsistent:
		q.RequireConsistent = true
	case ModeStale:
		q.AllowStale = true
	default:
		return 0, false, fmt.Errorf("%w: consul read mode %q (valid: %s)", targets.ErrBadConfig, mode, strings.Join(c.ReadModes(), ", "))
	}
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	pair, _, err := c.api.KV().Get(c.kv+key, q.WithContext(rctx))
	if err != nil {
		return 0, false, fmt.Errorf("consul: get %s: %w", key, err)
	}
	if pair == nil {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(string(pair.Value), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("consul: get %s: value %q: %w", key, pair.Value, err)
	}
	return v, true, nil
}

// Put writes a register.
func (c *client) Put(ctx context.Context, key string, value int64) error {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	if _, err := c.api.KV().Put(&api.KVPair{Key: c.kv + key, Value: []byte(strconv.FormatInt(value, 10))}, write(rctx)); err != nil {
		return fmt.Errorf("consul: put %s: %w", key, err)
	}
	return nil
}

// errUndecided: a compare-and-set whose outcome on the value cannot be told.
var errUndecided = errors.New("compare-and-set undecided")

// CAS sets key to new if it holds old. Consul compares ModifyIndexes, not
// values: CAS reads the key (consistent), and if it holds old, writes new
// with a check-and-set on the index it read. When that check fails the key
// was written in between; a second consistent read that finds a value other
// than old is a moment inside this operation where the comparison fails
// (ok false). If the key still holds old the operation cannot be placed:
// CAS returns an error wrapping errUndecided (the register workload records
// it as info), although the write certainly did not apply. It never
// writes twice.
func (c *client) CAS(ctx context.Context, key string, old, new int64) (bool, error) {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	k := c.kv + key
	holds := func() (bool, uint64, error) {
		pair, _, err := c.api.KV().Get(k, consistent(rctx))
		if err != nil {
			return false, 0, fmt.Errorf("consul: cas %s: read: %w", key, err)
		}
		if pair == nil {
			return false, 0, nil
		}
		v, err := strconv.ParseInt(string(pair.Value), 10, 64)
		if err != nil {
			return false, 0, fmt.Errorf("consul: cas %s: value %q: %w", key, pair.Value, err)
		}
		return v == old, pair.ModifyIndex, nil
	}
	ok, index, err := holds()
	if err != nil || !ok {
		return false, err
	}
	done, _, err := c.api.KV().CAS(&api.KVPair{Key: k, Value: []byte(strconv.FormatInt(new, 10)), ModifyIndex: index}, write(rctx))
	if err != nil {
		return false, fmt.Errorf("consul: cas %s: %w", key, err)
	}
	if done {
		return true, nil
	}
	ok, _, err = holds()
	if err != nil {
		return false, fmt.Errorf("%w: %w", errUndecided, err)
	}
	if !ok {
		return false, nil
	}
	return false, fmt.Errorf("consul: cas %s: %w: the key was rewritten between read and write and holds %d again", key, errUndecided, old)
}

var (
	_ targets.Target       = Target{}
	_ targets.LeaseBounder = Target{}
	_ targets.ReadModer    = Target{}
	_ targets.Client       = (*client)(nil)
	_ targets.KV           = (*client)(nil)
)
