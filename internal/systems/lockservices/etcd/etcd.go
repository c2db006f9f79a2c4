// Package etcd is the etcd target: a cluster of etcd servers at one of the
// etcd image's versions (--version), a lock recipe (--recipe: the
// clientv3/concurrency Mutex run by the client, or the server's lock RPC),
// and a key in the same cluster as the protected resource.
//
// Lease: a concurrency.Session on a lease of --ttl (etcd counts lease TTLs in
// whole seconds and raises very short ones to its minimum). Fencing token:
// the CreateRevision of the holder's lock key, which grows with every grant
// because etcd's revision is cluster-wide and never reused. Fencing modes:
//   - none: a plain Put of the value;
//   - token: a Txn that puts the value and the token only if the stored
//     highest token is not greater than ours; reads raise the stored token
//     the same way (ReadFenced);
//   - cas: a Txn guarded by the lock key's CreateRevision == ours (etcd's own
//     concurrency control ties the write to lock ownership).
//
// The official client retries a mutating request only when it was certainly
// not sent (no connection was available), so no write is ever applied twice.
package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/targets"
)

const (
	clientPort = 2379
	peerPort   = 2380
)

// Target is etcd.
type Target struct {
	// Release is the server version the cluster runs, a name of the etcd
	// image's version table (kinds.Versions); "" is the default, the
	// table's first. Every version runs with the same command line and the
	// same client library (go.etcd.io/etcd/client/v3 of fencecheck's
	// go.mod), which speaks the v3 API of 3.4 to 3.7 servers.
	Release string
	// Creds, set by Attach, are what Ready, Leader and ServerVersion
	// present to servers fencecheck did not start (--endpoints); nil for
	// fencecheck's own, which ask for none.
	Creds *targets.Credentials
}

// Name is "etcd".
func (Target) Name() string { return "etcd" }

// release is the target's version in the image table.
func (t Target) release() kinds.ServerVersion {
	v, ok := kinds.LookupVersion(kinds.Etcd, t.Release)
	if !ok {
		// WithVersion only sets names of the table.
		panic(fmt.Sprintf("etcd: no version %q in the image table", t.Release))
	}
	return v
}

// Image is the etcd image of the target's version.
func (t Target) Image() string { return kinds.VersionKind(kinds.Etcd, t.release().Name) }

// Version is the etcd server version the image runs, with the version's
// name when that differs ("debian 3.4.23").
func (t Target) Version() string {
	v := t.release()
	if v.Name != v.Server {
		return v.Name + " " + v.Server
	}
	return v.Server
}

// Versions are the names of the etcd image's version table (--version).
func (Target) Versions() []string {
	var out []string
	for _, v := range kinds.Versions(kinds.Etcd) {
		out = append(out, v.Name)
	}
	return out
}

// WithVersion is etcd running version v (targets.Versioned).
func (t Target) WithVersion(v string) targets.Target {
	t.Release = v
	return t
}

// VersionName is the --version it runs (targets.Versioned).
func (t Target) VersionName() string { return t.release().Name }

// Nodes returns an n-member cluster, n in 1, 3, 5 (or any n from 1 to 7).
func (Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n < 1 || n > 7 {
		return nil, fmt.Errorf("%w: etcd runs 1 to 7 nodes (usually 1, 3 or 5), not %d", targets.ErrBadConfig, n)
	}
	var peers []string
	for i := 1; i <= n; i++ {
		peers = append(peers, fmt.Sprintf("n%d=http://n%d:%d", i, i, peerPort))
	}
	specs := make([]targets.NodeSpec, n)
	for i := range specs {
		name := fmt.Sprintf("n%d", i+1)
		specs[i] = targets.NodeSpec{
			Name:    name,
			Port:    clientPort,
			DataDir: "/var/lib/etcd",
			Cmd: []string{"/usr/local/bin/etcd",
				"--name", name,
				"--data-dir", "/var/lib/etcd",
				"--listen-client-urls", fmt.Sprintf("http://0.0.0.0:%d", clientPort),
				"--advertise-client-urls", fmt.Sprintf("http://%s:%d", name, clientPort),
				"--listen-peer-urls", fmt.Sprintf("http://0.0.0.0:%d", peerPort),
				"--initial-advertise-peer-urls", fmt.Sprintf("http://%s:%d", name, peerPort),
				"--initial-cluster", strings.Join(peers, ","),
				"--initial-cluster-state", "new",
				"--initial-cluster-token", "fencecheck",
				"--logger", "zap",
			},
		}
	}
	return specs, nil
}

// Lock recipes (--recipe).
const (
	// RecipeMutex is clientv3/concurrency's Mutex, run by the client.
	RecipeMutex = "mutex"
)

// Recipes are the etcd lock recipes, the default first.
func (Target) Recipes() []string { return []string{RecipeMutex, RecipeLockRPC} }

// Validate rejects lease TTLs that etcd cannot express (whole seconds) and
// recipes it does not have.
func (t Target) Validate(cfg targets.ClientConfig) error {
	if err := targets.CheckRecipe(t, cfg.Recipe); err != nil {
		return err
	}
	if cfg.TTL < time.Second || cfg.TTL%time.Second != 0 {
		return fmt.Errorf("%w: etcd leases are whole seconds; --ttl %s is not", targets.ErrBadConfig, cfg.TTL)
	}
	return nil
}

// newClient is a client of endpoints that presents creds (nil: none):
// their TLS configuration, and their user name and password for etcd's
// authentication.
func newClient(ctx context.Context, endpoints []string, creds *targets.Credentials) (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		Context:     ctx,
	}
	if creds != nil {
		tc, err := creds.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}
		cfg.TLS, cfg.Username, cfg.Password = tc, creds.Username, creds.Password
	}
	return clientv3.New(cfg)
}

// Attach is etcd on existing servers (targets.Attacher): each endpoint
// http:// or https:// (or HOST:PORT: https when creds carry TLS), the
// target presenting creds to them.
func (t Target) Attach(eps []string, creds *targets.Credentials) (targets.Target, []targets.Node, error) {
	if creds != nil && creds.Password != "" && creds.Username == "" {
		return nil, nil, fmt.Errorf("%w: etcd authenticates a user: --auth USER:PASSWORD", targets.ErrBadConfig)
	}
	addrs, err := targets.HTTPEndpoints(eps, creds)
	if err != nil {
		return nil, nil, err
	}
	t.Creds = creds
	return t, targets.AttachedNodes(addrs), nil
}

// Purge deletes every key under cfg.Prefix/ (targets.Purger).
func (t Target) Purge(ctx context.Context, cfg targets.ClientConfig) error {
	if !strings.HasPrefix(cfg.Prefix, "/") || !targets.RunPrefix(cfg.Prefix) {
		return fmt.Errorf("etcd: purge: prefix %q is not a run's", cfg.Prefix)
	}
	cli, err := newClient(ctx, cfg.Endpoints, cfg.Credentials)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Delete(ctx, cfg.Prefix+"/", clientv3.WithPrefix())
	return err
}

func endpoints(nodes []targets.Node) []string {
	eps := make([]string, len(nodes))
	for i, n := range nodes {
		eps[i] = n.Addr
	}
	return eps
}

// Ready returns nil once every member answers Status and all agree on one
// leader.
func (t Target) Ready(ctx context.Context, nodes []targets.Node) error {
	cli, err := newClient(ctx, endpoints(nodes), t.Creds)
	if err != nil {
		return err
	}
	defer cli.Close()
	err = targets.PollReady(ctx, "etcd", 100*time.Millisecond, func(ctx context.Context) error { return ready(ctx, cli, nodes) })
	if err != nil && t.Creds != nil {
		// The gRPC client says "deadline exceeded" for a refused
		// certificate: ask the first server's TLS why.
		if tc, _ := t.Creds.TLSConfig(); tc != nil && len(nodes) > 0 {
			tc = tc.Clone()
			tc.NextProtos = []string{"h2"}
			if e, perr := targets.ParseEndpoint(nodes[0].Addr, "http", "https"); perr == nil {
				pctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				if terr := targets.ProbeTLS(pctx, e.HostPort(), tc); terr != nil {
					err = fmt.Errorf("%w (TLS with %s: %w)", err, nodes[0].Name, terr)
				}
				cancel()
			}
		}
	}
	return err
}

func ready(ctx context.Context, cli *clientv3.Client, nodes []targets.Node) error {
	var leader uint64
	for _, n := range nodes {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, n.Addr)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if st.Leader == 0 {
			return fmt.Errorf("%s: no leader", n.Name)
		}
		if leader != 0 && st.Leader != leader {
			return fmt.Errorf("%s: members disagree on the leader", n.Name)
		}
		leader = st.Leader
	}
	return nil
}

// ServerBinary is "etcd" (targets.ImageRunner): the command Nodes gives is
// the etcd binary and its flags.
func (Target) ServerBinary() string { return "etcd" }

// ServerVersion is the version the members report in Status, each distinct
// one once, in node order ("3.6.16"; "3.5.35, 3.6.16" mid-upgrade)
// (targets.ImageRunner).
func (t Target) ServerVersion(ctx context.Context, nodes []targets.Node) (string, error) {
	cli, err := newClient(ctx, endpoints(nodes), t.Creds)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	var seen []string
	for _, n := range nodes {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, n.Addr)
		cancel()
		if err != nil {
			return "", fmt.Errorf("etcd: version of %s: %w", n.Name, err)
		}
		if !slices.Contains(seen, st.Version) {
			seen = append(seen, st.Version)
		}
	}
	return strings.Join(seen, ", "), nil
}

// ElectsLeader is true: the members elect their Raft leader (targets.Elected).
func (Target) ElectsLeader() bool { return true }

// Leader returns the name of the member that leads, as the members report.
func (t Target) Leader(ctx context.Context, nodes []targets.Node) (string, error) {
	cli, err := newClient(ctx, endpoints(nodes), t.Creds)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	return leaderOf(ctx, cli, nodes)
}

// LeaderAsker answers as Leader does over one client, kept until done
// (targets.LeaderAsker): a client with a user authenticates when it is
// made, which the members pay for with a password hash and a Raft
// proposal, so a watch asking four times a second makes it once.
func (t Target) LeaderAsker(ctx context.Context, nodes []targets.Node) (ask func(context.Context) (string, error), done func(), err error) {
	cli, err := newClient(ctx, endpoints(nodes), t.Creds)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) (string, error) { return leaderOf(ctx, cli, nodes) }, func() { cli.Close() }, nil
}

// leaderOf asks each member for its status through cli and names the
// member they name as leader; an error says why none: the members name
// none (an election), or one that did not answer (killed, cut off), or
// one that is none of nodes (endpoints that are not every member).
func leaderOf(ctx context.Context, cli *clientv3.Client, nodes []targets.Node) (string, error) {
	var errs []error
	ids := map[uint64]string{}
	var leader uint64
	for _, n := range nodes {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, n.Addr)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		ids[st.Header.MemberId] = n.Name
		if st.Leader != 0 {
			leader = st.Leader
		}
	}
	if name, ok := ids[leader]; ok {
		return name, nil
	}
	why := "no member names a leader"
	switch {
	case leader != 0 && len(errs) > 0:
		why = fmt.Sprintf("the members name member %x, which did not answer", leader)
	case leader != 0:
		why = fmt.Sprintf("the members name member %x, which is none of the endpoints", leader)
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("etcd: no leader found: %s: %w", why, errors.Join(errs...))
	}
	return "", fmt.Errorf("etcd: no leader found: %s", why)
}

// Dial returns a client. Keys: PREFIX/lock (the mutex's prefix),
// PREFIX/value (the list, as JSON), PREFIX/fence (the highest accepted
// token, zero-padded so that etcd's byte-wise comparison is numeric),
// PREFIX/reg/KEY (the register workload's registers, as decimal strings).
func (t Target) Dial(ctx context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	cli, err := newClient(context.Background(), cfg.Endpoints, cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	rpc := cfg.RPCTimeout
	if rpc <= 0 {
		rpc = 5 * time.Second
	}
	return &client{cli: cli, ttl: cfg.TTL, rpc: rpc, prefix: cfg.Prefix, recipe: cfg.Recipe,
		lockPfx: cfg.Prefix + "/lock", value: cfg.Prefix + "/value", fence: cfg.Prefix + "/fence"}, nil
}

type client struct {
	cli                   *clientv3.Client
	ttl, rpc              time.Duration
	prefix                string
	recipe                string // RecipeMutex ("" too) or RecipeLockRPC
	lockPfx, value, fence string
}

// grpcForceRaw sends the lock RPCs' messages as the caller encoded them.
var grpcForceRaw = grpc.ForceCodec(rawCodec{})

func (c *client) Close() error { return c.cli.Close() }

func (c *client) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.rpc)
}

// Acquire grants a lease, keeps it alive, and takes the lock on it with the
// client's recipe: the mutex, or the lock RPC (acquireRPC).
func (c *client) Acquire(ctx context.Context) (targets.Lease, error) {
	if c.recipe == RecipeLockRPC {
		return c.acquireRPC(ctx)
	}
	l, sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	mu := concurrency.NewMutex(sess, c.lockPfx)
	if err := mu.Lock(ctx); err != nil {
		l.abandon()
		return nil, fmt.Errorf("etcd: lock: %w", err)
	}
	cr, ok := mu.IsOwner().TargetUnion.(*pb.Compare_CreateRevision)
	if !ok {
		l.abandon()
		return nil, errors.New("etcd: mutex ownership is not a CreateRevision compare")
	}
	l.token, l.key, l.owner, l.unlock = cr.CreateRevision, mu.Key(), mu.IsOwner(), mu.Unlock
	return l, nil
}

// Campaign grants a lease, keeps it alive, and campaigns on it with
// concurrency.Election under PREFIX/election; the term is the leader key's
// create revision, which etcd's election makes the lowest of the
// candidates' and which grows with every leadership.
func (c *client) Campaign(ctx context.Context, candidate string) (targets.Lease, error) {
	l, sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	e := concurrency.NewElection(sess, c.prefix+"/election")
	if err := e.Campaign(ctx, candidate); err != nil {
		l.abandon()
		return nil, fmt.Errorf("etcd: campaign: %w", err)
	}
	l.token, l.key = e.Rev(), e.Key()
	l.owner = clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())
	l.unlock = e.Resign
	return l, nil
}

// grant grants a lease of the client's TTL and keeps it alive until the
// lease is released or abandoned.
func (c *client) grant(ctx context.Context) (*lease, error) {
	sent := time.Now()
	gctx, cancel := c.timeout(ctx)
	g, err := c.cli.Grant(gctx, int64(c.ttl/time.Second))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("etcd: grant: %w", err)
	}
	// The lease lives until Release (or until it expires): its keepalives
	// must not stop when the caller's acquire deadline passes.
	lctx, stop := context.WithCancel(context.Background())
	l := &lease{c: c, id: g.ID, ctx: lctx, stop: stop, expiry: sent.Add(time.Duration(g.TTL) * time.Second)}
	ka, err := c.cli.KeepAlive(lctx, g.ID)
	if err != nil {
		l.abandon()
		return nil, fmt.Errorf("etcd: keepalive: %w", err)
	}
	go l.track(ka)
	return l, nil
}

// session grants a kept-alive lease (grant) and opens a concurrency
// session on it.
func (c *client) session(ctx context.Context) (*lease, *concurrency.Session, error) {
	l, err := c.grant(ctx)
	if err != nil {
		return nil, nil, err
	}
	sess, err := concurrency.NewSession(c.cli, concurrency.WithLease(l.id), concurrency.WithContext(l.ctx))
	if err != nil {
		l.abandon()
		return nil, nil, fmt.Errorf("etcd: session: %w", err)
	}
	return l, sess, nil
}

type lease struct {
	c     *client
	id    clientv3.LeaseID
	ctx   context.Context // ends when the keepalives stop
	stop  context.CancelFunc
	token int64
	// key is the lock's or the leader's key, owner the compare that holds
	// while this lease still owns it, unlock gives it up (Mutex.Unlock,
	// Election.Resign).
	key    string
	owner  clientv3.Cmp
	unlock func(context.Context) error

	m      sync.Mutex
	expiry time.Time
}

// track moves the expiry estimate forward with every keepalive answer: the
// lease runs for TTL seconds from the moment the answer arrived.
func (l *lease) track(ka <-chan *clientv3.LeaseKeepAliveResponse) {
	for r := range ka {
		if r.TTL <= 0 {
			continue
		}
		l.m.Lock()
		l.expiry = time.Now().Add(time.Duration(r.TTL) * time.Second)
		l.m.Unlock()
	}
}

func (l *lease) Token() int64 { return l.token }

func (l *lease) Remaining() time.Duration {
	l.m.Lock()
	defer l.m.Unlock()
	return time.Until(l.expiry)
}

// Held is the recipe's own belief, the keepalives' deadline: the lease
// runs TTL seconds from the last keepalive answer read, has not passed
// (targets.Believer).
func (l *lease) Held(context.Context) (bool, error) { return l.Remaining() > 0, nil }

// abandon stops the keepalives and revokes the lease, best effort.
func (l *lease) abandon() {
	l.stop()
	ctx, cancel := l.c.timeout(context.Background())
	defer cancel()
	_, _ = l.c.cli.Revoke(ctx, l.id)
}

// Release unlocks (or resigns), then revokes the lease.
func (l *lease) Release(ctx context.Context) error {
	uctx, cancel := l.c.timeout(ctx)
	err := l.unlock(uctx)
	cancel()
	l.stop()
	rctx, cancel := l.c.timeout(ctx)
	defer cancel()
	if _, rerr := l.c.cli.Revoke(rctx, l.id); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("etcd: release: %w", err)
	}
	return nil
}

func pad(token int64) string { return fmt.Sprintf("%020d", token) }

func (c *client) Reset(ctx context.Context) error {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	_, err := c.cli.Txn(rctx).Then(
		clientv3.OpDelete(c.lockPfx, clientv3.WithPrefix()),
		clientv3.OpPut(c.value, "[]"),
		clientv3.OpPut(c.fence, pad(0)),
	).Commit()
	if err != nil {
		return fmt.Errorf("etcd: reset: %w", err)
	}
	return nil
}

func (c *client) Read(ctx context.Context) ([]int64, error) {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	r, err := c.cli.Get(rctx, c.value)
	if err != nil {
		return nil, fmt.Errorf("etcd: read: %w", err)
	}
	return decodeList(r.Kvs)
}

// ReadFenced raises the fence to the lease's token and reads the list in one
// Txn, unless the fence holds a higher token.
func (c *client) ReadFenced(ctx context.Context, held targets.Lease) ([]int64, error) {
	token := held.Token()
	mine := pad(token)
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	r, err := c.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.Value(c.fence), ">", mine)).
		Then(clientv3.OpGet(c.fence)).
		Else(clientv3.OpPut(c.fence, mine), clientv3.OpGet(c.value)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("etcd: fenced read: %w", err)
	}
	if r.Succeeded {
		highest := "?"
		if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			highest = strings.TrimLeft(string(kvs[0].Value), "0")
		}
		return nil, fmt.Errorf("%w: read with token %d < highest accepted %s", targets.ErrFenced, token, highest)
	}
	return decodeList(r.Responses[1].GetResponseRange().Kvs)
}

// decodeList decodes the list key's value (an empty list when absent).
func decodeList(kvs []*mvccpb.KeyValue) ([]int64, error) {
	list := []int64{}
	if len(kvs) == 0 {
		return list, nil
	}
	if err := json.Unmarshal(kvs[0].Value, &list); err != nil {
		return nil, fmt.Errorf("etcd: read: value %q: %w", kvs[0].Value, err)
	}
	return list, nil
}

func (c *client) Write(ctx context.Context, list []int64, held targets.Lease, f targets.Fencing) (int64, error) {
	b, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	val := string(b)
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	switch f {
	case targets.FencingNone:
		r, err := c.cli.Put(rctx, c.value, val)
		if err != nil {
			return 0, fmt.Errorf("etcd: put: %w", err)
		}
		return r.Header.Revision, nil
	case targets.FencingToken:
		token := held.Token()
		mine := pad(token)
		r, err := c.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.Value(c.fence), ">", mine)).
			Then(clientv3.OpGet(c.fence)).
			Else(clientv3.OpPut(c.fence, mine), clientv3.OpPut(c.value, val)).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("etcd: txn: %w", err)
		}
		if r.Succeeded {
			highest := "?"
			if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
				highest = strings.TrimLeft(string(kvs[0].Value), "0")
			}
			return 0, fmt.Errorf("%w: token %d < highest accepted %s", targets.ErrFenced, token, highest)
		}
		return r.Header.Revision, nil
	case targets.FencingCAS:
		l, ok := held.(*lease)
		if !ok {
			return 0, errors.New("etcd: cas fencing needs an etcd lease")
		}
		r, err := c.cli.Txn(rctx).If(l.owner).Then(clientv3.OpPut(c.value, val)).Commit()
		if err != nil {
			return 0, fmt.Errorf("etcd: txn: %w", err)
		}
		if !r.Succeeded {
			return 0, fmt.Errorf("%w: lock key %s no longer has CreateRevision %d", targets.ErrFenced, l.key, l.token)
		}
		return r.Header.Revision, nil
	}
	return 0, fmt.Errorf("etcd: unknown fencing %q", f)
}

// Read modes of the etcd KV.
const (
	// ReadLinearizable goes through the leader's read index (etcd's default).
	ReadLinearizable = "linearizable"
	// ReadSerializable answers from the member's own store, which may be
	// behind.
	ReadSerializable = "serializable"
)

// Election names the recipe of Campaign (targets.Electing).
func (Target) Election() string {
	return "etcd concurrency.Election on a lease of --ttl; term: the leader key's create revision"
}

// ReadModes are linearizable (the default) and serializable.
func (Target) ReadModes() []string { return []string{ReadLinearizable, ReadSerializable} }

// LinearizableReadModes: linearizable reads are, by etcd's promise.
func (Target) LinearizableReadModes() []string { return []string{ReadLinearizable} }

// regKey is a register's key: PREFIX/reg/KEY.
func (c *client) regKey(key string) string { return c.prefix + "/reg/" + key }

// Get reads a register in a read mode.
func (c *client) Get(ctx context.Context, key, mode string) (int64, bool, error) {
	var opts []clientv3.OpOption
	switch mode {
	case ReadLinearizable, "":
	case ReadSerializable:
		opts = append(opts, clientv3.WithSerializable())
	default:
		return 0, false, fmt.Errorf("etcd: unknown read mode %q", mode)
	}
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	r, err := c.cli.Get(rctx, c.regKey(key), opts...)
	if err != nil {
		return 0, false, fmt.Errorf("etcd: get: %w", err)
	}
	if len(r.Kvs) == 0 {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(string(r.Kvs[0].Value), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("etcd: register %s holds %q", key, r.Kvs[0].Value)
	}
	return v, true, nil
}

// Put writes a register.
func (c *client) Put(ctx context.Context, key string, value int64) error {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	if _, err := c.cli.Put(rctx, c.regKey(key), strconv.FormatInt(value, 10)); err != nil {
		return fmt.Errorf("etcd: put: %w", err)
	}
	return nil
}

// CAS sets a register to new if it holds old, in one Txn.
func (c *client) CAS(ctx context.Context, key string, old, new int64) (bool, error) {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	k := c.regKey(key)
	r, err := c.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.Value(k), "=", strconv.FormatInt(old, 10))).
		Then(clientv3.OpPut(k, strconv.FormatInt(new, 10))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("etcd: cas: %w", err)
	}
	return r.Succeeded, nil
}
