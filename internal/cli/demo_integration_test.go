package cli

// Integration tests of the demo on the targets whose profile differs from
// etcd's: Consul (TTL 10 s, a lease free 2 TTL + 1 s after the last
// renewal, lock-delay 0) and ZooKeeper (ensembles ready in up to 90 s). The
// demo takes its timings from the target's profile; each test tells both
// stories on one real cluster.

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

// demoOn plays the demo on target and checks that it exits 0 with both
// stories told as scripted and judged as claimed.
func demoOn(t *testing.T, target string) {
	t.Helper()
	requireDocker(t)
	res := t.TempDir()
	r := runCLI(t, nil, "demo", "--target", target, "--results", res)
	if r.code != exitValid {
		t.Fatalf("demo --target %s: exit %d, want 0", target, r.code)
	}
	for _, want := range []string{"SIGSTOP", "refused", "ACCEPTED", "is LOST", "REJECTED by the fence", "B's update survived",
		target + " grants the lock to B while A is still frozen", "the checkers say invalid: as expected", "the checkers say valid: as expected"} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), want) {
			t.Errorf("demo --target %s: output lacks %q", target, want)
		}
	}
	assertRunsGone(t, res)
}

func TestDemoConsul(t *testing.T) {
	suite.All(t, harnesstest.ConsulImage)
	demoOn(t, "consul")
}

func TestDemoZooKeeper(t *testing.T) { demoOn(t, "zookeeper") }
