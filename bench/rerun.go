package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// runRerun measures reproduction: an unfenced etcd run under pause-holder
// (seed 1, or the next seed until one is invalid), then `fencecheck rerun`
// of it with runs re-runs, and prints the original's figures, each
// re-run's line and the reproduction rate.
//
//	go run ./bench -rerun [-runs 5] [-time-limit 15s]
func runRerun(bin string, runs int, limit time.Duration) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fencecheck-bench-rerun-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("fencecheck bench -rerun, %s\n\n", time.Now().UTC().Format(time.RFC3339))
	var orig runFigures
	var seed uint64
	for seed = 1; seed <= 5; seed++ {
		if orig, err = oneRun(bin, dir, "etcd", "none", "pause-holder", nil, limit, seed); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: seed %d: exit %d, lost %d of %d\n", seed, orig.code, orig.lost, orig.acked)
		if orig.code == 1 {
			break
		}
	}
	if orig.code != 1 {
		return errors.New("no invalid run in seeds 1-5: nothing to reproduce")
	}
	run, err := filepath.EvalSymlinks(filepath.Join(dir, fmt.Sprintf("none-%d", seed), "latest"))
	if err != nil {
		return err
	}
	fmt.Printf("original: `fencecheck run --target etcd --fencing none --nemesis pause-holder --time-limit %s --seed %d`: exit %d, lost %d of %d acknowledged, %d faults (%d hit)\n\n",
		limit, seed, orig.code, orig.lost, orig.acked, orig.faults, orig.hit)
	start := time.Now()
	cmd := exec.Command(bin, "rerun", run, "--runs", fmt.Sprint(runs), "--results", filepath.Join(dir, "reruns"), "--quiet")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return err
	}
	fmt.Printf("`fencecheck rerun RUN_DIR --runs %d`: exit %d in %.0fs\n\n", runs, code, time.Since(start).Seconds())
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Printf("    %s\n", strings.ReplaceAll(l, dir, "$TMP"))
	}
	return nil
}
