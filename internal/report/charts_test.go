package report

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// A long run's thousands of fault windows are shaded on the charts as a
// bounded number of bands (windows closer than a timeline bin merge, each
// titled with its count); a short run's are shaded one by one.
func TestChartFaultBandsBounded(t *testing.T) {
	bands := func(faults []history.Fault, last int64) []shape {
		return drawThroughput(chartInput{Faults: faults, to: last}).Bands
	}
	var few []history.Fault
	for i := range int64(maxBands) {
		few = append(few, history.Fault{FaultValue: history.FaultValue{Fault: "pause-holder"}, Start: i * 1e9, Stop: i*1e9 + 5e8})
	}
	if b := bands(few, int64(maxBands)*1e9); len(b) != maxBands || !strings.HasPrefix(b[0].Title, "pause-holder: ") {
		t.Errorf("%d faults: %d bands, the first titled %q", maxBands, len(b), b[0].Title)
	}
	var many []history.Fault
	const n = 20000
	for i := range int64(n) {
		many = append(many, history.Fault{FaultValue: history.FaultValue{Fault: "pause-holder", Nodes: []string{"w1"}}, Start: i * 1e9, Stop: i*1e9 + 5e8})
	}
	b := bands(many, n*1e9)
	if len(b) > overviewNs+1 {
		t.Errorf("%d faults: %d bands, want at most %d", n, len(b), overviewNs+1)
	}
	if !strings.Contains(b[0].Title, " faults from ") {
		t.Errorf("a merged band is titled %q", b[0].Title)
	}
}
