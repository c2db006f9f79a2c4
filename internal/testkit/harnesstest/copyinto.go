package harnesstest

import (
	"archive/tar"
	"bytes"
	"context"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/harness"
)

// CopyInto puts a file (an executable: mode 0755) at the clean absolute
// path file in the running container of node in cl, on the Docker Engine:
// a test's tool in an image that has nothing to fetch it with (the worker
// image, FROM scratch: no shell). The test fails when it cannot.
func CopyInto(t testing.TB, cl *harness.Cluster, node, file string, data []byte) {
	t.Helper()
	if !path.IsAbs(file) || path.Clean(file) != file {
		t.Fatalf("CopyInto %s: not a clean absolute path", file)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cs, err := cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", runtime.LabelRun+"="+cl.RunID.String()),
		filters.Arg("label", runtime.LabelNode+"="+node),
		filters.Arg("status", "running"))})
	// Not its network helper, which carries the node's name too.
	cs = slices.DeleteFunc(cs, func(c container.Summary) bool { return c.Labels[runtime.LabelRole] == runtime.RoleNet })
	if err != nil || len(cs) != 1 {
		t.Fatalf("CopyInto: the container of %s in run %s: %d found, %v", node, cl.RunID, len(cs), err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path.Base(file), Mode: 0o755, Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cli.CopyToContainer(ctx, cs[0].ID, path.Dir(file), &buf, container.CopyToContainerOptions{}); err != nil {
		t.Fatalf("CopyInto %s of %s: %v", file, node, err)
	}
}
