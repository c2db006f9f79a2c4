package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// allTargets are the built-in targets, for -profiles all.
var allTargets = []string{"etcd", "consul", "redis", "redis-nopersist", "redis-sentinel", "redlock", "zookeeper"}

// runProfiles runs every target with its profile: `fencecheck run --target
// T --fencing F --seed N` and nothing else (pause-holder, the profile's TTL,
// lock-delay, nemesis interval and time limit), N = 1..runs, parallel runs
// at once, and prints one row per target and fencing mode.
func runProfiles(bin, list string, fencings []string, runs, parallel int) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-bench-profiles-")
	if err != nil {
		return err
	}
	defer cleanup()
	targets := strings.Split(list, ",")
	if list == "all" {
		targets = allTargets
	}
	var jobs []job
	for _, t := range targets {
		for _, f := range fencings {
			for i := 1; i <= runs; i++ {
				jobs = append(jobs, job{label: t, target: t, fencing: f, seed: uint64(i)})
			}
		}
	}
	start := time.Now()
	fmt.Printf("fencecheck bench -profiles, %s: %d runs per target and mode, `fencecheck run --target T --fencing F --seed N` (N = 1..%d), %d at once\n\n",
		time.Now().UTC().Format(time.RFC3339), runs, runs, parallel)
	results, errs := runJobs(bin, dir, jobs, parallel)
	return printSeries("target", jobs, results, errs, runs, start)
}

// printSeries prints one Markdown row per runs consecutive jobs (a label
// and a fencing mode; first names the label's column), then the time since
// start, and returns an error listing the runs that failed.
func printSeries(first string, jobs []job, results []runFigures, errs []error, runs int, start time.Time) error {
	fmt.Printf("| %s | fencing | exit codes | wall time | ops ok / fail / info | lost (of acknowledged) | fence rejections | first lost update | check |\n", first)
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	var failed []string
	for i := 0; i < len(jobs); i += runs {
		var rs []runFigures
		for k := i; k < i+runs && k < len(jobs); k++ {
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

// job is one run of a series: its row's label, target, fencing mode, seed
// and further flags.
type job struct {
	label, target, fencing string
	seed                   uint64
	extra                  []string
}

// runJobs runs the jobs, parallel at once, each into its own results
// directory under dir, and returns their figures (or errors) in order.
func runJobs(bin, dir string, jobs []job, parallel int) ([]runFigures, []error) {
	results := make([]runFigures, len(jobs))
	errs := make([]error, len(jobs))
	start := time.Now()
	var done atomic.Int32
	inParallel(len(jobs), parallel, func(i int) {
		j := jobs[i]
		sub := filepath.Join(dir, nameSafe(j.label))
		r, err := oneRun(bin, sub, j.target, j.fencing, "", j.extra, 0, j.seed)
		results[i], errs[i] = r, err
		fmt.Fprintf(os.Stderr, "bench: %s %s seed %d: exit %d, %.1fs, %d ok, lost %d of %d, rejections %d (%d/%d done, %s)\n",
			j.label, j.fencing, j.seed, r.code, r.wall, r.ok, r.lost, r.acked, r.rejections, done.Add(1), len(jobs), time.Since(start).Round(time.Second))
	})
	return results, errs
}

// nameSafe makes a label a directory name.
func nameSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

// inParallel calls f(0), ..., f(n-1), parallel calls at a time (at least
// one), and returns when all have returned.
func inParallel(n, parallel int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(1, parallel); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
