package report

// chartsSrc and chartsCSS are the templates and style of the charts that
// have a file of their own (fencing_chart.go, clock_chart.go,
// server_lanes.go), added to every page's.
const (
	chartsSrc = tokensSrc + clockSrc
	chartsCSS = tokensCSS + clockCSS + serverLanesCSS
)
