package fencecheck_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
	"github.com/fencecheck/fencecheck/targets"
)

// Recipes that cannot be added are refused before anything runs (254).
func TestRecipeValidation(t *testing.T) {
	for _, r := range []fencecheck.Recipe{
		{Name: "", Servers: "redis"},
		{Name: "etcd", Servers: "etcd"},
		{Name: "mylock", Servers: "nosuch"},
		{Name: "mylock", Servers: "redis"}, // no Dial
	} {
		if code := fencecheck.Run([]string{"run", "--target", "mylock"}, r); code != 254 {
			t.Errorf("%+v: exit %d, want 254", r, code)
		}
	}
	dial := func(context.Context, targets.ClientConfig) (targets.Client, error) { return nil, nil }
	twice := fencecheck.Recipe{Name: "mylock", Servers: "redis", Dial: dial}
	if code := fencecheck.Run([]string{"run", "--target", "mylock"}, twice, twice); code != 254 {
		t.Errorf("two recipes with one name: exit %d, want 254", code)
	}
	// Servers whose credentials are made per run for their own client.
	k8s := fencecheck.Recipe{Name: "mylock", Servers: "kubernetes", Dial: dial}
	if code := fencecheck.Run([]string{"run", "--target", "mylock"}, k8s); code != 254 {
		t.Errorf("a recipe on kubernetes: exit %d, want 254", code)
	}
}

// A user's module outside this repository builds its own fencecheck binary
// with the public API and a recipe of its own (testdata/usermodule), and
// runs it end to end: that binary is also its workers' binary. Unfenced, a
// paused holder loses an update; with token fencing the recipe's tokens
// reach the resource, which refuses the stale writes.
func TestUserModule(t *testing.T) {
	harnesstest.RequireDocker(t)
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "usermodule", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	goMod := "module example.com/mylock\n\ngo 1.26.0\n\nrequire github.com/fencecheck/fencecheck v0.0.0\n\nreplace github.com/fencecheck/fencecheck => " + root + "\n"
	for name, b := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": src} {
		if err := os.WriteFile(filepath.Join(mod, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gocmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		// The suite's own GOFLAGS kept (make test's -trimpath), so the
		// build reuses what the suite's build compiled instead of
		// compiling every dependency again.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", strings.TrimSpace("GOFLAGS=-mod=mod "+os.Getenv("GOFLAGS")))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// No "go mod tidy": tidy resolves the test imports of dependencies'
	// dependencies that fencecheck's own build list does not provide to
	// their newest versions (grpc, otelhttp), and every package above
	// them, client-go's included, compiles again (15 CPU-minutes on a
	// fresh machine, against 11 s). -mod=mod adds the requirements the
	// build needs at the versions fencecheck selects.
	gocmd("build", "-o", "mylock", ".")
	bin := filepath.Join(mod, "mylock")

	for _, tc := range []struct {
		fencing string
		code    int
	}{{"none", 1}, {"token", 0}} {
		t.Run(tc.fencing, func(t *testing.T) {
			t.Parallel()
			res := t.TempDir()
			cmd := exec.Command(bin, "run", "--target", "mylock", "--fencing", tc.fencing, "--nemesis", "pause-holder",
				"--time-limit", "20s", "--seed", "1", "--results", res, "--quiet")
			start := time.Now()
			out, err := cmd.CombinedOutput()
			code := cmd.ProcessState.ExitCode()
			t.Logf("exit %d in %s (%v):\n%s", code, time.Since(start).Round(time.Second), err, out)
			if code != tc.code {
				t.Fatalf("exit %d, want %d", code, tc.code)
			}
			var got struct {
				FenceRejections int `json:"fence_rejections"`
			}
			var info struct {
				Target string `json:"target"`
			}
			readJSON(t, filepath.Join(res, "latest", "results.json"), &got)
			readJSON(t, filepath.Join(res, "latest", "test.json"), &info)
			if info.Target != "mylock" {
				t.Errorf("test.json target %q, want mylock", info.Target)
			}
			if tc.fencing == "token" && got.FenceRejections < 1 {
				t.Errorf("no fence rejection: the recipe's tokens did not fence")
			}
		})
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
