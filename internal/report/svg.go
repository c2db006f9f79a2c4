package report

import (
	"html/template"
	"math"
	"strconv"
)

// The report draws its SVG figures as geometry (rectangles, lines, marks,
// texts) handed to one html/template, so that every string that reaches
// the page, history data included, is escaped by the template; no figure is
// built as raw markup.

// px is a coordinate, printed with one decimal at most.
type px float64

func (p px) String() string {
	f := math.Round(float64(p)*10) / 10
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// Figure is one SVG drawing, drawn by the template "figure".
type Figure struct {
	ID    string
	Class string
	Label string // aria-label
	W, H  px
	// Style and Sized make a figure that stands alone, as a file of its
	// own: its style inside it, its width and height set.
	Style template.CSS
	Sized bool
	// Drawn in this order: bands, rects, lines, paths, marks, texts.
	Bands []shape
	Rects []shape
	Lines []line
	Paths []svgPath
	Marks []mark
	Texts []text
}

// shape is a rectangle; Href, when set, makes it a link.
type shape struct {
	X, Y, W, H px
	Class      string
	Title      string
	Href       string
}

type line struct {
	X1, Y1, X2, Y2 px
	Class          string
	Title          string
}

type svgPath struct {
	D     string // built only from numbers (see arc)
	Class string
	Title string
}

// mark is a glyph centred at X, Y: Shape is dot, ring, cross, diamond,
// raise (a triangle), lead (a crown) or q (a question mark).
type mark struct {
	X, Y  px
	R     px
	Shape string
	Class string
	Title string
	Href  string
}

type text struct {
	X, Y   px
	Text   string
	Class  string
	Anchor string // start, middle, end
}

// arc is an SVG path from (x1, y1) to (x2, y2) bowing up by h.
func arc(x1, y1, x2, y2, h px) string {
	mx := (x1 + x2) / 2
	my := min(y1, y2) - h
	return "M" + x1.String() + " " + y1.String() + " Q" + mx.String() + " " + my.String() + " " + x2.String() + " " + y2.String()
}

// scale maps times (ns) onto the plot's x range.
type scale struct {
	t0, t1 int64
	x0, x1 px
}

func (s scale) x(t int64) px {
	if s.t1 <= s.t0 {
		return s.x0
	}
	t = min(max(t, s.t0), s.t1)
	return s.x0 + px(float64(t-s.t0)/float64(s.t1-s.t0))*(s.x1-s.x0)
}

// width is the width of [a, b], at least min.
func (s scale) width(a, b int64, minW px) px {
	return max(s.x(b)-s.x(a), minW)
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten, for about
// n ticks over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 || n <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// timeTicks adds a time axis at y (labels below) with grid lines from
// gridTop to gridBottom.
func timeTicks(f *Figure, s scale, y, gridTop, gridBottom px) {
	span := float64(s.t1-s.t0) / 1e9
	step := niceStep(span, 10)
	first := math.Ceil(float64(s.t0)/1e9/step) * step
	for v := first; v <= float64(s.t1)/1e9+1e-9; v += step {
		x := s.x(int64(v * 1e9))
		f.Lines = append(f.Lines, line{X1: x, Y1: gridTop, X2: x, Y2: gridBottom, Class: "grid"})
		f.Texts = append(f.Texts, text{X: x, Y: y, Text: formatTick(v, step) + "s", Class: "tick", Anchor: "middle"})
	}
}

func formatTick(v, step float64) string {
	prec := 0
	if step < 1 {
		prec = int(math.Ceil(-math.Log10(step)))
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// figureSrc draws a figure (template "figure"). Numbers print through
// px.String; strings are escaped by html/template.
const figureSrc = `{{define "figure"}}<svg xmlns="http://www.w3.org/2000/svg" {{with .ID}}id="{{.}}" {{end}}class="fig {{.Class}}" {{if .Sized}}width="{{.W}}" height="{{.H}}" {{end}}viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Label}}">{{with .Style}}<style>{{.}}</style>{{end}}
{{range .Bands}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}">{{with .Title}}<title>{{.}}</title>{{end}}</rect>
{{end}}{{range .Rects}}{{if .Href}}<a href="{{.Href}}">{{end}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}">{{with .Title}}<title>{{.}}</title>{{end}}</rect>{{if .Href}}</a>{{end}}
{{end}}{{range .Lines}}<line class="{{.Class}}" x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}">{{with .Title}}<title>{{.}}</title>{{end}}</line>
{{end}}{{range .Paths}}<path class="{{.Class}}" d="{{.D}}">{{with .Title}}<title>{{.}}</title>{{end}}</path>
{{end}}{{range .Marks}}{{if .Href}}<a href="{{.Href}}">{{end}}{{template "mark" .}}{{if .Href}}</a>{{end}}
{{end}}{{range .Texts}}<text class="{{.Class}}" x="{{.X}}" y="{{.Y}}"{{with .Anchor}} text-anchor="{{.}}"{{end}}>{{.Text}}</text>
{{end}}</svg>{{end}}
{{define "mark"}}{{if eq .Shape "dot"}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="{{.R}}">{{with .Title}}<title>{{.}}</title>{{end}}</circle>{{else}}<use class="{{.Class}}" href="#g-{{.Shape}}" x="{{.X}}" y="{{.Y}}">{{with .Title}}<title>{{.}}</title>{{end}}</use>{{end}}{{end}}`
