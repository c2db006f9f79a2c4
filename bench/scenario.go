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

// runScenario plays a regression scenario runs times on each version of
// list, one run at a time: `fencecheck run --scenario S --version V`, and
// prints per version how often the history was invalid (the reproduction
// rate) and how long a run took.
func runScenario(bin, name, list string, runs int) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-bench-scenario-")
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("fencecheck bench -scenario %s, %s: %d runs per version, `fencecheck run --scenario %s --version V` (fencing none)\n\n",
		name, time.Now().UTC().Format(time.RFC3339), runs, name)
	fmt.Println("| version | invalid (reproduced) | valid | other exits | wall time (median) |")
	fmt.Println("|---|---|---|---|---|")
	for _, v := range strings.Split(list, ",") {
		var invalid, valid int
		var other []string
		var walls []float64
		for i := 1; i <= runs; i++ {
			res := filepath.Join(dir, fmt.Sprintf("%s-%d", v, i))
			start := time.Now()
			out, err := exec.Command(bin, "run", "--scenario", name, "--version", v, "--results", res, "--quiet").CombinedOutput()
			wall := time.Since(start).Seconds()
			code := 0
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee):
				code = ee.ExitCode()
			case err != nil:
				return err
			}
			switch code {
			case 0:
				valid++
			case 1:
				invalid++
			default:
				other = append(other, fmt.Sprint(code))
				fmt.Fprintf(os.Stderr, "%s\n", out)
			}
			walls = append(walls, wall)
			fmt.Fprintf(os.Stderr, "bench: %s %s run %d: exit %d, %.1fs\n", name, v, i, code, wall)
		}
		others := "none"
		if len(other) > 0 {
			others = strings.Join(other, " ")
		}
		fmt.Printf("| %s | %d of %d | %d of %d | %s | %.1fs |\n", v, invalid, runs, valid, runs, others, median(walls))
	}
	return nil
}
