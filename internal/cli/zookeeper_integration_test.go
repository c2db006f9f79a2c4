package cli

// Integration tests of the zookeeper target: the fencecheck binary, run as
// a user runs it, against real 3-server ZooKeeper ensembles in Docker (see
// integration_test.go for the binary and the Docker requirement). The runs
// of a test go in parallel; each is a 30 s run of about a minute of wall
// time.

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
)

// ensureZooKeeperImages builds the zookeeper and worker images first (the
// zookeeper image's apt-get install takes a few minutes from cold), so that
// the runs' wall times are the runs'.
func ensureZooKeeperImages(t *testing.T) {
	t.Helper()
	bin := fencecheckBinary(t)
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	b := &images.Builder{Engine: eng, Log: t.Logf}
	if _, err := b.EnsureZooKeeper(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.EnsureWorker(ctx, bin); err != nil {
		t.Fatal(err)
	}
}

// zookeeperRun runs 30 s of lock-append on a 3-server ensemble, seed 1,
// with a results directory, and returns the run's directory, its results
// and its exit code, which must be a verdict (0 or 1). An ensemble serves
// 6-17 s after its JVMs start on a loaded two-core machine; a test starts
// several at once, next to other tests' clusters, so each run gets 90 s to
// become ready instead of the default 30 s.
func zookeeperRun(t *testing.T, args ...string) (string, resultsJSON, cliResult) {
	t.Helper()
	return seededRun(t, append([]string{"--target", "zookeeper", "--workload", "lock-append", "--ready-timeout", "90s"}, args...)...)
}

// A holder paused past its session timeout: unfenced, an acknowledged
// update is lost; token fencing (the czxid against the fence znode) and
// cas fencing (a multi that checks the lock znode) refuse the stale write.
func TestZooKeeperLockAppendFencingModes(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ensureZooKeeperImages(t)
	for _, fencing := range []string{"none", "token", "cas"} {
		t.Run(fencing, func(t *testing.T) {
			t.Parallel()
			dir, got, r := zookeeperRun(t, "--fencing", fencing, "--nemesis", "pause-holder")
			t.Logf("%s: exit %d, lost %d of %d, fence rejections %d, %d faults, %s", fencing, r.code,
				got.LostUpdates.Lost, got.LostUpdates.Acknowledged, got.FenceRejections, len(got.Faults), r.elapsed.Round(time.Second))
			if fencing == "none" {
				wantLost(t, r, got)
			} else {
				wantFenced(t, r, got)
			}
			if info := readTestInfo(t, dir); info.Target != "zookeeper" || info.TargetVersion != images.ZooKeeperVersion() || info.TTL != "2s" {
				t.Errorf("test.json: target %q version %q ttl %q, want zookeeper %s, the default 2s",
					info.Target, info.TargetVersion, info.TTL, images.ZooKeeperVersion())
			}
			for _, f := range []string{"report.html", "logs/n1.log", "logs/n3.log", "logs/w1.log"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("run directory lacks %s", f)
				}
			}
		})
	}
}

// The faults that hit the ensemble's leader end in a verdict: the leader
// killed (and restarted on its data) or cut off from the other servers. With
// token fencing the run stays valid: the czxid keeps growing across the
// leader change, since the new leader's epoch is higher.
func TestZooKeeperLeaderFaults(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ensureZooKeeperImages(t)
	for _, nemesis := range []string{"kill:leader", "partition:leader"} {
		t.Run(nemesis, func(t *testing.T) {
			t.Parallel()
			dir, got, r := zookeeperRun(t, "--fencing", "token", "--nemesis", nemesis, "--nemesis-interval", "2s")
			t.Logf("%s: exit %d, ops ok %d, lost %d, %d faults, %s", nemesis, r.code,
				got.LostUpdates.Acknowledged, got.LostUpdates.Lost, len(got.Faults), r.elapsed.Round(time.Second))
			if len(got.Faults) == 0 {
				t.Errorf("no fault recorded")
			}
			if r.code != exitValid || got.Valid != true || got.LostUpdates.Lost != 0 {
				t.Errorf("exit %d, valid %v, lost %d; want 0, valid, 0", r.code, got.Valid, got.LostUpdates.Lost)
			}
			leaderChangedOrReplay(t, dir, got, func() (string, resultsJSON) {
				dir, got, _ := zookeeperRun(t, "--fencing", "token", "--nemesis", nemesis, "--nemesis-interval", "2s", "--seed", "2")
				return dir, got
			})
		})
	}
}
