package main

import (
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// runImages runs etcd from fencecheck's own image and from a user's kind of
// image (`fencecheck images scratch etcd`: FROM scratch, the static binary
// only, so every fault acts from outside it) under the same faults, seeds
// 1..runs, unfenced and token-fenced, parallel runs at once, and prints one
// row per image and fencing mode: the verdicts, and what the image costs in
// throughput and wall time, measured side by side in one run.
func runImages(bin, nemesis string, fencings []string, runs, parallel int) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-bench-images-")
	if err != nil {
		return err
	}
	defer cleanup()
	out, err := exec.Command(bin, "images", "scratch", "etcd").Output()
	if err != nil {
		return fmt.Errorf("images scratch etcd: %w", err)
	}
	ref := strings.TrimSpace(string(out))
	var jobs []job
	for _, img := range []struct{ label, flag string }{{"fencecheck's etcd image", ""}, {ref, "target=" + ref}} {
		for _, f := range fencings {
			for i := 1; i <= runs; i++ {
				extra := []string{"--nemesis", nemesis}
				if img.flag != "" {
					extra = append(extra, "--image", img.flag)
				}
				jobs = append(jobs, job{label: img.label, target: "etcd", fencing: f, seed: uint64(i), extra: extra})
			}
		}
	}
	start := time.Now()
	fmt.Printf("fencecheck bench -images, %s: %d runs per image and mode, `fencecheck run --target etcd [--image target=%s] --nemesis %s --fencing F --seed N` (N = 1..%d), %d at once\n\n",
		time.Now().UTC().Format(time.RFC3339), runs, ref, nemesis, runs, parallel)
	results, errs := runJobs(bin, dir, jobs, parallel)
	return printSeries("image", jobs, results, errs, runs, start)
}
