package nemesis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/targets"
)

// A cluster whose faults change no node's network (NetHelpers unset, as
// for the demo's pause-holder) is started without the network helpers'
// image, the base: none of its images is the base. A network command in
// it is refused at once, saying that the run has no helper and why, not
// with the Engine's "No such image".
func TestNoNetHelperWithoutNetFaults(t *testing.T) {
	cl := harnesstest.Cluster(t, harness.ClusterConfig{Target: etcd.Target{}, Nodes: 1,
		Client: targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 2 * time.Second}})
	if ref, ok := cl.Images[images.Base]; ok {
		t.Errorf("the base image %s was ensured for a run without network faults", ref)
	}
	for kind, ref := range cl.Images {
		if strings.HasPrefix(ref, "fencecheck/base:") {
			t.Errorf("the %s image is the base, %s", kind, ref)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := cl.NetExec(ctx, "n1", "iptables", "-w", "-S")
	if !errors.Is(err, runtime.ErrNoNetHelper) || !strings.Contains(err.Error(), "n1") || !strings.Contains(err.Error(), "network helper") {
		t.Errorf("NetExec without a helper image: %v; want runtime.ErrNoNetHelper, naming n1", err)
	}
	if err := cl.WarmNet(ctx, []string{"n1"}); !errors.Is(err, runtime.ErrNoNetHelper) {
		t.Errorf("WarmNet without a helper image: %v; want runtime.ErrNoNetHelper", err)
	}
}
