package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkerDeps fails if the worker binary links what the worker image
// must not carry: the Docker SDK (and the OpenTelemetry it brings), the
// harness, the image builder, the report or the browser driver. Any of
// them would make the binary large again and its image's tag change with
// edits that have nothing to do with a worker (a report template).
func TestWorkerDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const mod = "github.com/fencecheck/fencecheck/"
	forbidden := []struct {
		pkg    string
		prefix bool // a module's packages, else the package alone
	}{
		{"github.com/docker/", true},
		{"github.com/moby/", true},
		{"go.opentelemetry.io/", true},
		{"github.com/chromedp/", true},
		{mod + "internal/report", false},
		{mod + "internal/harness", true},
		{mod + "internal/base/images", false},
		{mod + "internal/cli", false},
		{mod + "internal/clients/workloads/views", false},
	}
	deps := strings.Fields(string(out))
	found := map[string]bool{}
	for _, d := range deps {
		found[d] = true
		for _, f := range forbidden {
			if d == f.pkg || (f.prefix && strings.HasPrefix(d, f.pkg)) || (!f.prefix && strings.HasPrefix(d, f.pkg+"/")) {
				if d != mod+"internal/base/images/kinds" {
					t.Errorf("the worker binary links %s", d)
				}
			}
		}
	}
	// The test reads what it means to: the worker's own packages are there.
	for _, want := range []string{mod + "internal/clients/worker", mod + "internal/clients/tables", mod + "internal/systems/lockservices/etcd"} {
		if !found[want] {
			t.Errorf("go list -deps does not list %s: %d packages read", want, len(deps))
		}
	}
}
