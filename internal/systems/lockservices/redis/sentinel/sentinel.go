// Package sentinel is the redis-sentinel target: a Redis primary with
// replicas, watched by three Sentinels that promote a replica when the
// primary fails. It shows where Redis fencing tokens break: the tokens come
// from INCR on the primary, and Redis replicates asynchronously, so a
// promoted replica may lack the latest INCRs and grant their tokens again.
//
// Servers: n1 (the first primary) and n2 ... nN (replicas of n1), each with
// the append-only file fsynced on every write (so that a crash alone loses
// nothing: what is lost is lost to replication); s1, s2, s3: Sentinels
// (redis-server --sentinel as PID 1) monitoring the primary with quorum 2,
// down-after-milliseconds 1000 and failover-timeout 5000. Each server writes
// its configuration file on its first start only, so the roles Sentinel
// rewrites into it (CONFIG REWRITE after REPLICAOF) survive a restart.
//
// Clients find the primary through the Sentinels (go-redis's FailoverClient
// asks them on every new connection and drops its connections to the old
// primary on +switch-master) and run the same lock, token and fences as the
// single-instance target (package redis), on the primary. Leader is the
// primary the Sentinels name now, so `--nemesis kill:leader` and
// `partition:leader` hit it and make the Sentinels fail over.
//
// Why tokens are reused: `partition:leader` cuts the primary off from the
// replicas and the Sentinels, but not from the clients. The clients that are
// connected to it keep taking the lock on it and INCRing its counter for
// the 2-3 s the Sentinels take to notice, agree and promote a replica, whose
// counter stopped at the partition. The clients then move to the new
// primary, which grants the same tokens again (and, when the partition
// heals, the old primary is made a replica of the new one and drops the
// writes it took alone, acknowledged appends included). A `kill:leader`
// loses only what was INCRed on the primary and not yet sent to a replica
// at the moment of the crash: on a local network the replication stream is
// a fraction of a millisecond behind, so a crash rarely lands in that gap.
// It breaks tokens another way, now and then: the fault restarts the old
// primary after one to two leases, on its own data and as a master, and
// Sentinel makes it a replica only about 10 s later (it waits 8 s before it
// corrects an instance that reports the wrong role). A client that reaches
// it meanwhile (go-redis can finish a dial to it that started before the
// switch) takes tokens from its counter beside the new primary, and its
// writes vanish when it is demoted.
// `min-replicas-to-write` / `min-replicas-max-lag` would shrink the window
// of a partition (the isolated primary refuses writes once no replica has
// acknowledged for the lag) but not close it: Redis replication is
// asynchronous, and WAIT does not make it synchronous either.
package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/targets"
)

const (
	// MasterName is the name the Sentinels monitor the primary under.
	MasterName = "fencecheck"
	// SentinelPort is the Sentinels' port.
	SentinelPort = 26379
	// Sentinels is the number of Sentinels, and Quorum the number that
	// must agree that the primary is down.
	Sentinels = 3
	Quorum    = 2
	// DownAfter is how long a Sentinel waits for a primary that does not
	// answer before it considers it down; FailoverTimeout bounds a
	// failover's steps (and a new attempt waits twice as long).
	DownAfter       = time.Second
	FailoverTimeout = 5 * time.Second
)

// Target is a Redis primary, replicas and three Sentinels.
type Target struct{}

// Name is "redis-sentinel".
func (Target) Name() string { return "redis-sentinel" }

// Image is the base image, which holds redis-server (Sentinel is
// redis-server --sentinel).
func (Target) Image() string { return kinds.Base }

// Version is the redis-server version.
func (Target) Version() string { return redis.ServerVersion }

// waitFor resolves n1's address on the run's network (the Engine's DNS
// knows it once n1's container exists) into $ip.
const waitForN1 = `until ip=$(getent hosts n1 | cut -d" " -f1) && [ -n "$ip" ]; do sleep 0.1; done; `

// DefaultNodes is 2: a primary and one replica (the three sentinels are
// always there).
func (Target) DefaultNodes() int { return 2 }

// Nodes returns n Redis servers (n1 the first primary, n2 ... nN its
// replicas; 2 to 5) and the Sentinels s1, s2, s3.
func (Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n < 2 || n > 5 {
		return nil, fmt.Errorf("%w: redis-sentinel runs a primary and 1 to 4 replicas (--nodes 2 to 5; the 3 Sentinels come on top), not %d",
			targets.ErrBadConfig, n)
	}
	var specs []targets.NodeSpec
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		conf := []string{"port " + strconv.Itoa(redis.Port), "bind 0.0.0.0", "protected-mode no",
			"dir /var/lib/redis", "appendonly yes", "appendfsync always", `save ""`,
			// A replica that must sync in full (after a failover) starts
			// at once rather than after the default 5 s.
			"repl-diskless-sync-delay 0"}
		script := "conf=/var/lib/redis/redis.conf; if [ ! -f $conf ]; then printf '%s\\n' " + quoteAll(conf) + " > $conf.new; "
		if i > 1 {
			script += waitForN1 + `echo "replicaof $ip ` + strconv.Itoa(redis.Port) + `" >> $conf.new; `
		}
		script += "mv $conf.new $conf; fi; exec redis-server $conf"
		specs = append(specs, targets.NodeSpec{Name: name, Port: redis.Port, Cmd: []string{"sh", "-c", script}})
	}
	for i := 1; i <= Sentinels; i++ {
		conf := []string{"port " + strconv.Itoa(SentinelPort), "bind 0.0.0.0", "protected-mode no", "dir /var/lib/redis"}
		// On its first start a Sentinel waits until every replica is
		// connected to n1: it learns the replicas from the primary's INFO,
		// which it reads when it connects and then only every 10 s.
		waitReplicas := fmt.Sprintf(`until redis-cli -h "$ip" -p %d info replication 2>/dev/null | grep -q '^connected_slaves:%d'; do sleep 0.1; done; `, redis.Port, n-1)
		script := "conf=/var/lib/redis/sentinel.conf; if [ ! -f $conf ]; then " + waitForN1 + waitReplicas +
			"printf '%s\\n' " + quoteAll(conf) + " > $conf.new; " +
			fmt.Sprintf(`printf '%%s\n' "sentinel monitor %s $ip %d %d" "sentinel down-after-milliseconds %s %d" "sentinel failover-timeout %s %d" "sentinel parallel-syncs %s 1" >> $conf.new; `,
				MasterName, redis.Port, Quorum, MasterName, DownAfter.Milliseconds(), MasterName, FailoverTimeout.Milliseconds(), MasterName) +
			"mv $conf.new $conf; fi; exec redis-server $conf --sentinel"
		specs = append(specs, targets.NodeSpec{Name: fmt.Sprintf("s%d", i), Port: SentinelPort, Cmd: []string{"sh", "-c", script}})
	}
	return specs, nil
}

// quoteAll quotes each line for sh.
func quoteAll(lines []string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = "'" + strings.ReplaceAll(l, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// Validate checks the TTL (see redis.ValidateTTL).
func (Target) Validate(cfg targets.ClientConfig) error { return redis.ValidateTTL(cfg.TTL) }

// isSentinel tells a Sentinel's address from a Redis server's by its port.
func isSentinel(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == strconv.Itoa(SentinelPort)
}

func split(nodes []targets.Node) (servers, sentinels []targets.Node) {
	for _, n := range nodes {
		if isSentinel(n.Addr) {
			sentinels = append(sentinels, n)
		} else {
			servers = append(servers, n)
		}
	}
	return servers, sentinels
}

func sentinelClient(addr string) *goredis.SentinelClient {
	redis.Quiet()
	return goredis.NewSentinelClient(redis.Options(addr, time.Second))
}

// Ready returns nil once the Sentinels agree on a primary, see it healthy
// (flags "master" only: not down, no failover in progress), know every
// replica (none down) and each other, and every Redis
// server agrees: the primary has role master, every other server is its
// replica with the link up and no sync in progress.
func (Target) Ready(ctx context.Context, nodes []targets.Node) error {
	return targets.PollReady(ctx, "redis-sentinel", 200*time.Millisecond, func(ctx context.Context) error { return ready(ctx, nodes) })
}

func ready(ctx context.Context, nodes []targets.Node) error {
	servers, sentinels := split(nodes)
	if len(sentinels) == 0 || len(servers) == 0 {
		return errors.New("no servers or no sentinels")
	}
	primary := ""
	for _, s := range sentinels {
		addr, err := askSentinel(ctx, s.Addr)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if primary != "" && addr != primary {
			return fmt.Errorf("%s names primary %s, another names %s", s.Name, addr, primary)
		}
		primary = addr
		if err := sentinelSees(ctx, s, len(servers)-1, len(sentinels)-1); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	found := false
	for _, n := range servers {
		info, err := replication(ctx, n.Addr)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if n.Addr == primary {
			found = true
			if info["role"] != "master" {
				return fmt.Errorf("%s: the sentinels' primary has role %s", n.Name, info["role"])
			}
			continue
		}
		host, port, _ := net.SplitHostPort(primary)
		if info["role"] != "slave" || info["master_host"] != host || info["master_port"] != port {
			return fmt.Errorf("%s: role %s of %s:%s, not a replica of %s", n.Name, info["role"], info["master_host"], info["master_port"], primary)
		}
		if info["master_link_status"] != "up" || info["master_sync_in_progress"] != "0" {
			return fmt.Errorf("%s: replication link %s, sync in progress %s", n.Name, info["master_link_status"], info["master_sync_in_progress"])
		}
	}
	if !found {
		return fmt.Errorf("the sentinels' primary %s is none of the servers", primary)
	}
	return nil
}

// askSentinel returns the primary's address (ip:port) as one Sentinel
// names it.
func askSentinel(ctx context.Context, addr string) (string, error) {
	c := sentinelClient(addr)
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	r, err := c.GetMasterAddrByName(qctx, MasterName).Result()
	if err != nil {
		return "", err
	}
	if len(r) != 2 {
		return "", fmt.Errorf("get-master-addr-by-name: %v", r)
	}
	return net.JoinHostPort(r[0], r[1]), nil
}

// sentinelSees checks what one Sentinel knows: a healthy primary, the
// replicas (not down) and the other Sentinels.
func sentinelSees(ctx context.Context, s targets.Node, replicas, others int) error {
	c := sentinelClient(s.Addr)
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m, err := c.Master(qctx, MasterName).Result()
	if err != nil {
		return err
	}
	if m["flags"] != "master" {
		return fmt.Errorf("primary %s:%s has flags %s", m["ip"], m["port"], m["flags"])
	}
	if m["num-other-sentinels"] != strconv.Itoa(others) {
		return fmt.Errorf("knows %s other sentinels, not %d", m["num-other-sentinels"], others)
	}
	rs, err := c.Replicas(qctx, MasterName).Result()
	if err != nil {
		return err
	}
	if len(rs) != replicas {
		return fmt.Errorf("knows %d replicas, not %d", len(rs), replicas)
	}
	// The replicas' links are checked on the replicas themselves: a
	// Sentinel reads a replica's INFO only every 10 s.
	for _, r := range rs {
		if r["flags"] != "slave" {
			return fmt.Errorf("replica %s:%s has flags %s", r["ip"], r["port"], r["flags"])
		}
	}
	return nil
}

// replication is a server's INFO replication, as a map.
func replication(ctx context.Context, addr string) (map[string]string, error) {
	c := redis.NewClient(addr, time.Second)
	defer c.Close()
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := c.Info(qctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// ElectsLeader is true: the Sentinels fail the primary over to a replica
// (targets.Elected).
func (Target) ElectsLeader() bool { return true }

// Leader returns the server the Sentinels name as the primary (the answer
// most of them give; they may disagree for a moment during a failover).
func (Target) Leader(ctx context.Context, nodes []targets.Node) (string, error) {
	servers, sentinels := split(nodes)
	votes := map[string]int{}
	best := ""
	var errs []error
	for _, s := range sentinels {
		addr, err := askSentinel(ctx, s.Addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		votes[addr]++
		if votes[addr] > votes[best] {
			best = addr
		}
	}
	for _, n := range servers {
		if best != "" && n.Addr == best {
			return n.Name, nil
		}
	}
	if best != "" {
		return "", fmt.Errorf("redis-sentinel: the sentinels name %s, none of the servers", best)
	}
	return "", fmt.Errorf("redis-sentinel: no sentinel answered: %w", errors.Join(errs...))
}

// Dial returns a client that finds the primary through the Sentinels (the
// endpoints on SentinelPort), with redis.Options's settings: no command
// retries.
func (t Target) Dial(_ context.Context, cfg targets.ClientConfig) (targets.Client, error) {
	if err := t.Validate(cfg); err != nil {
		return nil, err
	}
	var sentinels []string
	for _, e := range cfg.Endpoints {
		if isSentinel(e) {
			sentinels = append(sentinels, e)
		}
	}
	if len(sentinels) == 0 {
		return nil, errors.New("redis-sentinel: no sentinel among the endpoints")
	}
	rpc := redis.RPC(cfg)
	o := redis.Options("", rpc)
	redis.Quiet()
	rdb := goredis.NewFailoverClient(&goredis.FailoverOptions{
		MasterName:            MasterName,
		SentinelAddrs:         sentinels,
		Protocol:              o.Protocol,
		DisableIdentity:       o.DisableIdentity,
		MaxRetries:            o.MaxRetries,
		DialTimeout:           o.DialTimeout,
		DialerRetries:         o.DialerRetries,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		PoolSize:              o.PoolSize,
	})
	rdb.AddHook(redis.NotSentHook{})
	return redis.Connect(rdb, cfg), nil
}
