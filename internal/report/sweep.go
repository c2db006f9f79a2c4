package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/sweep"
)

// The sweep's chart: the fraction of runs that lost an update (y) against
// the holder's pause in TTLs (x), one line per fencing mode (and margin),
// the expected threshold as a band (its median dashed) and the measured
// one (where half the runs lose) as a line. It is a file of its own
// (sweep.svg), readable as an image: its style is inside it.

const (
	sweepW     px = 760
	sweepH     px = 460
	sweepLeft  px = 64
	sweepRight px = 32
	sweepTop   px = 118
	sweepBot   px = 56
)

// sweepCSS is the chart's style.
const sweepCSS = `svg{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;background:#fff}
.bg{fill:#fff}
.title{font-size:15px;font-weight:700;fill:#1d2330}.sub{font-size:11.5px;fill:#475467}
.grid{stroke:#eceef2;stroke-width:1}.axis{stroke:#98a2b3;stroke-width:1}
.tick{font-size:11px;fill:#667085}.axis-label{font-size:12px;fill:#344054}
.band{fill:#ffb74d;fill-opacity:.22}.exp{stroke:#b45f06;stroke-width:1.4;stroke-dasharray:5 3}
.exp-label{font-size:11px;fill:#b45f06;font-weight:600}
.ideal{stroke:#b45f06;stroke-width:1;stroke-dasharray:1 3}.ideal-label{font-size:10.5px;fill:#b45f06}
.meas{stroke:#7f1d1d;stroke-width:1.6}.meas-label{font-size:11px;fill:#7f1d1d;font-weight:700}
.ref{stroke:#98a2b3;stroke-width:1;stroke-dasharray:2 3}.ref-label{font-size:10.5px;fill:#667085}
.line{fill:none;stroke-width:2.2}
.c-none{stroke:#c62828}.c-token{stroke:#2e7d32}.c-cas{stroke:#1565c0}
.m1{stroke-dasharray:7 4}.m2{stroke-dasharray:2 3}.m3{stroke-dasharray:9 3 2 3}
.pt{stroke:#fff;stroke-width:1.2}.pt.f-none{fill:#c62828}.pt.f-token{fill:#2e7d32}.pt.f-cas{fill:#1565c0}
.pt.fenced{fill:#fff;stroke-width:2}.pt.fenced.f-token{stroke:#2e7d32}.pt.fenced.f-cas{stroke:#1565c0}
.legend{font-size:11.5px;fill:#344054}
.note{font-size:10.5px;fill:#667085}`

// SweepChart draws a sweep's chart as a standalone SVG document.
func SweepChart(s *sweep.Summary) ([]byte, error) {
	f := drawSweep(s)
	var b bytes.Buffer
	if err := sweepTmpl.ExecuteTemplate(&b, "figure", f); err != nil {
		return nil, fmt.Errorf("sweep chart: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

var sweepTmpl = template.Must(template.New("sweep").Parse(figureSrc))

func drawSweep(s *sweep.Summary) Figure {
	f := Figure{Class: "sweep", W: sweepW, H: sweepH, Style: template.CSS(sweepCSS), Sized: true,
		Label: fmt.Sprintf("%s: fraction of runs that lost an update against the holder's pause in TTLs", s.Target)}
	f.Bands = append(f.Bands, shape{X: 0, Y: 0, W: sweepW, H: sweepH, Class: "bg"})
	p := newSweepPlot(s)

	// Title.
	version := s.Target
	if s.TargetVersion != "" {
		version += " " + s.TargetVersion
	}
	f.Texts = append(f.Texts,
		text{X: 14, Y: 22, Class: "title", Text: version + ": runs that lost an update, by holder pause"},
		text{X: 14, Y: 40, Class: "sub", Text: fmt.Sprintf("one lock holder paused per run, after its lease check and before its %s of work and its write",
			time.Duration(s.WorkMS)*time.Millisecond)},
		text{X: 14, Y: 56, Class: "sub", Text: sweepSetup(s)})
	p.axes(&f, time.Duration(s.TTLMS)*time.Millisecond)

	// Reference lines: the TTL, and the lease when it is longer.
	p.ref(&f, 1, "pause = TTL")
	if p.lease > 1.001 {
		p.ref(&f, p.lease, fmt.Sprintf("pause = lease (%s)", time.Duration(s.LeaseMS)*time.Millisecond))
	}
	for i, th := range s.Thresholds {
		p.threshold(&f, th, px(i)*14)
	}
	p.series(&f, s)
	if len(s.Thresholds) > 0 {
		f.Texts = append(f.Texts, text{X: 14, Y: 72, Class: "note",
			Text: "band: expected threshold of each paused holder, the pause at which its write leaves as its lease ends (from its history); dashed: median"})
	}
	return f
}

// sweepPlot is the sweep chart's plot: the pause (in TTLs) from 0 to xmax
// across, with ticks every step, and the fraction of runs up.
type sweepPlot struct {
	xmax, step, lease float64
	x0, x1, y0, y1    px // the plot's left, right, top and bottom
}

// newSweepPlot spans from 0 to past the last pause, threshold and lease.
func newSweepPlot(s *sweep.Summary) sweepPlot {
	lease := float64(s.LeaseMS) / float64(max(s.TTLMS, 1))
	xmax := lease
	for _, p := range s.Points {
		xmax = max(xmax, p.Pause)
	}
	for _, th := range s.Thresholds {
		xmax = max(xmax, th.ExpectedMax)
	}
	step := niceStep(xmax, 8)
	xmax = math.Ceil(xmax/step-1e-9) * step
	return sweepPlot{xmax: xmax, step: step, lease: lease,
		x0: sweepLeft, x1: sweepW - sweepRight, y0: sweepTop, y1: sweepH - sweepBot}
}

func (p sweepPlot) x(v float64) px    { return p.x0 + px(v/p.xmax)*(p.x1-p.x0) }
func (p sweepPlot) y(frac float64) px { return p.y1 - px(frac)*(p.y1-p.y0) }

// right places a label to the right of a vertical line at X, or to its
// left near the plot's right edge.
func (p sweepPlot) right(t text, X px) text {
	t.X = X + 4
	if X > p.x1-90 {
		t.X, t.Anchor = X-4, "end"
	}
	return t
}

// axes draws the grid and the axes.
func (p sweepPlot) axes(f *Figure, ttl time.Duration) {
	x0, x1, y0, y1 := p.x0, p.x1, p.y0, p.y1
	for v := 0.0; v <= 1+1e-9; v += 0.25 {
		f.Lines = append(f.Lines, line{X1: x0, Y1: p.y(v), X2: x1, Y2: p.y(v), Class: "grid"})
		f.Texts = append(f.Texts, text{X: x0 - 6, Y: p.y(v) + 4, Text: fmt.Sprintf("%.0f%%", v*100), Class: "tick", Anchor: "end"})
	}
	for v := 0.0; v <= p.xmax+1e-9; v += p.step {
		f.Lines = append(f.Lines, line{X1: p.x(v), Y1: y0, X2: p.x(v), Y2: y1, Class: "grid"})
		f.Texts = append(f.Texts, text{X: p.x(v), Y: y1 + 16, Text: formatTick(v, p.step), Class: "tick", Anchor: "middle"})
	}
	f.Lines = append(f.Lines, line{X1: x0, Y1: y1, X2: x1, Y2: y1, Class: "axis"}, line{X1: x0, Y1: y0, X2: x0, Y2: y1, Class: "axis"})
	f.Texts = append(f.Texts,
		text{X: (x0 + x1) / 2, Y: sweepH - 14, Class: "axis-label", Anchor: "middle", Text: fmt.Sprintf("holder pause / TTL (TTL %s)", ttl)})
}

// ref draws a reference line at pause v.
func (p sweepPlot) ref(f *Figure, v float64, label string) {
	f.Lines = append(f.Lines, line{X1: p.x(v), Y1: p.y0, X2: p.x(v), Y2: p.y1, Class: "ref"})
	f.Texts = append(f.Texts, p.right(text{Y: p.y1 - 6, Class: "ref-label", Text: label}, p.x(v)))
}

// threshold draws a threshold: the expected band and median, the
// expectation without the fault's latencies, and the measured line; its
// labels dy lower than the previous threshold's.
func (p sweepPlot) threshold(f *Figure, th sweep.Threshold, dy px) {
	y0, y1 := p.y0, p.y1
	if th.TimedHolders > 0 {
		a, b := p.x(th.TimedMin), p.x(th.TimedMax)
		f.Bands = append(f.Bands, shape{X: a, Y: y0, W: max(b-a, 1.5), H: y1 - y0, Class: "band",
			Title: fmt.Sprintf("expected threshold, timed: %s to %s TTL over %d paused holders", sweep.Format(th.TimedMin), sweep.Format(th.TimedMax), th.TimedHolders)})
		m := p.x(th.TimedMedian)
		f.Lines = append(f.Lines, line{X1: m, Y1: y0, X2: m, Y2: y1, Class: "exp"})
		f.Texts = append(f.Texts, text{X: m - 4, Y: y0 - 6 - dy, Class: "exp-label", Anchor: "end",
			Text: "expected " + sweep.Format(th.TimedMedian)})
	}
	if th.Holders > 0 {
		m := p.x(th.ExpectedMedian)
		f.Lines = append(f.Lines, line{X1: m, Y1: y0, X2: m, Y2: y1, Class: "ideal",
			Title: fmt.Sprintf("expected threshold without the fault's latencies: %s to %s TTL, median %s", sweep.Format(th.ExpectedMin), sweep.Format(th.ExpectedMax), sweep.Format(th.ExpectedMedian))})
		f.Texts = append(f.Texts, p.right(text{Y: y1 - 20 - dy, Class: "ideal-label", Text: "left − work " + sweep.Format(th.ExpectedMedian)}, m))
	}
	if th.Half != nil {
		h := p.x(*th.Half)
		f.Lines = append(f.Lines, line{X1: h, Y1: y0, X2: h, Y2: y1, Class: "meas",
			Title: fmt.Sprintf("measured threshold: half the runs lose at %s TTL", sweep.Format(*th.Half))})
		f.Texts = append(f.Texts, p.right(text{Y: y0 - 6 - dy, Class: "meas-label", Text: "measured " + sweep.Format(*th.Half)}, h))
	}
}

// series draws each series (fencing and margin) as a line and its
// points, with a legend above the plot.
func (p sweepPlot) series(f *Figure, s *sweep.Summary) {
	margins := map[int64]int{}
	for _, pt := range s.Points {
		if _, ok := margins[pt.MarginMS]; !ok {
			margins[pt.MarginMS] = len(margins)
		}
	}
	lx := p.x0
	var fenced, unfenced []mark
	for _, series := range s.Series() {
		first := series[0]
		class := "c-" + first.Fencing
		if mi := margins[first.MarginMS]; mi > 0 {
			class += fmt.Sprintf(" m%d", min(mi, 3))
		}
		name := "fencing " + first.Fencing
		if len(margins) > 1 {
			name += ", margin " + sweep.Format(float64(first.MarginMS)/float64(max(s.TTLMS, 1))) + " TTL"
		}
		if d := p.path(series); d != "" {
			// Fenced lines first, so that an unfenced one at zero shows.
			if first.Fenced {
				f.Paths = append([]svgPath{{D: d, Class: "line " + class, Title: name}}, f.Paths...)
			} else {
				f.Paths = append(f.Paths, svgPath{D: d, Class: "line " + class, Title: name})
			}
		}
		for _, pt := range series {
			if pt.Runs == 0 {
				continue
			}
			if m := p.point(pt, first.Fencing, name); pt.Fenced {
				fenced = append(fenced, m) // under the unfenced marks: a ring around a dot where both are
			} else {
				unfenced = append(unfenced, m)
			}
		}
		f.Lines = append(f.Lines, line{X1: lx, Y1: 86, X2: lx + 22, Y2: 86, Class: "line " + class})
		f.Texts = append(f.Texts, text{X: lx + 27, Y: 90, Class: "legend", Text: name})
		lx += 27 + px(7*len(name)) + 18
	}
	f.Marks = append(append(f.Marks, fenced...), unfenced...)
}

// path is a series' line through its points that had runs.
func (p sweepPlot) path(series []sweep.Point) string {
	d := ""
	for _, pt := range series {
		if pt.Runs == 0 {
			continue
		}
		cmd := "L"
		if d == "" {
			cmd = "M"
		}
		d += cmd + p.x(pt.Pause).String() + " " + p.y(pt.Fraction).String() + " "
	}
	return d
}

// point is the mark of a point of the series name.
func (p sweepPlot) point(pt sweep.Point, fencing, name string) mark {
	pc, r := "pt f-"+fencing, px(3.5)
	if pt.Fenced {
		pc, r = pc+" fenced", 5.5
	}
	return mark{X: p.x(pt.Pause), Y: p.y(pt.Fraction), R: r, Shape: "dot", Class: pc,
		Title: fmt.Sprintf("pause %s TTL (%s), %s: %d of %d runs lost an update (%d of %d acknowledged updates lost)",
			sweep.Format(pt.Pause), time.Duration(pt.PauseMS)*time.Millisecond, name, pt.Lossy, pt.Runs, pt.Lost, pt.Acknowledged)}
}

// sweepSetup is the chart's second subtitle: what every run shared.
func sweepSetup(s *sweep.Summary) string {
	ttl := time.Duration(s.TTLMS) * time.Millisecond
	out := fmt.Sprintf("TTL %s, lease %s", ttl, time.Duration(s.LeaseMS)*time.Millisecond)
	margins := map[int64]bool{}
	for _, p := range s.Points {
		margins[p.MarginMS] = true
	}
	if len(margins) == 1 {
		for m := range margins {
			out += fmt.Sprintf(", margin %s", time.Duration(m)*time.Millisecond)
		}
	}
	out += fmt.Sprintf(", %d clients, %d node(s), %d run(s) a point", s.Concurrency, s.Nodes, s.Runs)
	if s.Runs > 1 {
		return out + fmt.Sprintf(" (seeds %d to %d)", s.Seed, s.Seed+uint64(s.Runs)-1)
	}
	return out + fmt.Sprintf(" (seed %d)", s.Seed)
}
