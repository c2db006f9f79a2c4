package cli

import (
	"io"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/images"
)

// matrix --images lists the kinds of images the cells of its shard use,
// each once, base first and the worker last, running nothing (no Engine):
// what the CI image cache holds, and no more. (In process: nothing here
// reaches an Engine.)
func TestMatrixImages(t *testing.T) {
	other := images.Versions(images.Etcd)[1].Name
	for _, c := range []struct {
		args []string
		want string
	}{
		// etcd and the worker are FROM scratch; the default nemesis
		// (pause-holder) changes no node's network: no base.
		{[]string{"--target", "etcd", "--fencing", "none,token"}, "etcd worker"},
		// A fault that does needs the network helpers' base.
		{[]string{"--target", "etcd", "--fencing", "token", "--nemesis", "partition"}, "base etcd worker"},
		{[]string{"--target", "redis", "--fencing", "none,token", "--nemesis", "pause-holder", "--nemesis", "kill"}, "base worker"},
		// Kubernetes' apiservers run beside an etcd image's servers.
		{[]string{"--target", "kubernetes", "--fencing", "token"}, "base etcd kubernetes worker"},
		{[]string{"--target", "etcd", "--version", "3.6.16," + other, "--fencing", "token"}, "etcd etcd@" + other + " worker"},
		// A shard lists its own cells' images: cell 0 is etcd's, cell 1
		// zookeeper's.
		{[]string{"--target", "etcd,zookeeper", "--fencing", "token", "--shard", "1/2"}, "etcd worker"},
		{[]string{"--target", "etcd,zookeeper", "--fencing", "token", "--shard", "2/2"}, "base zookeeper worker"},
		// Servers of one's own: none of fencecheck's server images, and
		// no base: the worker is FROM scratch and no fault of the default
		// nemesis there changes a node's network.
		{[]string{"--target", "etcd", "--fencing", "token", "--endpoints", "10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379"}, "worker"},
	} {
		code, stdout, stderr := runInProcess(append(append([]string{"matrix"}, c.args...), "--images")...)
		if got := strings.Join(strings.Fields(stdout), " "); code != 0 || got != c.want {
			t.Errorf("matrix %s --images: exit %d, %q, want %q\n%s", strings.Join(c.args, " "), code, got, c.want, stderr)
		}
	}
	if code, _, _ := runInProcess("matrix", "--target", "etcd", "--fencing", "token", "--images", "--list"); code != exitBadArgs {
		t.Errorf("--images with --list: exit %d, want 254", code)
	}
}

// A matrix's unfenced cell is not judged: --keep-data auto keeps none of
// its data (harness.Config.NotJudged); a fenced cell's, or any cell's
// under --strict, is kept when invalid.
func TestMatrixCellsNotJudgedKeepNoData(t *testing.T) {
	o := parts.AddFlags(newFlags("matrix", io.Discard), matrixKnob)
	for _, strict := range []bool{false, true} {
		cells, _, err := matrixCells(o, axes([]string{"etcd"}, []string{"lock-store"}, []string{"none", "token"}, []string{"pause-holder"}), 1, 1, strict, false, io.Discard)
		if err != nil || len(cells) != 2 {
			t.Fatalf("%d cells, %v", len(cells), err)
		}
		for _, c := range cells {
			if want := c.Fencing == "none" && !strict; c.Config.NotJudged != want {
				t.Errorf("strict %v, fencing %s: NotJudged %v, want %v", strict, c.Fencing, c.Config.NotJudged, want)
			}
		}
	}
}
