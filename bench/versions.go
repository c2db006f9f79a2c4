package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// runVersions runs etcd at each version of list under pause-holder:
// `fencecheck run --target etcd --version V --fencing F --seed N` with F in
// fencings and N = 1..runs, parallel runs at once, and prints one row per
// version and fencing mode (the acceptance: unfenced invalid, token
// valid, on every version). recipe, if not empty, is passed as --recipe.
func runVersions(bin, list, recipe string, fencings []string, runs, parallel int) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fencecheck-bench-versions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
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
	fmt.Println("| version | fencing | exit codes | wall time | ops ok / fail / info | lost (of acknowledged) | fence rejections | first lost update | check |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	var failed []string
	for i := 0; i < len(jobs); i += runs {
		var rs []runFigures
		for k := i; k < i+runs; k++ {
			if errs[k] != nil {
				failed = append(failed, fmt.Sprintf("%s %s seed %d: %v", jobs[k].label, jobs[k].fencing, jobs[k].seed, errs[k]))
				continue
			}
			rs = append(rs, results[k])
		}
		if len(rs) == 0 {
			continue
		}
		fmt.Printf("| %s ", jobs[i].label)
		printRow(jobs[i].fencing, rs)
	}
	fmt.Printf("\n%d runs in %s\n", len(jobs), time.Since(start).Round(time.Second))
	if len(failed) > 0 {
		return fmt.Errorf("%d runs failed:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	return nil
}
