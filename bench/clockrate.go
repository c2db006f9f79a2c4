package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/fencecheck/fencecheck/internal/base/history"
	faults "github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runClockRate measures the clock rate at which a lock holder's slow (or
// fast) clock lets two holders act: for each rate R, -runs seeds of
//
//	fencecheck run --target T --workload W --nemesis clock-rate:SCOPE:xR --fencing F --seed N
//
// for each fencing F, SCOPE client (the next holder's clock) or server (a
// server's). It prints a table (invalid runs, lost entries, split
// brains, the rates the holders' logs showed) and writes a chart of the
// fraction of invalid runs against the rate, one line per fencing mode, to
// chart ("" for none). For client-go's leaderelection (target kubernetes,
// workload election) the chart marks two rates below which a holder's
// renewals no longer show as renewals to the other candidates, who see a
// Lease unchanged for a lease duration and take it: its renewals come one
// retry period apart by its clock, so a lease duration apart by the true
// clock at retry period / lease duration (2/15); and a candidate sees a
// change only when the Lease's record changes, whose renewTime is kept to
// the second (metav1.Time), so a holder whose wall clock gains less than a
// second per lease duration renews unseen, at 1 s / lease duration.
func runClockRate(bin, target, workload, scope string, rates []float64, fencings []string, runs int, extra []string, chart string) error {
	bin, dir, err := scratch(bin, "clockrate")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("fencecheck bench -clock-rate, %s: %d seeds per cell, `fencecheck run --target %s --workload %s --nemesis clock-rate:%s:xR --fencing F --seed N %s`\n\n",
		time.Now().UTC().Format(time.RFC3339), runs, target, workload, scope, strings.Join(extra, " "))
	fmt.Println("| rate R | fencing | invalid runs | lost entries (median) | split brains (median) | faults | observed rate (median, range) | median wall time |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	var cells []rateCell
	for _, r := range rates {
		for _, f := range fencings {
			c := rateCell{rate: r, fencing: f}
			var lost, splits, walls []float64
			for seed := 1; seed <= runs; seed++ {
				o, err := rateRun(bin, dir, target, workload, scope, f, r, extra, uint64(seed))
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "bench: x%g %s seed %d: exit %d, lost %d, split brain %d, %d faults, observed %v, %.1fs\n",
					r, f, seed, o.code, o.lost, o.splits, o.faults, o.observed, o.wall)
				c.runs++
				if o.code == 1 {
					c.invalid++
				}
				c.faults += o.faults
				c.observed = append(c.observed, o.observed...)
				lost = append(lost, float64(o.lost))
				splits = append(splits, float64(o.splits))
				walls = append(walls, o.wall)
			}
			obs := "none"
			if len(c.observed) > 0 {
				obs = fmt.Sprintf("%.3g (%.3g–%.3g, %d faults)", median(c.observed), slices.Min(c.observed), slices.Max(c.observed), len(c.observed))
			}
			fmt.Printf("| %g | %s | %d of %d | %.0f | %.0f | %d | %s | %.1fs |\n", r, f, c.invalid, c.runs,
				median(lost), median(splits), c.faults, obs, median(walls))
			cells = append(cells, c)
		}
	}
	if chart == "" {
		return nil
	}
	return drawRateChart(target, workload, scope, cells, fencings, extra, chart)
}

// redrawClockRate draws the chart of a table runClockRate printed (its
// Markdown rows, in file), running nothing.
func redrawClockRate(file, target, workload, scope string, fencings, extra []string, chart string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cells []rateCell
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, "|")
		if len(f) < 5 {
			continue
		}
		r, err1 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
		var c rateCell
		_, err2 := fmt.Sscanf(strings.TrimSpace(f[3]), "%d of %d", &c.invalid, &c.runs)
		if err1 != nil || err2 != nil {
			continue
		}
		c.rate, c.fencing = r, strings.TrimSpace(f[2])
		cells = append(cells, c)
	}
	if len(cells) == 0 {
		return fmt.Errorf("%s: no row of bench -clock-rate's table", file)
	}
	return drawRateChart(target, workload, scope, cells, fencings, extra, chart)
}

// drawRateChart writes the chart of the cells to chart.
func drawRateChart(target, workload, scope string, cells []rateCell, fencings, extra []string, chart string) error {
	var marks []rateMark
	if target == "kubernetes" && workload == "election" && scope == "client" {
		ttl := 2 * time.Second // the kubernetes profile's
		for i, a := range extra {
			if d, err := time.ParseDuration(strings.TrimPrefix(a, "--ttl=")); err == nil && strings.HasPrefix(a, "--ttl=") {
				ttl = d
			} else if a == "--ttl" && i+1 < len(extra) {
				if d, err := time.ParseDuration(extra[i+1]); err == nil {
					ttl = d
				}
			}
		}
		marks = []rateMark{{2.0 / 15, "retry period / lease"}, {float64(time.Second) / float64(ttl), "1 s / lease"}}
	}
	svg := rateChart(target, workload, scope, cells, fencings, marks)
	if err := os.WriteFile(chart, svg, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nchart: %s\n", chart)
	return nil
}

// rateCell sums one rate and fencing mode's runs.
type rateCell struct {
	rate          float64
	fencing       string
	runs, invalid int
	faults        int
	observed      []float64
}

// rateOutcome is one run's figures.
type rateOutcome struct {
	code, lost, splits, faults int
	observed                   []float64
	wall                       float64
}

// rateRun runs one clock-rate run and reads its results.json.
func rateRun(bin, dir, target, workload, scope, fencing string, rate float64, extra []string, seed uint64) (rateOutcome, error) {
	nemesis := "clock-rate:" + scope + ":x" + strconv.FormatFloat(rate, 'f', -1, 64)
	res := filepath.Join(dir, fmt.Sprintf("x%g-%s-%d", rate, fencing, seed))
	args := append([]string{"run", "--target", target, "--workload", workload, "--fencing", fencing,
		"--nemesis", nemesis, "--seed", fmt.Sprint(seed), "--results", res, "--quiet"}, extra...)
	var o rateOutcome
	var err error
	if o.code, o.wall, err = runVerdict(bin, args...); err != nil {
		return o, fmt.Errorf("%s %s seed %d: %w", nemesis, fencing, seed, err)
	}
	var v struct {
		LostUpdates struct{ Lost int } `json:"lost_updates"`
		SplitBrain  int                `json:"split_brain"`
		Faults      []history.Fault    `json:"faults"`
	}
	b, err := os.ReadFile(filepath.Join(res, "latest", "results.json"))
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return o, err
	}
	o.lost, o.splits, o.faults = v.LostUpdates.Lost, v.SplitBrain, len(v.Faults)
	for _, f := range v.Faults {
		var rec faults.ClockRateRecord
		if f.DecodeFigures(&rec) == nil && rec.ObservedRate != nil {
			o.observed = append(o.observed, *rec.ObservedRate)
		}
	}
	return o, nil
}

// rateMark is a rate the chart marks with a dashed line.
type rateMark struct {
	rate  float64
	label string
}

// rateChart draws the fraction of invalid runs against the rate, one line
// per fencing mode, as a standalone SVG document.
func rateChart(target, workload, scope string, cells []rateCell, fencings []string, marks []rateMark) []byte {
	const w, h, left, right, top, bottom = 720.0, 400.0, 64.0, 28.0, 70.0, 56.0
	xmax := 0.0
	for _, m := range marks {
		xmax = max(xmax, m.rate)
	}
	for _, c := range cells {
		xmax = max(xmax, c.rate)
	}
	step := 0.1 // the x grid
	if xmax > 1.5 {
		step = 0.5
	}
	xmax = (float64(int(xmax/step)) + 1) * step
	who := "the lock holder's clock"
	if scope == "server" {
		who = "a server's clock"
	}
	x := func(v float64) float64 { return left + v/xmax*(w-left-right) }
	y := func(f float64) float64 { return h - bottom - f*(h-top-bottom) }
	colors := map[string]string{"none": "#c62828", "term": "#2e7d32", "token": "#2e7d32", "cas": "#1565c0"}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="system-ui,'DejaVu Sans',sans-serif">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="#fff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%g" y="26" font-size="15" font-weight="700" fill="#1d2330">%s: %s at R times true speed</text>`+"\n",
		left, html.EscapeString(target+" "+workload), who)
	fmt.Fprintf(&b, `<text x="%g" y="46" font-size="11.5" fill="#475467">fraction of runs invalid (updates lost or two holders acted) against R, %d seeds per point; fencecheck bench -clock-rate</text>`+"\n",
		left, cells[0].runs)
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#eceef2"/><text x="%g" y="%.1f" font-size="11" fill="#667085" text-anchor="end">%g</text>`+"\n",
			left, w-right, y(f), y(f), left-8, y(f)+4, f)
	}
	for v := 0.0; v <= xmax+1e-9; v += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#eceef2"/><text x="%.1f" y="%g" font-size="11" fill="#667085" text-anchor="middle">%.1f</text>`+"\n",
			x(v), x(v), top, h-bottom, x(v), h-bottom+18, v)
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="12" fill="#344054" text-anchor="middle">R, the clock's rate (1: true)</text>`+"\n", (left+w-right)/2, h-14)
	for i, m := range marks {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#b45f06" stroke-dasharray="5 3"/><text x="%.1f" y="%g" font-size="11" fill="#b45f06">%s = %.3g</text>`+"\n",
			x(m.rate), x(m.rate), top, h-bottom, x(m.rate)+6, top+12+float64(i)*14, html.EscapeString(m.label), m.rate)
	}
	for i, f := range fencings {
		var pts []string
		for _, c := range cells {
			if c.fencing == f && c.runs > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(c.rate), y(float64(c.invalid)/float64(c.runs))))
			}
		}
		col := colors[f]
		if col == "" {
			col = "#344054"
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2.2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s" stroke="#fff"/>`+"\n", xy[0], xy[1], col)
		}
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="%s" stroke-width="2.2"/><text x="%g" y="%g" font-size="11.5" fill="#344054">fencing %s</text>`+"\n",
			w-right-140, w-right-120, top+14+float64(i)*16, top+14+float64(i)*16, col, w-right-114, top+18+float64(i)*16, html.EscapeString(f))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
