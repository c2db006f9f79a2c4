package tables

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built with -tags nokubernetes (make demo's bin/demo/) links no
// Kubernetes package, says so in fencecheck version, and a run that names
// a Kubernetes target is refused with the reason, before anything starts;
// the names it gives are the default build's Kubernetes targets.
func TestLeanBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fencecheck with -tags nokubernetes")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	list := exec.Command("go", "list", "-tags", "nokubernetes", "-deps", "./cmd/fencecheck", "./cmd/fencecheck-worker")
	list.Dir = root
	deps, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(deps)) {
		if strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") {
			t.Errorf("a -tags nokubernetes build links %s", p)
		}
	}
	bin := filepath.Join(t.TempDir(), "fencecheck")
	build := exec.Command("go", "build", "-tags", "nokubernetes", "-o", bin, "./cmd/fencecheck")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nokubernetes: %v: %s", err, out)
	}
	var names []string
	for _, k := range kubernetesTargets {
		names = append(names, k.Name())
	}
	if len(names) == 0 {
		t.Fatal("the default build has no Kubernetes targets")
	}
	version, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	if want := "without    the targets " + strings.Join(names, ", ") + " "; !strings.Contains(string(version), want) {
		t.Errorf("version says\n%s\nwant a line with %q", version, want)
	}
	for _, name := range names {
		out, err := exec.Command(bin, "run", "--target", name, "--results", t.TempDir()).CombinedOutput()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 254 || !strings.Contains(string(out), "not in this binary: it was built with -tags nokubernetes") {
			t.Errorf("run --target %s: exit %d (want 254: bad input, before anything starts): %s", name, code, out)
		}
	}
	if Omitted != nil {
		t.Errorf("the default build omits %v", Omitted)
	}
}
