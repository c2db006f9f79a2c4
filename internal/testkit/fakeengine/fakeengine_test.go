package fakeengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
)

// Nodes get the addresses runtime's contract gives them, in one /24 of
// loopback addresses (servers from .10, resources from .60, workers from
// .100), a worker listens at its own, and teardown stops and removes every
// node once.
func TestAddressesAndTeardown(t *testing.T) {
	var served []string
	eng := New(func(ip string, s runtime.ContainerSpec, log io.Writer) (func(), error) {
		served = append(served, ip)
		return func() {}, nil
	})
	ctx := context.Background()
	r, err := eng.NewRun(ctx, "0123abcd", "helper")
	if err != nil {
		t.Fatal(err)
	}
	wcmd := []string{"/usr/local/bin/fencecheck", worker.CmdWorkerName, "--listen", fmt.Sprintf(":%d", worker.Port)}
	cts, err := r.StartAll(ctx, []runtime.ContainerSpec{
		{Name: "n1", Role: runtime.RoleServer}, {Name: "n2", Role: runtime.RoleServer}, {Name: "pg", Role: runtime.RoleResource},
		{Name: "w1", Role: runtime.RoleWorker, Cmd: wcmd}, {Name: "w2", Role: runtime.RoleWorker, Cmd: wcmd},
	})
	if err != nil {
		t.Fatal(err)
	}
	net24 := cts[0].IP[:strings.LastIndexByte(cts[0].IP, '.')+1]
	for i, host := range []int{10, 11, 60, 100, 101} {
		if want := net24 + fmt.Sprint(host); cts[i].IP != want || !strings.HasPrefix(want, "127.") {
			t.Errorf("%s at %s, want %s", cts[i].Name, cts[i].IP, want)
		}
	}
	if !slices.Equal(served, []string{cts[0].IP, cts[1].IP, cts[2].IP}) {
		t.Errorf("servers started at %q", served)
	}
	for _, w := range cts[3:] {
		// The worker listens once its goroutine runs.
		addr := net.JoinHostPort(w.IP, fmt.Sprint(worker.Port))
		c, err := net.DialTimeout("tcp", addr, time.Minute)
		for deadline := time.Now().Add(time.Minute); err != nil && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			c, err = net.DialTimeout("tcp", addr, time.Minute)
		}
		if err != nil {
			t.Fatalf("worker %s does not listen at its address: %v", w.Name, err)
		}
		c.Close()
	}
	if _, err := r.StartAll(ctx, []runtime.ContainerSpec{{Name: "n1", Role: runtime.RoleServer}}); err == nil {
		t.Error("a second node n1 started")
	}
	done, err := r.Teardown()
	if err != nil || done.Containers != 5 || done.Networks != 1 {
		t.Errorf("teardown: %+v, %v", done, err)
	}
	if got := eng.Removed(); len(got) != 5 || !slices.Equal(got, eng.Started()) {
		t.Errorf("removed %q, started %q", got, eng.Started())
	}
	if len(eng.Running()) != 0 || len(r.Containers()) != 0 {
		t.Errorf("left: %q, %v", eng.Running(), r.Containers())
	}
	if again, err := r.Teardown(); err != nil || again.Containers != 0 {
		t.Errorf("a second teardown: %+v, %v", again, err)
	}
}

// What needs a container is refused, saying so (errors.ErrUnsupported);
// SIGCONT, which the harness sends every node before teardown, does
// nothing; a server node without a Server to start it is refused; a
// closed engine makes no run.
func TestRefusals(t *testing.T) {
	eng := New(nil)
	ctx := context.Background()
	r, err := eng.NewRun(ctx, "0123abcd", "helper")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartAll(ctx, []runtime.ContainerSpec{{Name: "n1", Role: runtime.RoleServer}}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("a server without a Server: %v", err)
	}
	w, err := r.StartAll(ctx, []runtime.ContainerSpec{{Name: "w1", Role: runtime.RoleWorker,
		Cmd: []string{"fencecheck", worker.CmdWorkerName, "--listen", ":0"}}})
	if err != nil {
		t.Fatal(err)
	}
	c := w[0]
	defer r.Teardown()
	_, errNet := r.NetExec(ctx, c, "iptables", "-L")
	_, errExec := r.Exec(ctx, c, "true")
	_, errPid := r.Pid(ctx, c)
	_, errCopy := r.CopyFrom(ctx, c, "/data", t.TempDir(), runtime.NewBudget(1))
	for what, err := range map[string]error{
		"NetExec": errNet, "Exec": errExec, "Pid": errPid, "CopyFrom": errCopy,
		"WarmHelpers": r.WarmHelpers(ctx, w), "SIGSTOP": r.Signal(ctx, c, "SIGSTOP"),
		"Kill": r.Kill(ctx, c), "Restart": r.Restart(ctx, c),
		"Build": eng.Build(ctx, strings.NewReader(""), "x:y", nil),
	} {
		if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "fakeengine") {
			t.Errorf("%s: %v, want a refusal", what, err)
		}
	}
	if err := r.Signal(ctx, c, "SIGCONT"); err != nil {
		t.Errorf("SIGCONT: %v", err)
	}
	if err := r.WarmHelpers(ctx, nil); err != nil {
		t.Errorf("no helper to warm: %v", err)
	}
	eng.Close()
	if _, err := eng.NewRun(ctx, "4567abcd", "helper"); err == nil || !eng.Closed() {
		t.Errorf("a closed engine made a run (%v)", err)
	}
}
