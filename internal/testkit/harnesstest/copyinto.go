package harnesstest

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/harness"
)

// CopyInto puts a file (an executable: mode 0755) at the clean absolute
// path file in the running container of node in cl, on the Docker Engine
// (docker.CopyInto): a test's tool in an image that has nothing to fetch
// it with (the worker image, FROM scratch: no shell). The test fails when
// it cannot.
func CopyInto(t testing.TB, cl *harness.Cluster, node, file string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := docker.CopyInto(ctx, cl.RunID, node, runtime.File{Path: file, Data: data, Mode: 0o755}); err != nil {
		t.Fatalf("CopyInto %s of %s: %v", file, node, err)
	}
}
