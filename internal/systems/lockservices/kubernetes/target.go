// Package kubernetes is the target "kubernetes": Leases of
// coordination.k8s.io/v1 on a real control plane, kube-apiserver (built
// from k8s.io/kubernetes, image kind kubernetes) over fencecheck's own etcd,
// locked with client-go's tools/leaderelection as every controller elects
// its leader.
//
// A cluster is three etcd nodes (n1..n3, tier "etcd", the etcd target's
// default image and command) and --nodes apiservers (a1.., tier "apiserver", the
// servers clients talk to; 2 by default, as a production control plane).
// Every server is a server to the faults: a pause or a kill can hit an
// apiserver or an etcd node, and the report names the tier.
//
// The servers serve TLS with a certificate of a certificate authority made
// for the run (Secure), and authenticate clients by a bearer token (no
// anonymous request); every authenticated request is allowed.
//
// The variant "kubernetes-cle" (Coordinated) is the same cluster with
// Coordinated Leader Election on: the CoordinatedLeaderElection feature
// gate (beta, off by default in 1.37) and the API it needs,
// coordination.k8s.io/v1beta1 (LeaseCandidate), which a beta API is not
// by default.
package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/targets"
)

const (
	// APIPort is kube-apiserver's HTTPS port.
	APIPort = 6443
	// TierEtcd is the tier of the etcd nodes under the apiservers, and
	// TierAPIServer the apiservers', which clients talk to.
	TierEtcd      = "etcd"
	TierAPIServer = "apiserver"
	// etcdNodes is how many etcd nodes a cluster has.
	etcdNodes = 3
	// maxAPIServers bounds --nodes.
	maxAPIServers = 5
)

// Target is Kubernetes Leases. Its zero value has no credentials: the
// harness runs the one Secure returns.
type Target struct {
	// Coordinated runs the apiservers with Coordinated Leader Election
	// (coordinatedFlags): the target "kubernetes-cle". Its own recipe is
	// the same; a client program that uses it (client-go's
	// LeaderElectionConfig.Coordinated with a LeaseCandidate) needs it.
	Coordinated bool

	creds *targets.Credentials
	files []targets.File // written into every apiserver
}

// Name is "kubernetes", or "kubernetes-cle" when Coordinated.
func (t Target) Name() string {
	if t.Coordinated {
		return "kubernetes-cle"
	}
	return "kubernetes"
}

// Image is the kubernetes image (kube-apiserver): the apiservers'. The etcd
// nodes name their own.
func (Target) Image() string { return kinds.Kubernetes }

// ClientTier is the apiservers' (targets.Tiered).
func (Target) ClientTier() string { return TierAPIServer }

// LeaderTier is etcd's: Leader is the etcd leader (targets.Tiered).
func (Target) LeaderTier() string { return TierEtcd }

// DefaultNodes is 2 apiservers.
func (Target) DefaultNodes() int { return 2 }

// Profile: leases of whole seconds (a Lease's leaseDurationSeconds), and an
// apiserver that takes several seconds to serve after etcd does.
func (Target) Profile() targets.Profile {
	return targets.Profile{TTL: 2 * time.Second, ReadyTimeout: 90 * time.Second,
		Why: "kube-apiserver serves 6-10 s after its container starts, on top of etcd"}
}

// Election names the leader-election recipe and its term.
func (Target) Election() string {
	return "client-go tools/leaderelection with a LeaseLock; term: the Lease's leaseTransitions after the grant, plus one"
}

// Nodes returns three etcd nodes and n apiservers over them.
func (t Target) Nodes(n int) ([]targets.NodeSpec, error) {
	if n < 1 || n > maxAPIServers {
		return nil, fmt.Errorf("%w: kubernetes runs 1 to %d apiservers (--nodes; its etcd has %d nodes of its own), not %d", targets.ErrBadConfig, maxAPIServers, etcdNodes, n)
	}
	specs, err := etcd.Target{}.Nodes(etcdNodes)
	if err != nil {
		return nil, err
	}
	var urls []string
	for i := range specs {
		specs[i].Image, specs[i].Tier = etcd.Target{}.Image(), TierEtcd
		urls = append(urls, fmt.Sprintf("http://%s:%d", specs[i].Name, specs[i].Port))
	}
	for i := 1; i <= n; i++ {
		specs = append(specs, targets.NodeSpec{Name: fmt.Sprintf("a%d", i), Port: APIPort, Cmd: apiServerCmd(urls, t.Coordinated), Files: t.files, Tier: TierAPIServer})
	}
	return specs, nil
}

// Validate refuses leases that are not whole seconds (a Lease keeps its
// duration in seconds) or shorter than 1 s, and leader-election timings
// client-go refuses (LeaseDuration > RenewDeadline > 1.2 RetryPeriod: they
// hold in the proportions used, so only the TTL is checked).
func (Target) Validate(cfg targets.ClientConfig) error {
	if cfg.TTL < time.Second || cfg.TTL%time.Second != 0 {
		return fmt.Errorf("%w: kubernetes: --ttl %s: a Lease's duration is whole seconds (leaseDurationSeconds), at least 1s", targets.ErrBadConfig, cfg.TTL)
	}
	return nil
}

// Timings are the leader election's: lease duration = TTL, renew deadline
// and retry period in client-go's default proportions (15 s, 10 s, 2 s).
func Timings(ttl time.Duration) (lease, renew, retry time.Duration) {
	return ttl, ttl * 10 / 15, ttl * 2 / 15
}

// Ready returns nil once the etcd nodes have a leader and every apiserver
// answers /readyz to the run's token.
func (t Target) Ready(ctx context.Context, nodes []targets.Node) error {
	if err := (etcd.Target{}).Ready(ctx, tier(nodes, TierEtcd)); err != nil {
		return err
	}
	return targets.PollReady(ctx, "kubernetes", 250*time.Millisecond, func(ctx context.Context) error {
		for _, n := range tier(nodes, TierAPIServer) {
			if err := readyz(ctx, n.Addr, t.creds); err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
		}
		return nil
	})
}

// ElectsLeader is true: the etcd members elect their Raft leader
// (targets.Elected).
func (Target) ElectsLeader() bool { return true }

// Leader is the etcd leader: the node whose loss stalls every apiserver.
func (Target) Leader(ctx context.Context, nodes []targets.Node) (string, error) {
	return etcd.Target{}.Leader(ctx, tier(nodes, TierEtcd))
}

// tier is the nodes of tier name.
func tier(nodes []targets.Node, name string) []targets.Node {
	var out []targets.Node
	for _, n := range nodes {
		if n.Tier == name {
			out = append(out, n)
		}
	}
	return out
}

// readyz asks an apiserver whether it serves.
func readyz(ctx context.Context, addr string, creds *targets.Credentials) error {
	if creds == nil || creds.CA == "" {
		return fmt.Errorf("no credentials (a token and the servers' CA)")
	}
	tc, err := creds.TLSConfig()
	if err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	cli := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 2 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/readyz", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+creds.Token)
	resp, err := cli.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}
