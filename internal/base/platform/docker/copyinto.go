package docker

import (
	"context"
	"fmt"
	"slices"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// CopyInto puts f (a clean absolute path) into the running container of
// node in the run runID, not its network helper: a test's tool in an image
// that has nothing to fetch it with (the worker image, FROM scratch: no
// shell). It connects to the Engine of the environment (DOCKER_HOST).
func CopyInto(ctx context.Context, runID runtime.RunID, node string, f runtime.File) error {
	arch, err := tarOf([]runtime.File{f})
	if err != nil {
		return err
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	cs, err := cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", runtime.LabelRun+"="+runID.String()),
		filters.Arg("label", runtime.LabelNode+"="+node),
		filters.Arg("status", "running"))})
	if err != nil {
		return err
	}
	// Not its network helper, which carries the node's name too.
	cs = slices.DeleteFunc(cs, func(c container.Summary) bool { return c.Labels[runtime.LabelRole] == runtime.RoleNet })
	if len(cs) != 1 {
		return fmt.Errorf("docker: the running container of %s in run %s: %d found", node, runID, len(cs))
	}
	if err := cli.CopyToContainer(ctx, cs[0].ID, "/", arch, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("docker: copy %s into %s: %w", f.Path, node, err)
	}
	return nil
}
