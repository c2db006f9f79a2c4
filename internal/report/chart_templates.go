package report

import (
	"fmt"
	"html/template"
	"strings"
)

// chartsSrc and chartsCSS are the templates and style of the charts that
// have a file of their own (fencing_chart.go, clock_chart.go,
// server_lanes.go), added to every page's.
const (
	chartsSrc = tokensSrc + clockSrc + faultKindsSrc
	chartsCSS = tokensCSS + clockCSS + serverLanesCSS
)

// faultKindsSrc is the legend of the fault windows' colours, one a kind
// (faultKind), for a timeline's legend ("fault-kinds": spans for a
// div.legend).
const faultKindsSrc = `{{define "fault-kinds"}}{{range $k := faultKinds}}<span><svg viewBox="0 0 28 14" class="swatch"><rect class="band {{$k.Class}}" x="2" y="1" width="24" height="12"/><rect class="fault {{$k.Class}}" x="2" y="1" width="24" height="3"/></svg>{{$k.Words}}</span>
{{end}}{{end}}`

// faultKindStyle is each fault kind's colours (faultKind; "" the default,
// for pauses and what has no kind of its own), in the legend's order, with
// the legend's words: its window's band (and its opacity), its bar on a
// node's lane, its label above the lanes.
var faultKindStyle = []struct {
	Class, Words              string
	Band, Opacity, Bar, Label string
}{
	{"", "fault: a pause", "#ffb74d", ".16", "#f57c00", "#b45f06"},
	{"kill", "a kill, a power loss", "#78909c", ".18", "#546e7a", "#37474f"},
	{"cut", "a partition", "#26c6da", ".16", "#0097a7", "#006064"},
	{"clock", "a clock fault", "#c0ca33", ".2", "#827717", "#524c00"},
	{"slow", "a throttle, slow disk or network", "#a1887f", ".18", "#8d6e63", "#4e342e"},
}

// faultKindsCSS is the style of the fault kinds' colours, in figures and
// in the legend's swatches.
func faultKindsCSS() template.CSS {
	var b strings.Builder
	for _, k := range faultKindStyle {
		c := ""
		if k.Class != "" {
			c = "." + k.Class
		}
		fmt.Fprintf(&b, ".fig .band%[1]s,.swatch .band%[1]s{fill:%[2]s;fill-opacity:%[3]s}.fig .fault%[1]s,.swatch .fault%[1]s{fill:%[4]s}.fig .band-label%[1]s{fill:%[5]s}\n",
			c, k.Band, k.Opacity, k.Bar, k.Label)
	}
	return template.CSS(b.String())
}
