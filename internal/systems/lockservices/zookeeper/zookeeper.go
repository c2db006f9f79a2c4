// Package zookeeper is the ZooKeeper target: an ensemble of Debian's
// ZooKeeper servers (3.8.0, on Debian's headless OpenJDK), the standard lock
// recipe of ephemeral sequential znodes as the lock, and znodes of the same
// ensemble as the protected resource. Client: github.com/go-zookeeper/zk.
//
// Lease: a ZooKeeper session of its own per grant, with a session timeout of
// --ttl. The servers run with a tick of 1 s and bound session timeouts
// between 2 and 20 ticks (2 s to 20 s), which Validate enforces. The client
// pings the server every third of the timeout; the leader expires a session
// that nobody heard from for the timeout, rounded up to the next tick, and
// deletes its ephemeral nodes; followers tell the leader about their
// sessions every half tick. MaxLease is TTL + 2 ticks. The client's estimate
// (Lease.Remaining) is the TTL from the last time anything arrived from the
// server on the session's connection (a ping's answer at the latest), and 0
// once the session is known to have ended.
//
// Lock recipe: a client creates an ephemeral sequential znode under
// PREFIX/lock, named after a GUID of its own, and holds the lock when its
// znode has the lowest sequence number; else it watches the znode just
// before its own and looks again when that one goes. A create whose answer
// was lost (the connection dropped) is found again by its GUID, after a
// sync, in the same attempt. An attempt that fails closes its session, so
// that no znode of it is left behind. Release deletes the znode and closes
// the lease's session.
//
// Fencing token: the creation zxid (czxid) of the holder's znode. A zxid is
// the ensemble's transaction id: its high 32 bits are the epoch, which every
// new leader raises, and its low 32 bits count the epoch's transactions, so
// that zxids only grow, across leader changes too.
//
// Fencing modes at PREFIX/value (the list, as JSON):
//   - none: a plain set of the value (any version);
//   - token: PREFIX/fence holds the highest accepted token. The writer syncs
//     and reads it (value and version), refuses if it is greater than its
//     token, else sends a multi [set fence = its token if the fence's
//     version is still the one it read; set value]. ZooKeeper compares no
//     values in a transaction; the version check makes the read and the write
//     one atomic step. A multi whose version check fails (the fence moved
//     under the writer) is rejected: it certainly did not apply. Fenced
//     reads raise the fence the same way, then read the value;
//   - cas: a multi [check that the holder's lock znode still exists, at the
//     version it was created with; set value]. The lock znode is the
//     ephemeral of the lease's session: it exists exactly as long as the
//     writer holds the lock.
//
// The library never sends a request twice: a request whose connection
// dropped fails (zk.ErrConnectionClosed), and the caller sees an error. Each
// call waits at most --rpc-timeout. Before a request the client makes sure
// its connection was heard from within the library's receive timeout, and
// reconnects first if it was not (see conn.fresh).
package zookeeper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/targets"
)

const (
	clientPort = 2181
	// Tick is the servers' tickTime: the unit of their session timeouts
	// and of the leader's session expiry.
	Tick = time.Second
	// MinTTL and MaxTTL bound session timeouts: ZooKeeper's
	// minSessionTimeout and maxSessionTimeout, 2 and 20 ticks.
	MinTTL = 2 * Tick
	MaxTTL = 20 * Tick
	// dataDir holds the node's myid and its snapshots and transaction log,
	// on the container's file system: a killed and restarted node keeps them.
	dataDir = "/var/lib/fencecheck-zookeeper"
)

// Target is ZooKeeper.
type Target struct{}

// Name is "zookeeper".
func (Target) Name() string { return "zookeeper" }

// Image is the zookeeper image.
func (Target) Image() string { return kinds.ZooKeeper }

// Version is the ZooKeeper server version the image runs.
func (Target) Version() string { return kinds.ZooKeeperVersion() }

// Election names the leader-election recipe and its term.
func (Target) Election() string {
	return "ZooKeeper election recipe (ephemeral sequential znodes); term: the leader node's czxid"
}

// config is the zoo.cfg of an n-server ensemble.
func config(n int) string {
	lines := []string{
		fmt.Sprintf("tickTime=%d", Tick/time.Millisecond),
		"initLimit=10",
		"syncLimit=3",
		"dataDir=" + dataDir + "/data",
		fmt.Sprintf("clientPort=%d", clientPort),
		fmt.Sprintf("minSessionTimeout=%d", MinTTL/time.Millisecond),
		fmt.Sprintf("maxSessionTimeout=%d", MaxTTL/time.Millisecond),
		"maxClientCnxns=0",
		"4lw.commands.whitelist=ruok,srvr,stat,mntr",
		"admin.enableServer=false",
		// A single server runs as an ensemble of one (Mode: leader).
		"standaloneEnabled=false",
	}
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf("server.%d=n%d:2888:3888", i, i))
	}
	return strings.Join(lines, "\n") + "\n"
}

// start is the node's command: it writes zoo.cfg and myid (from the
// environment) and runs the server as PID 1, logging to the console, with a
// small heap and a light JIT for a machine that runs several ensembles.
const start = `set -e
mkdir -p ` + dataDir + `/data
printf '%s\n' "$ZK_MYID" >` + dataDir + `/data/myid
printf '%s' "$ZK_CFG" >` + dataDir + `/zoo.cfg
exec java -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
	-Djava.net.preferIPv4Stack=true \
	-Dzookeeper.root.logger=INFO,CONSOLE -Dzookeeper.log.dir=` + dataDir + ` \
	-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar \
	org.apache.zookeeper.server.quorum.QuorumPeerMain ` + dataDir + `/zoo.cfg
`

// Nodes returns an n-server ensemble, n in 1, 3, 5 (or any n from 1 to 7).
func (Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n < 1 || n > 7 {
		return nil, fmt.Errorf("%w: zookeeper runs 1 to 7 servers (usually 1, 3 or 5), not %d", targets.ErrBadConfig, n)
	}
	cfg := config(n)
	specs := make([]targets.NodeSpec, n)
	for i := range specs {
		specs[i] = targets.NodeSpec{
			Name: fmt.Sprintf("n%d", i+1),
			Port: clientPort,
			Cmd:  []string{"/bin/sh", "-c", start},
			Env:  []string{fmt.Sprintf("ZK_MYID=%d", i+1), "ZK_CFG=" + cfg},
			// The snapshots and the transaction log, which ZooKeeper
			// fsyncs before it acknowledges a write (forceSync=yes).
			DataDir: dataDir,
		}
	}
	return specs, nil
}

// Validate rejects session timeouts outside ZooKeeper's bounds (2 to 20
// ticks of 1 s) or not in whole milliseconds.
func (Target) Validate(cfg targets.ClientConfig) error {
	if cfg.TTL < MinTTL || cfg.TTL > MaxTTL {
		return fmt.Errorf("%w: zookeeper session timeouts are between 2 and 20 ticks (%s to %s with tickTime %s); --ttl %s is not",
			targets.ErrBadConfig, MinTTL, MaxTTL, Tick, cfg.TTL)
	}
	if cfg.TTL%time.Millisecond != 0 {
		return fmt.Errorf("%w: zookeeper session timeouts are whole milliseconds; --ttl %s is not", targets.ErrBadConfig, cfg.TTL)
	}
	return nil
}

// Profile gives the ensemble 90 s to serve: three JVMs start and elect a
// leader in 6 to 17 s on a loaded 2-core machine, and more when several
// ensembles start at once.
func (Target) Profile() targets.Profile {
	return targets.Profile{ReadyTimeout: 90 * time.Second, Why: "90s to become ready (three JVMs start and elect a leader)"}
}

// MaxLease is TTL + 2 ticks: the leader expires a session at the first tick
// after the timeout since it last heard of it, and hears of a follower's
// sessions every half tick.
func (Target) MaxLease(cfg targets.ClientConfig) time.Duration { return cfg.TTL + 2*Tick }

// fourLetter sends a four-letter command to a server and returns its answer.
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	// A cancelled ctx ends a read from a paused server at once, not at
	// the deadline (the leader watch stops so at the end of a run).
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if _, err := io.WriteString(nc, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(nc, 64<<10))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// mode is the Mode line of a server's srvr answer (leader, follower,
// standalone), or an error saying why there is none.
func mode(ctx context.Context, addr string) (string, error) {
	out, err := fourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("srvr: %q", strings.TrimSpace(out))
}

func leads(m string) bool { return m == "leader" || m == "standalone" }

// ready is nil when every server answers ruok with imok and serves as the
// leader or a follower, with one leader among them.
func ready(ctx context.Context, nodes []targets.Node) error {
	leaders := 0
	for _, n := range nodes {
		out, err := fourLetter(ctx, n.Addr, "ruok")
		if err != nil {
			return fmt.Errorf("%s: ruok: %w", n.Name, err)
		}
		if out != "imok" {
			return fmt.Errorf("%s: ruok: %q", n.Name, out)
		}
		m, err := mode(ctx, n.Addr)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		switch {
		case leads(m):
			leaders++
		case m != "follower":
			return fmt.Errorf("%s: mode %s", n.Name, m)
		}
	}
	if leaders != 1 {
		return fmt.Errorf("%d servers say they lead", leaders)
	}
	// A follower answers srvr before it has synced with the leader, and a
	// session is a transaction of the quorum: the ensemble serves once a
	// session opens through each server.
	for _, n := range nodes {
		if err := openSession(ctx, n.Addr); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	return nil
}

// openSession opens a session through the server at addr and closes it.
func openSession(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := dial(ctx, []string{addr}, MinTTL)
	if err != nil {
		return err
	}
	return c.close(ctx)
}

// Ready returns nil once every server is ready (see ready).
func (Target) Ready(ctx context.Context, nodes []targets.Node) error {
	return targets.PollReady(ctx, "zookeeper", 200*time.Millisecond, func(ctx context.Context) error { return ready(ctx, nodes) })
}

// ElectsLeader is true: the ensemble elects its leader (Zab;
// targets.Elected).
func (Target) ElectsLeader() bool { return true }

// Leader returns the name of the server whose srvr says Mode: leader.
func (Target) Leader(ctx context.Context, nodes []targets.Node) (string, error) {
	var errs []error
	for _, n := range nodes {
		m, err := mode(ctx, n.Addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		if leads(m) {
			return n.Name, nil
		}
	}
	if len(errs) == 0 {
		return "", errors.New("zookeeper: no leader found: no server says it leads")
	}
	return "", fmt.Errorf("zookeeper: no leader found: %w", errors.Join(errs...))
}

// Interfaces.
var (
	_ targets.Target       = Target{}
	_ targets.LeaseBounder = Target{}
	_ targets.ReadModer    = Target{}
	_ targets.Electing     = Target{}
	_ targets.Elected      = Target{}
)
