package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// livenessCell is one row of the liveness table: a target under one fault.
type livenessCell struct {
	target, nemesis string
	limit           time.Duration
	args            []string // more flags (Consul's TTL and lock-delay)
	note            string
}

// livenessCells are docs/faults.md's liveness table: each target under
// kill-holder and under the kill of its leader (kill:one for the single
// Redis, whose one server is all there is). Consul's TTL is 10 s at least,
// so its runs are longer, with lock-delay 0 and with its default 15 s.
func livenessCells(limit time.Duration) []livenessCell {
	consul := []string{"--ttl", "10s", "--lock-delay", "0"}
	consulDelay := []string{"--ttl", "10s"}
	long := max(limit, 90*time.Second)
	return []livenessCell{
		{target: "etcd", nemesis: "kill-holder", limit: limit},
		{target: "etcd", nemesis: "kill:leader", limit: limit},
		{target: "consul", nemesis: "kill-holder", limit: long, args: consul, note: "lock-delay 0"},
		{target: "consul", nemesis: "kill:leader", limit: long, args: consul, note: "lock-delay 0"},
		{target: "consul", nemesis: "kill-holder", limit: long + 30*time.Second, args: consulDelay, note: "lock-delay 15s, the default"},
		{target: "redis", nemesis: "kill-holder", limit: limit},
		{target: "redis", nemesis: "kill:one", limit: limit, note: "the one server"},
		{target: "redis-sentinel", nemesis: "kill-holder", limit: limit},
		{target: "redis-sentinel", nemesis: "kill:leader", limit: limit, note: "the master"},
		{target: "redlock", nemesis: "kill-holder", limit: limit},
		{target: "redlock", nemesis: "kill:leader", limit: limit, note: "n1: token counter and resource"},
		{target: "zookeeper", nemesis: "kill-holder", limit: limit},
		{target: "zookeeper", nemesis: "kill:leader", limit: limit},
		{target: "kubernetes", nemesis: "kill-holder", limit: limit},
		{target: "kubernetes", nemesis: "kill:leader@etcd", limit: limit, note: "the etcd leader"},
		{target: "kubernetes", nemesis: "kill:one@apiserver", limit: limit, note: "an apiserver (its clients wait for it)"},
	}
}

// livenessFigures is what one run measured (results.json's liveness).
type livenessFigures struct {
	code     int
	valid    any
	liveness *struct {
		Valid       any      `json:"valid"`
		NormalGapS  *float64 `json:"normal_gap_s"`
		HolderCrash *summary `json:"holder_crash"`
		ServerKill  *summary `json:"server_kill"`
	}
	ttl, lease string
}

type summary struct {
	Count        int      `json:"count"`
	Unrecovered  int      `json:"unrecovered"`
	NotWaited    int      `json:"not_waited"`
	MedianS      float64  `json:"median_s"`
	MaxS         float64  `json:"max_s"`
	MedianTTLs   float64  `json:"median_ttls"`
	MaxTTLs      float64  `json:"max_ttls"`
	MedianLeases float64  `json:"median_leases"`
	MedianExcess *float64 `json:"median_excess_s"`
}

// runLiveness runs every liveness cell (whose target contains only) once
// per seed 1..runs, parallel at a time, with token fencing and the nemesis
// every 2 s, and prints docs/faults.md's Markdown table.
func runLiveness(bin string, runs int, limit time.Duration, only string, parallel int) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-liveness-")
	if err != nil {
		return err
	}
	defer cleanup()
	var cells []livenessCell
	for _, c := range livenessCells(limit) {
		if strings.Contains(c.target, only) {
			cells = append(cells, c)
		}
	}
	figs := make([][]livenessFigures, len(cells))
	errs := make([]error, len(cells)*runs)
	for i := range figs {
		figs[i] = make([]livenessFigures, runs)
	}
	inParallel(len(cells)*runs, parallel, func(k int) {
		i, seed := k/runs, k%runs
		c := cells[i]
		f, err := livenessRun(bin, dir, c, uint64(seed+1))
		if err != nil {
			errs[k] = err
			return
		}
		figs[i][seed] = f
		fmt.Fprintf(os.Stderr, "bench: %s %s %s seed %d: exit %d\n", c.target, c.nemesis, c.note, seed+1, f.code)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}

	fmt.Printf("fencecheck liveness, %s; each `fencecheck run --target T --fencing token --nemesis F --nemesis-interval 2s --time-limit L --seed N` (%d seed(s) a cell):\n\n",
		time.Now().UTC().Format(time.RFC3339), runs)
	fmt.Println("| target | fault | flags | time limit | TTL / max lease | exit | measured | median | median TTLs | max TTLs | median leases | excess over the normal gap |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for i, c := range cells {
		var codes []string
		var meds, ttls, maxTTLs, leases, excess []float64
		measured, unrecovered, notWaited := 0, 0, 0
		ttl := ""
		for _, f := range figs[i] {
			codes = append(codes, fmt.Sprint(f.code))
			ttl = f.ttl + " / " + f.lease
			if f.liveness == nil {
				continue
			}
			s := f.liveness.HolderCrash
			if c.nemesis != "kill-holder" {
				s = f.liveness.ServerKill
			}
			if s == nil {
				continue
			}
			measured += s.Count
			unrecovered += s.Unrecovered
			notWaited += s.NotWaited
			if s.Count > 0 {
				meds = append(meds, s.MedianS)
				ttls = append(ttls, s.MedianTTLs)
				maxTTLs = append(maxTTLs, s.MaxTTLs)
				leases = append(leases, s.MedianLeases)
			}
			if s.MedianExcess != nil {
				excess = append(excess, *s.MedianExcess)
			}
		}
		m := fmt.Sprint(measured)
		if unrecovered > 0 {
			m += fmt.Sprintf(" (+%d never recovered)", unrecovered)
		}
		if notWaited > 0 {
			m += fmt.Sprintf(" (+%d nobody waiting)", notWaited)
		}
		cellOr := func(xs []float64, format string, agg func([]float64) float64) string {
			if len(xs) == 0 {
				return "-"
			}
			return fmt.Sprintf(format, agg(xs))
		}
		fault := c.nemesis
		if c.note != "" {
			fault += " (" + c.note + ")"
		}
		flags := "-"
		if len(c.args) > 0 {
			flags = "`" + strings.Join(c.args, " ") + "`"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.target, fault, flags, c.limit, ttl,
			strings.Join(codes, " "), m,
			cellOr(meds, "%.2fs", median), cellOr(ttls, "%.2f", median), cellOr(maxTTLs, "%.2f", maxOf),
			cellOr(leases, "%.2f", median), cellOr(excess, "%.2fs", median))
	}
	return nil
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = max(m, x)
	}
	return m
}

// livenessRun runs one cell with one seed and reads its results.
func livenessRun(bin, dir string, c livenessCell, seed uint64) (livenessFigures, error) {
	res := filepath.Join(dir, fmt.Sprintf("%s-%s-%d-%d", c.target, strings.ReplaceAll(c.nemesis, ":", "-"), len(c.args), seed))
	args := append([]string{"run", "--target", c.target, "--fencing", "token", "--nemesis", c.nemesis, "--nemesis-interval", "2s",
		"--time-limit", c.limit.String(), "--seed", fmt.Sprint(seed), "--results", res, "--quiet"}, c.args...)
	var f livenessFigures
	var err error
	if f.code, _, err = runVerdict(bin, args...); err != nil {
		return f, fmt.Errorf("%s %s seed %d: %w", c.target, c.nemesis, seed, err)
	}
	var v struct {
		Valid    any `json:"valid"`
		Liveness *struct {
			Valid       any      `json:"valid"`
			NormalGapS  *float64 `json:"normal_gap_s"`
			HolderCrash *summary `json:"holder_crash"`
			ServerKill  *summary `json:"server_kill"`
		} `json:"liveness"`
	}
	b, err := os.ReadFile(filepath.Join(res, "latest", "results.json"))
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return f, err
	}
	var t store.TestInfo
	if b, err := os.ReadFile(filepath.Join(res, "latest", store.TestFile)); err == nil {
		json.Unmarshal(b, &t)
	}
	f.valid, f.liveness, f.ttl, f.lease = v.Valid, v.Liveness, t.TTL.String(), t.MaxLease
	return f, nil
}
