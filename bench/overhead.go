package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/systems/resources/lockstore"
	"github.com/fencecheck/fencecheck/targets"
)

// runOverhead measures what the harness costs: lock-append critical
// sections per second driven by fencecheck (workers in containers, the
// control connection, the history) against a bare loop of the same critical
// section with the same client library and concurrency, from the host, on a
// cluster of the same shape. No faults, no work time; each side runs limit,
// runs times, alternating; medians.
func runOverhead(bin string, runs int, limit time.Duration) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-overhead-")
	if err != nil {
		return err
	}
	defer cleanup()
	const concurrency = 5
	var harnessed, bare []float64
	for i := 0; i < runs; i++ {
		h, err := harnessedRate(bin, filepath.Join(dir, fmt.Sprint(i)), limit, concurrency, "etcd")
		if err != nil {
			return err
		}
		b, err := bareRate(limit, concurrency)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: overhead run %d: harness %.1f ops/s, bare loop %.1f ops/s\n", i+1, h, b)
		harnessed, bare = append(harnessed, h), append(bare, b)
	}
	mh, mb := median(harnessed), median(bare)
	fmt.Printf("Overhead, %d runs each of %s, %d clients, etcd 3 nodes, TTL 2s, no faults, work 0 (critical sections completed ok per second):\n\n", runs, limit, concurrency)
	fmt.Println("| driven by | median ops/s | ratio |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| fencecheck run (workers in containers) | %.1f | %.2f |\n", mh, mh/mb)
	fmt.Printf("| bare loop of the same client code | %.1f | 1.00 |\n", mb)
	return nil
}

// harnessedRate is the critical sections completed ok per second of one run
// of target with no faults and no work time (extra: more flags).
func harnessedRate(bin, res string, limit time.Duration, concurrency int, target string, extra ...string) (float64, error) {
	args := append([]string{"run", "--target", target, "--fencing", "none", "--nemesis", "none", "--work", "1ns",
		"--time-limit", limit.String(), "--concurrency", fmt.Sprint(concurrency), "--results", res, "--quiet"}, extra...)
	cmd := exec.Command(bin, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("run: %v\n%s", err, out)
	}
	var v struct {
		Checkers struct{ Stats struct{ Ok int } }
	}
	b, err := os.ReadFile(filepath.Join(res, "latest", "results.json"))
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, err
	}
	return float64(v.Checkers.Stats.Ok) / limit.Seconds(), nil
}

// bareRate runs the critical section in a loop from concurrency goroutines
// on the host, each with its own client, against a fresh cluster.
func bareRate(limit time.Duration, concurrency int) (float64, error) {
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		return 0, err
	}
	defer eng.Close()
	cl, err := harness.StartCluster(ctx, harness.ClusterConfig{
		Engine: eng, Target: etcd.Target{}, Nodes: 3,
		Client:       targets.ClientConfig{TTL: 2 * time.Second, RPCTimeout: 8 * time.Second},
		ReadyTimeout: 30 * time.Second,
	})
	if err != nil {
		return 0, err
	}
	defer cl.Close("")
	cfg := workloads.Config{WorkerKnobs: spec.WorkerKnobs{AcquireTimeout: 10 * time.Second, Margin: 500 * time.Millisecond, Work: 1}}
	var ok atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, concurrency)
	deadline := time.Now().Add(limit)
	for i := 0; i < concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := etcd.Target{}.Dial(ctx, cl.ClientConfig())
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			st, err := lockstore.Resource{}.Dial(ctx, resources.Config{}, c)
			if err != nil {
				errs[i] = err
				return
			}
			clients := workloads.Clients{Lock: c, Resources: []workloads.Resource{{Name: "lock-store", Fencing: targets.FencingNone, Store: st}}}
			env := workloads.Env{Report: func(string, any) {}}
			for time.Now().Before(deadline) {
				typ, _ := lockappend.Execute(ctx, clients, cfg, next.Add(1), env)
				if typ == history.Ok {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(ok.Load()) / limit.Seconds(), nil
}
