package report

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The clock chart ("Clocks over time"): for a run with clock faults, each
// faulted process's clock against true time, as how far it was ahead (up)
// or behind (down) on the timeline's time axis: a clock-rate fault a
// slope (rate - 1) from its start to its heal, where the wall clock is
// made true again; a clock-skew a step to its offset and back; a
// clock-strobe a square wave of its delta and period. What the process's
// own log stamps showed, where the fault recorded it (observed rate or
// offset), is drawn dashed beside what was set.

// ClockCourse is what one clock fault did to one process's clock, as the
// clock chart draws it: the fault and its node, its window (Stop -1: not
// healed before the end), and what it set, by kind: Rate (clock-rate),
// Offset (clock-skew), Delta and Period (clock-strobe); and what the
// process was seen to do (ObservedRate, ObservedOffset), nil when not
// recorded. LeaseOnly marks a skew of fencecheck's own lease estimate
// (clock-skew:client), not of a process's clock. The harness reads them
// from each fault's typed record.
type ClockCourse struct {
	Fault          string
	Node           string
	Start, Stop    int64
	Rate           float64
	ObservedRate   *float64
	Offset         time.Duration
	ObservedOffset *time.Duration
	Delta, Period  time.Duration
	LeaseOnly      bool
}

// maxStrobeFlips bounds the flips a strobe is drawn with one by one: past
// it, its window is a band from 0 to its delta.
const (
	maxStrobeFlips    = 400
	clockChartH    px = 200
)

// seriesPoint is a point of a clock's offset (s) at time t (ns).
type seriesPoint struct {
	t int64
	v float64
}

// course is the offset a course set, as points (with a jump back to 0 at
// the heal), and what was observed, when recorded: each a polyline.
func (c ClockCourse) course(last int64) (set, seen []seriesPoint, band bool) {
	stop := c.Stop
	if stop < 0 {
		stop = last
	}
	d := float64(stop-c.Start) / 1e9
	switch {
	case c.Rate != 0:
		set = []seriesPoint{{c.Start, 0}, {stop, (c.Rate - 1) * d}, {stop, 0}}
		if c.ObservedRate != nil {
			seen = []seriesPoint{{c.Start, 0}, {stop, (*c.ObservedRate - 1) * d}}
		}
	case c.Period > 0:
		delta := c.Delta.Seconds()
		flips := int64(stop-c.Start) / int64(c.Period)
		if flips > maxStrobeFlips {
			return []seriesPoint{{c.Start, 0}, {stop, delta}}, nil, true
		}
		v := delta
		set = []seriesPoint{{c.Start, 0}, {c.Start, v}}
		for t := c.Start + int64(c.Period); t < stop; t += int64(c.Period) {
			set = append(set, seriesPoint{t, v})
			v = delta - v
			set = append(set, seriesPoint{t, v})
		}
		set = append(set, seriesPoint{stop, v}, seriesPoint{stop, 0})
	default:
		o := c.Offset.Seconds()
		set = []seriesPoint{{c.Start, 0}, {c.Start, o}, {stop, o}, {stop, 0}}
		if c.ObservedOffset != nil {
			ob := c.ObservedOffset.Seconds()
			seen = []seriesPoint{{c.Start, ob}, {stop, ob}}
		}
	}
	return set, seen, false
}

// title says what the course set and saw, for its tooltip.
func (c ClockCourse) title(stop int64) string {
	s := fmt.Sprintf("%s on %s, %s to %s: ", c.Fault, c.Node, Secs(c.Start), Secs(stop))
	switch {
	case c.Rate != 0:
		s += fmt.Sprintf("clock set to run at %gx", c.Rate)
		if c.ObservedRate != nil {
			s += fmt.Sprintf(", its log showed %gx", *c.ObservedRate)
		}
	case c.Period > 0:
		s += fmt.Sprintf("wall clock flipped between true and %s ahead every %s", c.Delta, c.Period)
	default:
		s += fmt.Sprintf("clock set %s", signed(c.Offset))
		if c.LeaseOnly {
			s += " (the client's lease estimate only)"
		}
		if c.ObservedOffset != nil {
			s += fmt.Sprintf(", its log showed %s", signed(*c.ObservedOffset))
		}
	}
	return s
}

// signed is d ahead or behind, in words.
func signed(d time.Duration) string {
	if d < 0 {
		return (-d).String() + " behind"
	}
	return d.String() + " ahead"
}

// clockLegend is one node's colour in the clock chart.
type clockLegend struct {
	Node  string
	Class string
}

// clockData is the clock section; Observed: some course was observed (its
// dotted line is in the legend).
type clockData struct {
	Fig      Figure
	Legend   []clockLegend
	Observed bool
}

// DrawClocks draws the clock chart of cs over [0, last].
func DrawClocks(id string, cs []ClockCourse, last int64) (Figure, []clockLegend) {
	f := Figure{ID: id, Class: "chart clocks", W: figW, H: clockChartH,
		Label: "Clocks over time: how far each faulted process's clock was ahead of or behind true time"}
	s := scale{t0: 0, t1: max(last, 1), x0: labelW, x1: figW - rightPad}
	lo, hi := 0.0, 0.0
	type drawn struct {
		c         ClockCourse
		set, seen []seriesPoint
		band      bool
	}
	var ds []drawn
	var nodes []string
	for _, c := range cs {
		set, seen, band := c.course(last)
		for _, p := range append(slices.Clone(set), seen...) {
			lo, hi = min(lo, p.v), max(hi, p.v)
		}
		ds = append(ds, drawn{c, set, seen, band})
		if !slices.Contains(nodes, c.Node) {
			nodes = append(nodes, c.Node)
		}
	}
	if hi-lo == 0 {
		hi = 1
	}
	step := niceStep(hi-lo, 4)
	ymin, ymax := math.Floor(lo/step-1e-9)*step, math.Ceil(hi/step+1e-9)*step
	plotTop, plotBot := chartTop, clockChartH-chartBot
	y := func(v float64) px { return plotBot - px((v-ymin)/(ymax-ymin))*(plotBot-plotTop) }
	for v := ymin; v <= ymax+step/2; v += step {
		cls := "grid"
		if math.Abs(v) < step/2 {
			cls, v = "axis zero", 0
		}
		f.Lines = append(f.Lines, line{X1: s.x0, Y1: y(v), X2: s.x1, Y2: y(v), Class: cls})
		f.Texts = append(f.Texts, text{X: s.x0 - 6, Y: y(v) + 4, Text: formatTick(v, step) + "s", Class: "tick", Anchor: "end"})
	}
	f.Texts = append(f.Texts, text{X: 6, Y: plotTop + 8, Text: "ahead", Class: "tick"}, text{X: 6, Y: plotBot - 2, Text: "behind", Class: "tick"})
	timeTicks(&f, s, clockChartH-6, plotTop, plotBot)
	var legend []clockLegend
	for i, n := range nodes {
		legend = append(legend, clockLegend{Node: n, Class: fmt.Sprintf("c%d", i%6)})
	}
	classOf := func(node string) string { return legend[slices.Index(nodes, node)].Class }
	path := func(ps []seriesPoint) string {
		d := ""
		for i, p := range ps {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			d += cmd + s.x(p.t).String() + " " + y(p.v).String() + " "
		}
		return d
	}
	for _, d := range ds {
		stop := d.c.Stop
		if stop < 0 {
			stop = last
		}
		cls := classOf(d.c.Node)
		f.Bands = append(f.Bands, shape{X: s.x(d.c.Start), Y: plotTop, W: s.width(d.c.Start, stop, 1.5), H: plotBot - plotTop, Class: bandClass("band", faultKind(d.c.Fault)),
			Title: fmt.Sprintf("%s on %s: %s to %s", d.c.Fault, d.c.Node, Secs(d.c.Start), Secs(stop))})
		title := d.c.title(stop)
		if d.band {
			top, bot := y(max(d.set[0].v, d.set[1].v)), y(min(d.set[0].v, d.set[1].v))
			f.Rects = append(f.Rects, shape{X: s.x(d.c.Start), Y: top, W: s.width(d.c.Start, stop, 1.5), H: bot - top, Class: "clk-band " + cls, Title: title})
		} else {
			f.Paths = append(f.Paths, svgPath{D: path(d.set), Class: "clk set " + cls, Title: title})
		}
		if len(d.seen) > 0 {
			f.Paths = append(f.Paths, svgPath{D: path(d.seen), Class: "clk seen " + cls, Title: title})
		}
		f.Texts = append(f.Texts, text{X: s.x(d.c.Start) + 3, Y: plotTop + 9, Text: d.c.Node, Class: "clk-label " + cls})
	}
	return f, legend
}

// clockSection is the section "Clocks over time", when the run had
// clock faults (in.Clocks).
func clockSection(in *Input) (Section, bool) {
	if len(in.Clocks) == 0 {
		return section{}, false
	}
	last := in.LastTime()
	for _, c := range in.Clocks {
		last = max(last, c.Stop, c.Start)
	}
	fig, legend := DrawClocks("clocks", in.Clocks, last)
	observed := slices.ContainsFunc(in.Clocks, func(c ClockCourse) bool { return c.ObservedRate != nil || c.ObservedOffset != nil })
	return section{ID: "clock-chart", Title: "Clocks over time", tmpl: "clock-chart", data: clockData{Fig: fig, Legend: legend, Observed: observed}}, true
}

// clockSrc is the clock chart's template ("clock-chart", with clockData).
const clockSrc = `{{define "clock-chart"}}<p class="muted">How far each faulted process's clock was ahead of (up) or behind (down) true time, on the timeline's time axis: solid what the fault set, dotted what the process's own log stamps showed, where the fault recorded it (over the solid line where the two agree). A clock-rate fault's clock drifts until its heal, which makes the wall clock true again.</p>
<div class="legend">{{range .Legend}}<span><svg viewBox="0 0 28 14"><line class="clk {{.Class}}" x1="2" y1="7" x2="26" y2="7"/></svg>{{.Node}}: set by the fault</span>{{end}}{{if .Observed}}<span><svg viewBox="0 0 28 14"><line class="clk seen" x1="2" y1="7" x2="26" y2="7"/></svg>what its log stamps showed</span>{{end}}</div>
{{template "figure" .Fig}}{{end}}`

// clockCSS is the clock chart's style.
const clockCSS = `
.fig .clk{fill:none;stroke-width:2}
.legend .clk{stroke-width:2.5}
.fig .clk-band{fill-opacity:.35}.fig .clk-label{font-size:10.5px;font-weight:600}
.clk.c0{stroke:#3b6fd4}.clk.c1{stroke:#c62828}.clk.c2{stroke:#2e7d32}.clk.c3{stroke:#8e24aa}.clk.c4{stroke:#ef6c00}.clk.c5{stroke:#00838f}
.clk.seen{stroke:#111;stroke-dasharray:1.5 3.5;stroke-width:2;stroke-linecap:round;fill:none}
.clk-band.c0,.clk-label.c0{fill:#3b6fd4}.clk-band.c1,.clk-label.c1{fill:#c62828}.clk-band.c2,.clk-label.c2{fill:#2e7d32}.clk-band.c3,.clk-label.c3{fill:#8e24aa}.clk-band.c4,.clk-label.c4{fill:#ef6c00}.clk-band.c5,.clk-label.c5{fill:#00838f}
`
