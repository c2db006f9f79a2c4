package main

import (
	"fmt"
	"strings"
	"time"
)

// runVersions runs etcd at each version of list under pause-holder:
// `fencecheck run --target etcd --version V --fencing F --seed N` with F in
// fencings and N = 1..runs, parallel runs at once, and prints one row per
// version and fencing mode (the acceptance: unfenced invalid, token
// valid, on every version). recipe, if not empty, is passed as --recipe.
func runVersions(bin, list, recipe string, fencings []string, runs, parallel int) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-bench-versions-")
	if err != nil {
		return err
	}
	defer cleanup()
	var jobs []job
	for _, v := range strings.Split(list, ",") {
		extra := []string{"--version", v}
		if recipe != "" {
			extra = append(extra, "--recipe", recipe)
		}
		for _, f := range fencings {
			for i := 1; i <= runs; i++ {
				jobs = append(jobs, job{label: "etcd " + v, target: "etcd", fencing: f, seed: uint64(i), extra: extra})
			}
		}
	}
	how := ""
	if recipe != "" {
		how = " --recipe " + recipe
	}
	start := time.Now()
	fmt.Printf("fencecheck bench -versions, %s: %d runs per version and mode, `fencecheck run --target etcd --version V%s --fencing F --seed N` (pause-holder, N = 1..%d), %d at once\n\n",
		time.Now().UTC().Format(time.RFC3339), runs, how, runs, parallel)
	results, errs := runJobs(bin, dir, jobs, parallel)
	return printSeries("version", jobs, results, errs, runs, start)
}
