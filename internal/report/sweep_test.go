package report

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/verdicts/sweep"
)

// loadSweep reads the hand-made testdata/sweep.json and derives its
// figures from its trials, as the sweep does after each run.
func loadSweep(t *testing.T) *sweep.Summary {
	t.Helper()
	b, err := os.ReadFile("testdata/sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	var s sweep.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for i := range s.Points {
		s.Points[i].Recount()
	}
	s.FindThresholds()
	return &s
}

// The chart is a well-formed standalone SVG document with its style inside,
// one line per series, one mark per point (with its runs in its title), the
// expected band and the measured threshold.
func TestSweepChart(t *testing.T) {
	s := loadSweep(t)
	b, err := SweepChart(s)
	if err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("SWEEP_SVG"); out != "" {
		os.WriteFile(out, b, 0o644)
	}
	d := xml.NewDecoder(strings.NewReader(string(b)))
	counts := map[string]int{}
	classes := map[string]int{}
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v\n%s", err, b)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
			for _, a := range se.Attr {
				if a.Name.Local == "class" {
					for _, c := range strings.Fields(a.Value) {
						classes[c]++
					}
				}
			}
		}
	}
	svg := string(b)
	for _, c := range []struct {
		what string
		got  int
		want int
	}{
		{"svg elements", counts["svg"], 1},
		{"style elements", counts["style"], 1},
		{"series lines (paths)", counts["path"], 2},
		{"point marks", counts["circle"], 12},
		{"fenced marks", classes["fenced"], 6},
		{"expected bands", classes["band"], 1},
		{"expected medians", classes["exp"], 1},
		{"expected medians without latencies", classes["ideal"], 1},
		{"measured lines", classes["meas"], 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	for _, want := range []string{
		`width="760"`,
		"etcd 3.6.16: runs that lost an update",
		"pause 0.75 TTL (1.5s), fencing none: 1 of 2 runs lost an update (3 of 40 acknowledged updates lost)",
		"pause 2 TTL (4s), fencing token: 0 of 2 runs lost an update",
		"measured 0.75",
		"expected 0.58",
		"left − work 0.65",
		"TTL 2s, lease 2s, margin 500ms, 5 clients, 3 node(s), 2 run(s) a point (seeds 1 to 2)",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

// With two margins each series is drawn on its own (dashed for the second
// margin), each unfenced series with its own thresholds, and the legend
// names the margins.
func TestSweepChartMargins(t *testing.T) {
	s := loadSweep(t)
	n := len(s.Points)
	for i := range n {
		p := s.Points[i]
		p.MarginMS = 1500
		p.Trials = append([]sweep.Trial(nil), p.Trials...)
		p.Recount()
		s.Points = append(s.Points, p)
	}
	s.FindThresholds()
	if len(s.Thresholds) != 2 {
		t.Fatalf("%d thresholds, want 2", len(s.Thresholds))
	}
	b, err := SweepChart(s)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	for _, c := range []struct {
		what string
		n    int
	}{
		{`<path class="line c-none`, 2}, {`<path class="line c-token`, 2}, {`class="line c-none m1"`, 2}, {`class="meas"`, 2}, {`class="band"`, 2},
	} {
		if got := strings.Count(svg, c.what); got != c.n {
			t.Errorf("%s: %d, want %d", c.what, got, c.n)
		}
	}
	for _, want := range []string{"fencing none, margin 0.25 TTL", "fencing token, margin 0.75 TTL"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(svg, "margin 500ms, 5 clients") {
		t.Errorf("the subtitle names one margin, with two")
	}
}
