package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runHandover measures, for each fault aimed at a lock holder, how long
// the lock took to pass on: from the fault's start to the first grant to
// another client, and whether the faulty holder's own write then landed
// (acknowledged) or not. For each fencing F, -runs seeds of
//
//	fencecheck run --target T --nemesis N --fencing F --seed S
//
// It prints one row per fencing mode: the faults aimed at a holder, those
// after which another client got the lock while the fault held, the median
// and range of that time, and the stale holders' writes acknowledged and
// refused.
func runHandover(bin, target, nemesis string, fencings []string, runs int, limit time.Duration, extra []string) error {
	bin, dir, err := scratch(bin, "handover")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("fencecheck bench -handover, %s: %d seeds per mode, `fencecheck run --target %s --nemesis %s --fencing F --seed N --time-limit %s %s`\n\n",
		time.Now().UTC().Format(time.RFC3339), runs, target, nemesis, limit, strings.Join(extra, " "))
	fmt.Println("| fencing | invalid runs | faults at a holder | lock passed on during the fault | time to pass on (median, range) | stale writes acknowledged | stale writes refused |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, f := range fencings {
		var h handover
		invalid := 0
		for seed := 1; seed <= runs; seed++ {
			res := filepath.Join(dir, fmt.Sprintf("%s-%d", f, seed))
			args := append([]string{"run", "--target", target, "--nemesis", nemesis, "--fencing", f, "--seed", strconv.Itoa(seed),
				"--time-limit", limit.String(), "--results", res, "--quiet"}, extra...)
			code, wall, err := runVerdict(bin, args...)
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", f, seed, err)
			}
			if code == 1 {
				invalid++
			}
			one, err := readHandover(filepath.Join(res, "latest", "history.jsonl"))
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "bench: %s seed %d: exit %d, %.1fs, %d faults, passed on %v, stale acknowledged %d refused %d\n",
				f, seed, code, wall, one.faults, one.passed, one.staleOK, one.staleRefused)
			h.add(one)
		}
		span := "none"
		if len(h.passed) > 0 {
			ms := make([]float64, len(h.passed))
			for i, d := range h.passed {
				ms[i] = d.Seconds()
			}
			span = fmt.Sprintf("%.2fs (%.2f–%.2fs)", median(ms), slices.Min(ms), slices.Max(ms))
		}
		fmt.Printf("| %s | %d of %d | %d | %d | %s | %d | %d |\n", f, invalid, runs, h.faults, len(h.passed), span, h.staleOK, h.staleRefused)
	}
	return nil
}

// handover sums what readHandover found.
type handover struct {
	faults                int
	passed                []time.Duration
	staleOK, staleRefused int
}

func (h *handover) add(o handover) {
	h.faults += o.faults
	h.passed = append(h.passed, o.passed...)
	h.staleOK += o.staleOK
	h.staleRefused += o.staleRefused
}

// readHandover reads a history: each nemesis start whose params name the
// holder's process, the first "acquired" of another process after it and
// before the fault's stop, and the holder's operation's completion after
// the fault (ok: its stale write was acknowledged; fail with a fencing
// refusal: refused).
func readHandover(path string) (handover, error) {
	f, err := os.Open(path)
	if err != nil {
		return handover{}, err
	}
	defer f.Close()
	type event struct {
		Time    int64           `json:"time_ns"`
		Process json.RawMessage `json:"process"`
		Type    string          `json:"type"`
		F       string          `json:"f"`
		Value   json.RawMessage `json:"value"`
	}
	var h handover
	type open struct {
		process string
		start   int64
		passed  bool
		stopped bool
	}
	var faults []*open
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		proc := strings.Trim(string(e.Process), `"`)
		switch {
		case proc == "nemesis" && e.F == "start":
			var v history.FaultValue
			if json.Unmarshal(e.Value, &v) != nil {
				continue
			}
			if p, ok := v.HeldProcess(); ok {
				faults = append(faults, &open{process: p.String(), start: e.Time})
				h.faults++
			}
		case proc == "nemesis" && e.F == "stop":
			for _, o := range faults {
				o.stopped = true
			}
		case e.Type == "phase" && e.F == "acquired":
			for _, o := range faults {
				if !o.passed && !o.stopped && proc != o.process {
					o.passed = true
					h.passed = append(h.passed, time.Duration(e.Time-o.start))
				}
			}
		case (e.Type == "ok" || e.Type == "fail") && e.F == "append":
			for i, o := range faults {
				if proc != o.process || !o.passed {
					continue
				}
				if e.Type == "ok" {
					h.staleOK++
				} else if strings.Contains(string(e.Value), "fenc") {
					h.staleRefused++
				}
				faults = append(faults[:i], faults[i+1:]...)
				break
			}
		}
	}
	return h, sc.Err()
}
