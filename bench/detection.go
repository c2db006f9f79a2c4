package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// runDetection measures whether client faults are detected on a busy
// machine: a CPU hog keeps every core busy for the whole benchmark (it
// starts and stops itself), and each scenario runs n times unfenced and n
// times with token fencing, with random seeds. It prints, per scenario and
// fencing, the verdicts and the faults aimed at a critical section that hit
// or missed it.
func runDetection(bin string, n int, limit time.Duration, only string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	scenarios := []struct{ target, nemesis string }{
		{"etcd", "pause-holder"}, {"etcd", "partition-client"},
		{"redis", "pause-holder"}, {"redis", "partition-client"},
		{"redis", "clock-skew:server"},
	}
	dir, err := os.MkdirTemp("", "fencecheck-detection-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	stop := hog(runtime.NumCPU())
	defer stop()
	fmt.Printf("fencecheck bench -detection, %s: %d runs per row, random seeds, %d CPU hogs on %d cores, `fencecheck run --target T --nemesis F --fencing none|token --time-limit %s --seed RANDOM`\n\n",
		time.Now().UTC().Format(time.RFC3339), n, runtime.NumCPU(), runtime.NumCPU(), limit)
	fmt.Println("| target | fault | fencing | invalid | valid | unknown | faults aimed at a critical section | hit | missed | median wall time |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for _, s := range scenarios {
		if only != "" && !strings.Contains(s.target+" "+s.nemesis, only) {
			continue
		}
		for _, f := range []string{"none", "token"} {
			var rs []runFigures
			codes := map[int]int{}
			var misses []string
			for i := 0; i < n; i++ {
				seed := rng.Uint64()%1_000_000 + 1
				r, err := oneRun(bin, dir, s.target, f, s.nemesis, nil, limit, seed)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "bench: %s %s %s run %d seed %d: exit %d, %d faults (%d aimed, %d hit), lost %d, rejections %d, %.1fs\n",
					s.target, s.nemesis, f, i+1, seed, r.code, r.faults, r.aimed, r.hit, r.lost, r.rejections, r.wall)
				if r.missed > 0 {
					misses = append(misses, fmt.Sprintf("seed %d: %d missed", seed, r.missed))
				}
				codes[r.code]++
				rs = append(rs, r)
			}
			var aimed, hit, missed int
			var walls []float64
			for _, r := range rs {
				aimed, hit, missed = aimed+r.aimed, hit+r.hit, missed+r.missed
				walls = append(walls, r.wall)
			}
			aim := fmt.Sprint(aimed)
			if !strings.Contains(s.nemesis, "holder") && !strings.Contains(s.nemesis, "client") {
				aim = "- (not aimed)"
			}
			fmt.Printf("| %s | %s | %s | %d | %d | %d | %s | %d | %d | %.1fs |\n", s.target, s.nemesis, f,
				codes[1], codes[0], codes[2], aim, hit, missed, median(walls))
			for _, m := range misses {
				fmt.Fprintf(os.Stderr, "bench: %s %s %s: %s\n", s.target, s.nemesis, f, m)
			}
		}
	}
	return nil
}

// hog keeps n goroutines spinning until stop is called.
func hog(n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for ctx.Err() == nil {
				for j := 0; j < 1000; j++ {
					sum := sha256.Sum256(buf)
					buf[0] = sum[0]
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}
