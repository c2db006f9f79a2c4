package docker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/testkit/harnesstest"
)

// withResponseTimeout sets docker.ResponseTimeout for one test.
func withResponseTimeout(t *testing.T, d time.Duration) {
	old := docker.ResponseTimeout
	docker.ResponseTimeout = d
	t.Cleanup(func() { docker.ResponseTimeout = old })
}

// engineWithBase connects to the real engine (the test skips only under
// -short or FENCECHECK_SKIP_DOCKER=1) and builds the base image if it is
// missing. The context and the engine end with the test.
func engineWithBase(t *testing.T) (context.Context, *docker.Engine, string) {
	t.Helper()
	harnesstest.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	e, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	base, err := (&images.Builder{Engine: e}).EnsureBase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, e, base
}

// An engine that answers /_ping but never answers anything else, as the
// Docker 20.10 engine deadlocked in libnetwork did: calls fail after
// ResponseTimeout instead of hanging, and so does Clean.
func TestUnansweringEngineFailsCalls(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hung := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Header().Set("Api-Version", "1.41")
			w.Write([]byte("OK"))
			return
		}
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(hung); srv.Close() })

	t.Setenv("DOCKER_HOST", "unix://"+sock)
	withResponseTimeout(t, time.Second)
	e, err := docker.Connect(context.Background())
	if err != nil {
		t.Fatalf("connect to an engine that answers pings: %v", err)
	}
	defer e.Close()

	// Without the response timeout the calls below would end only with
	// this context, after the hang limit: each must end by the timeout
	// (about 1 s), so with the context still live. By looking at which
	// ended the call, not at the clock.
	ctx, cancel := context.WithTimeout(context.Background(), bound.HangLimit)
	defer cancel()
	_, err = docker.SDK(e).NetworkList(ctx, network.ListOptions{})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("network list on a hung engine: %v (context: %v), want an error from the response timeout", err, ctx.Err())
	}
	t.Logf("network list: %v", err)

	if _, err := e.Clean(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("clean on a hung engine: %v (context: %v), want an error from the response timeout", err, ctx.Err())
	}
}

// On a real engine, a wait that lasts longer than ResponseTimeout succeeds:
// the timeout bounds only the wait for the engine to start answering.
func TestResponseTimeoutLetsStreamsRun(t *testing.T) {
	ctx, plain, base := engineWithBase(t)
	rt, err := docker.New(ctx, plain, runtime.NewRunID(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := rt.Teardown(); err != nil {
			t.Error(err)
		}
	}()
	c, err := rt.Start(ctx, runtime.ContainerSpec{Name: "n1", Role: runtime.RoleServer, Image: base, Cmd: []string{"sleep", "6"}})
	if err != nil {
		t.Fatal(err)
	}
	// Only the wait goes through a client with a 1 s response timeout:
	// other calls on a loaded machine may take about that long.
	withResponseTimeout(t, time.Second)
	e, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := time.Now()
	okc, errc := docker.SDK(e).ContainerWait(ctx, c.ID, container.WaitConditionNotRunning)
	select {
	case st := <-okc:
		// The wait outlasted the response timeout (the container's 6 s
		// less what the start and the connection took: on a loaded
		// machine they can take seconds) and ended with the sleep.
		if took := time.Since(start); took < 2*time.Second || st.StatusCode != 0 {
			t.Errorf("wait returned after %s with status %d, want about 6s less the set-up (2s at least) and 0", took, st.StatusCode)
		}
	case err := <-errc:
		t.Fatalf("a 6s wait under a 1s response timeout: %v", err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("test timed out")
	}
}

// A run's network that still has an endpoint when its containers are gone
// (here: a container fencecheck did not start, so Clean does not remove it)
// is removed anyway: the endpoint is disconnected by force, as the Engine's
// stale endpoints after a restart-then-remove race must be.
func TestCleanRemovesNetworkWithActiveEndpoints(t *testing.T) {
	ctx, e, base := engineWithBase(t)
	runID := runtime.NewRunID()
	if _, err := docker.New(ctx, e, runID, base); err != nil {
		t.Fatal(err)
	}
	cli := docker.SDK(e)
	// An unlabelled container on the run's network.
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: base, Cmd: []string{"sleep", "60"}},
		&container.HostConfig{NetworkMode: container.NetworkMode("fencecheck-" + runID.String())}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cli.NetworkRemove(ctx, "fencecheck-"+runID.String()); err == nil || !strings.Contains(err.Error(), "active endpoints") {
		t.Fatalf("plain network remove: %v, want the engine's active endpoints error", err)
	}

	done, err := e.CleanRun(ctx, runID)
	if err != nil || done.Networks != 1 || done.Containers != 0 {
		t.Fatalf("clean: %+v, %v; want the network removed and no container", done, err)
	}
	if ns, err := cli.NetworkList(ctx, network.ListOptions{}); err != nil ||
		slices.ContainsFunc(ns, func(n network.Summary) bool { return n.Name == "fencecheck-"+runID.String() }) {
		t.Errorf("network still listed (%v)", err)
	}
	if info, err := cli.ContainerInspect(ctx, created.ID); err != nil || !info.State.Running {
		t.Errorf("the unlabelled container was touched: %v", err)
	}
}

// A Spec's files are in the container when its command starts, with their
// modes, in directories made for them; the directories that were there
// keep their modes.
func TestFilesBeforeStart(t *testing.T) {
	ctx, e, base := engineWithBase(t)
	rt, err := docker.New(ctx, e, runtime.NewRunID(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := rt.Teardown(); err != nil {
			t.Error(err)
		}
	}()
	// The command reads the files as it starts, before anything could
	// copy them in later.
	c, err := rt.Start(ctx, runtime.ContainerSpec{Name: "n1", Role: runtime.RoleServer, Image: base,
		Cmd: []string{"sh", "-c", "stat -c '%a %n' /etc/fc-test/a/key /etc/fc-test/b /tmp > /started; cat /etc/fc-test/a/key >> /started; sleep 30"},
		Files: []runtime.File{
			{Path: "/etc/fc-test/a/key", Data: []byte("secret\n"), Mode: 0o600},
			{Path: "/etc/fc-test/b", Data: []byte("plain")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	var out string
	for range 50 {
		if out, err = rt.Exec(ctx, c, "cat", "/started"); err == nil && strings.Contains(out, "secret") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := "600 /etc/fc-test/a/key\n644 /etc/fc-test/b\n1777 /tmp\nsecret\n"
	if out != want {
		t.Errorf("the command saw %q (%v), want %q", out, err, want)
	}
	if _, err := rt.Start(ctx, runtime.ContainerSpec{Name: "n2", Role: runtime.RoleServer, Image: base, Cmd: []string{"true"},
		Files: []runtime.File{{Path: "etc/relative", Data: []byte("x")}}}); err == nil {
		t.Errorf("a relative path: no error")
	}
}

// Clean removes a run's containers one at a time, never two at once:
// Docker 20.10 can deadlock its network controller when two endpoints of
// one network leave together. A fake engine lists six containers and
// counts the removals in flight.
func TestCleanRemovesOneAtATime(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	inFlight, most, removed := 0, 0, 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/containers/json"):
			var cs []map[string]any
			for i := range 6 {
				cs = append(cs, map[string]any{"Id": fmt.Sprintf("c%d", i), "Names": []string{fmt.Sprintf("/fencecheck-x-n%d", i)}, "State": "exited"})
			}
			json.NewEncoder(w).Encode(cs)
		case r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/containers/"):
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // long enough for another to overlap
			mu.Lock()
			inFlight--
			removed++
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		case strings.HasSuffix(r.URL.Path, "/networks"):
			w.Write([]byte("[]"))
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	e, err := docker.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.Clean(context.Background())
	if err != nil || got.Containers != 6 || removed != 6 {
		t.Fatalf("clean: %+v, %v, %d removed; want all 6", got, err, removed)
	}
	if most != 1 {
		t.Errorf("%d removals at once; want one at a time", most)
	}
}
