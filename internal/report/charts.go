package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// The charts are drawn by hand on the timeline's x scale (same width, same
// label column), so that a fault window lines up across the timeline, the
// throughput and the latency: a dip or a spike sits right under the fault
// that caused it.

const (
	chartH    px = 150
	chartTop  px = 14
	chartBot  px = 24
	maxPoints    = 2000 // past it, latency is drawn as per-bin quantiles
	// maxBands bounds the fault windows a chart shades one by one: past
	// it, windows closer than the timeline's overview bin merge.
	maxBands = 300
)

// Sample is one completed operation for the charts: when it was invoked
// and completed, its outcome and what it was, for the tooltips.
type Sample struct {
	Invoke, End int64
	Type        history.Type
	What        string
}

// chartInput is what the charts draw.
type chartInput struct {
	samples []Sample
	Faults  []history.Fault
	from    int64
	to      int64
}

func (in chartInput) scale() scale {
	return scale{t0: in.from, t1: max(in.to, in.from+1), x0: labelW, x1: figW - rightPad}
}

// chartFrame draws the fault bands, the y axis (ticks up to the first tick
// at or above peak) and the time axis of a chart.
func chartFrame(f *Figure, in chartInput, s scale, peak float64, unit string) func(v float64) px {
	step := niceStep(peak, 4)
	ymax := math.Ceil(peak/step-1e-9) * step
	if ymax <= 0 {
		ymax = step
	}
	plotTop, plotBot := chartTop, chartH-chartBot
	y := func(v float64) px { return plotBot - px(v/ymax)*(plotBot-plotTop) }
	wins := make([]faultWin, 0, len(in.Faults))
	for _, ft := range in.Faults {
		stop := ft.Stop
		if stop < 0 {
			stop = in.to
		}
		wins = append(wins, faultWin{a: ft.Start, b: stop, nodes: ft.Nodes, kind: faultKind(ft.Fault), title: fmt.Sprintf("%s: %s to %s", ft.Fault, Secs(ft.Start), Secs(stop))})
	}
	if len(wins) > maxBands {
		wins = mergeWins(wins, (s.t1-s.t0)/overviewNs)
	}
	for _, w := range wins {
		f.Bands = append(f.Bands, shape{X: s.x(w.a), Y: plotTop, W: s.width(w.a, w.b, 1.5), H: plotBot - plotTop, Class: bandClass("band", w.kind), Title: w.title})
	}
	for v := 0.0; v <= ymax+1e-9; v += step {
		f.Lines = append(f.Lines, line{X1: s.x0, Y1: y(v), X2: s.x1, Y2: y(v), Class: "grid"})
		f.Texts = append(f.Texts, text{X: s.x0 - 6, Y: y(v) + 4, Text: formatTick(v, step) + unit, Class: "tick", Anchor: "end"})
	}
	timeTicks(f, s, chartH-6, plotTop, plotBot)
	f.Lines = append(f.Lines, line{X1: s.x0, Y1: plotBot, X2: s.x1, Y2: plotBot, Class: "axis"})
	return y
}

// drawThroughput draws completed operations per second over time, stacked
// by outcome, in bins of a second (more for long runs: at most 200 bins).
func drawThroughput(in chartInput) Figure {
	f := Figure{ID: "throughput", Class: "chart", W: figW, H: chartH, Label: "Throughput: completed operations per second, by outcome"}
	s := in.scale()
	span := s.t1 - s.t0
	bin := int64(time.Second)
	for span/bin > 200 {
		bin *= 2
	}
	nb := int(span/bin) + 1
	counts := make([][3]int, nb)
	for _, o := range in.samples {
		if o.End < in.from || o.End > in.to {
			continue
		}
		b := int((o.End - in.from) / bin)
		switch o.Type {
		case history.Ok:
			counts[b][0]++
		case history.Fail:
			counts[b][1]++
		default:
			counts[b][2]++
		}
	}
	peak := 1.0
	for _, c := range counts {
		peak = max(peak, float64(c[0]+c[1]+c[2])/(float64(bin)/1e9))
	}
	y := chartFrame(&f, in, s, peak, "/s")
	classes := [3]string{"ok", "fail", "info"}
	for b, c := range counts {
		x0 := s.x(in.from + int64(b)*bin)
		x1 := s.x(min(in.from+int64(b+1)*bin, s.t1))
		base := 0.0
		for k := range 3 {
			if c[k] == 0 {
				continue
			}
			rate := float64(c[k]) / (float64(bin) / 1e9)
			top := base + rate
			f.Rects = append(f.Rects, shape{X: x0 + 0.5, Y: y(top), W: max(x1-x0-1, 0.5), H: y(base) - y(top), Class: "bar " + classes[k],
				Title: fmt.Sprintf("%s to %s: %d %s (%.1f/s)", Secs(in.from+int64(b)*bin), Secs(in.from+int64(b+1)*bin), c[k], classes[k], rate)})
			base = top
		}
	}
	return f
}

// drawLatency draws each operation's latency (invoke to completion) at its
// completion time, by outcome; past maxPoints operations, the median, 99th
// percentile and maximum of each bin instead.
func drawLatency(in chartInput) Figure {
	f := Figure{ID: "latency", Class: "chart", W: figW, H: chartH, Label: "Latency of each operation, invoke to completion, by outcome"}
	s := in.scale()
	var peak float64
	var n int
	for _, o := range in.samples {
		if o.End >= in.from && o.End <= in.to {
			peak = max(peak, float64(o.End-o.Invoke)/1e9)
			n++
		}
	}
	y := chartFrame(&f, in, s, max(peak, 0.001), "s")
	if n <= maxPoints {
		for _, o := range in.samples {
			if o.End < in.from || o.End > in.to {
				continue
			}
			lat := float64(o.End-o.Invoke) / 1e9
			f.Marks = append(f.Marks, mark{X: s.x(o.End), Y: y(lat), R: 2.2, Shape: "dot", Class: "pt " + string(o.Type),
				Title: fmt.Sprintf("%s: %s in %s, completed at %s", o.What, o.Type, time.Duration(o.End-o.Invoke).Round(time.Millisecond), Secs(o.End))})
		}
		return f
	}
	const nb = 200
	span := s.t1 - s.t0
	bins := make([][]float64, nb)
	for _, o := range in.samples {
		if o.End < in.from || o.End > in.to {
			continue
		}
		b := min(int((o.End-in.from)*nb/max(span, 1)), nb-1)
		bins[b] = append(bins[b], float64(o.End-o.Invoke)/1e9)
	}
	series := []struct {
		q     float64
		class string
	}{{0.5, "p50"}, {0.99, "p99"}, {1, "pmax"}}
	for _, sr := range series {
		d := ""
		for b, vs := range bins {
			if len(vs) == 0 {
				continue
			}
			slices.Sort(vs)
			v := vs[min(int(math.Ceil(sr.q*float64(len(vs))))-1, len(vs)-1)]
			x := s.x0 + (px(b)+0.5)*(s.x1-s.x0)/nb
			cmd := "L"
			if d == "" {
				cmd = "M"
			}
			d += cmd + x.String() + " " + y(v).String() + " "
		}
		if d != "" {
			f.Paths = append(f.Paths, svgPath{D: d, Class: "q " + sr.class, Title: sr.class + " latency per bin"})
		}
	}
	f.Texts = append(f.Texts, text{X: s.x1, Y: chartTop - 3, Anchor: "end", Class: "note", Text: fmt.Sprintf("%d operations: median, p99 and maximum of %d bins", n, nb)})
	return f
}
