package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runClientOverhead measures what the client protocol costs: critical
// sections completed per second with a client program (--client-dir
// clientDir) against the target's built-in recipe, on the same target, no
// faults, no work time, 5 clients; the two alternate, runs times each;
// medians and their ratio.
func runClientOverhead(bin, clientDir, target string, runs int, limit time.Duration) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-client-overhead-")
	if err != nil {
		return err
	}
	defer cleanup()
	const concurrency = 5
	var builtin, program []float64
	for i := 0; i < runs; i++ {
		b, err := harnessedRate(bin, filepath.Join(dir, fmt.Sprint("builtin-", i)), limit, concurrency, target)
		if err != nil {
			return err
		}
		p, err := harnessedRate(bin, filepath.Join(dir, fmt.Sprint("program-", i)), limit, concurrency, target, "--client-dir", clientDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: client overhead run %d: built-in %.1f ops/s, client program %.1f ops/s\n", i+1, b, p)
		builtin, program = append(builtin, b), append(program, p)
	}
	mb, mp := median(builtin), median(program)
	fmt.Printf("Client protocol overhead on %s, %d runs each of %s, %d clients, no faults, work 0 (critical sections completed ok per second, runs alternating):\n\n",
		target, runs, limit, concurrency)
	fmt.Println("| lock client | median ops/s | ratio |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| %s's built-in recipe | %.1f | 1.00 |\n", target, mb)
	fmt.Printf("| client program %s (client protocol) | %.1f | %.2f |\n", clientDir, mp, mp/mb)
	return nil
}
