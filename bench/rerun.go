package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// runRerun measures reproduction: an unfenced etcd run under pause-holder
// (seed 1, or the next seed until one is invalid), then `fencecheck rerun`
// of it with runs re-runs, and prints the original's figures, each
// re-run's line and the reproduction rate.
//
//	go run ./bench -rerun [-runs 5] [-time-limit 15s]
func runRerun(bin string, runs int, limit time.Duration) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-bench-rerun-")
	if err != nil {
		return err
	}
	defer cleanup()
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
	want, err := faultStarts(run)
	if err != nil {
		return err
	}
	fmt.Printf("    original          faults start at %s\n", seconds(want))
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Printf("    %s\n", strings.ReplaceAll(l, dir, "$TMP"))
		if f := strings.Fields(l); len(f) > 0 && f[0] == "run" {
			got, err := faultStarts(f[len(f)-1])
			if err != nil {
				return err
			}
			fmt.Printf("                      faults start at %s\n", seconds(got))
		}
	}
	return nil
}

// faultStarts are the start times of a run's faults, from its history.
func faultStarts(run string) ([]time.Duration, error) {
	ev, err := history.ReadFile(filepath.Join(run, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	fs, err := history.Faults(ev)
	if err != nil {
		return nil, err
	}
	var ts []time.Duration
	for _, f := range fs {
		ts = append(ts, time.Duration(f.Start))
	}
	return ts, nil
}

// seconds is "3.301s, 12.114s".
func seconds(ts []time.Duration) string {
	var ss []string
	for _, t := range ts {
		ss = append(ss, fmt.Sprintf("%.3fs", t.Seconds()))
	}
	return strings.Join(ss, ", ")
}
