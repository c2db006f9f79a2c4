package view

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// recordedRun reads a run recorded on a real cluster (internal/cli's
// testdata/runs/NAME: its test.json and gzipped history.jsonl).
func recordedRun(t *testing.T, name string) (store.TestInfo, []history.Event) {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "cli", "testdata", "runs", name)
	var test store.TestInfo
	b, err := os.ReadFile(filepath.Join(dir, "test.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &test); err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(filepath.Join(dir, "history.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return test, events
}

var (
	svgRE       = regexp.MustCompile(`(?s)<svg [^>]*id="(tokens-[^"]+)".*?</svg>`)
	fenceLineRE = regexp.MustCompile(`<path class="fence-line" d="([^"]+)"`)
	grantRE     = regexp.MustCompile(`<rect class="grant[^"]*" x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)"><title>[^<]* held token ([0-9]+) `)
	refusedRE   = regexp.MustCompile(`<use class="tw w-fenced[^"]*" href="#g-cross" x="([^"]+)" y="[^"]+"><title>[^<]*with token ([0-9]+): REFUSED by the fence at ([0-9.]+)s`)
)

// lineAt is the height of a step line (M, H and V commands, as the
// fencing chart draws it) at x: the level of the horizontal run over x,
// the later where a rise is at x itself.
func lineAt(t *testing.T, d string, x float64) float64 {
	t.Helper()
	f := strings.Fields(strings.NewReplacer("M", " M ", "H", " H ", "V", " V ").Replace(d))
	num := func(i int) float64 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			t.Fatalf("path %q: %v", d, err)
		}
		return v
	}
	var px, py float64
	level, found := 0.0, false
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case "M":
			px, py = num(i+1), num(i+2)
			i += 2
		case "V":
			py = num(i + 1)
			i++
			if px <= x {
				level, found = py, true
			}
		case "H":
			nx := num(i + 1)
			i++
			if px <= x && x <= nx {
				level, found = py, true
			}
			px = nx
		}
	}
	if !found {
		t.Fatalf("the step line %q does not reach x %v", d, x)
	}
	return level
}

// The fence is raised by a fenced read as well as by an accepted write
// (etcd's token fencing raises it in the read's transaction): in the
// recorded token run, each refusal met a fence that the next holder's
// read had raised before that holder's write was acknowledged. At each
// refusal, every "Tokens over time" chart of the report (the run's and
// each story's) draws the highest-accepted line at the token the history
// says the fence held then: the highest among the reads returned and the
// writes acknowledged before it (at the height of that token's grant).
func TestFenceLineRaisedByReads(t *testing.T) {
	test, events := recordedRun(t, "etcd-token-pause-holder")
	// The fence at each time, from the history alone.
	type raise struct {
		at, token int64
		read      bool
	}
	var raises []raise
	tokenOf := map[history.Process]int64{}
	for _, e := range events {
		switch {
		case e.Type == history.Phase && e.F == la.PhaseAcquired:
			var v struct{ Token int64 }
			if err := json.Unmarshal(e.Value, &v); err != nil {
				t.Fatal(err)
			}
			tokenOf[e.Process] = v.Token
		case e.Type == history.Phase && e.F == la.PhaseRead:
			raises = append(raises, raise{e.Time, tokenOf[e.Process], true})
		case e.Type == history.Ok && e.F == "append":
			var v struct{ Token int64 }
			if err := json.Unmarshal(e.Value, &v); err != nil {
				t.Fatal(err)
			}
			raises = append(raises, raise{e.Time, v.Token, false})
		}
	}
	fenceAt := func(at int64) (top int64, byRead bool) {
		for _, r := range raises {
			if r.at < at && r.token > top {
				top, byRead = r.token, r.read
			}
		}
		return top, byRead
	}
	res := check(t, events)
	var page bytes.Buffer
	if err := report.Render(&page, report.Input{Test: test, Results: res, Events: events, View: View}); err != nil {
		t.Fatal(err)
	}
	charts := svgRE.FindAllStringSubmatch(page.String(), -1)
	if len(charts) < 2 {
		t.Fatalf("%d token charts on the page", len(charts))
	}
	checked, byRead := 0, 0
	for _, c := range charts {
		id, svg := c[1], c[0]
		line := fenceLineRE.FindStringSubmatch(svg)
		if line == nil {
			t.Errorf("%s: no highest-accepted line", id)
			continue
		}
		grantY := map[int64]float64{}
		for _, g := range grantRE.FindAllStringSubmatch(svg, -1) {
			y, _ := strconv.ParseFloat(g[1], 64)
			h, _ := strconv.ParseFloat(g[2], 64)
			tok, _ := strconv.ParseInt(g[3], 10, 64)
			grantY[tok] = y + h/2
		}
		for _, r := range refusedRE.FindAllStringSubmatch(svg, -1) {
			x, _ := strconv.ParseFloat(r[1], 64)
			tok, _ := strconv.ParseInt(r[2], 10, 64)
			secs, _ := strconv.ParseFloat(r[3], 64)
			// The refusal's time, to the hundredth of a second its
			// title gives: the fenced failure of that token.
			var at int64 = -1
			for _, e := range events {
				var v struct {
					Token  int64
					Reason string
				}
				if e.Type == history.Fail && e.F == "append" && json.Unmarshal(e.Value, &v) == nil && v.Reason == la.ReasonFenced && v.Token == tok &&
					report.Secs(e.Time) == strconv.FormatFloat(secs, 'f', 2, 64)+"s" {
					at = e.Time
				}
			}
			if at < 0 {
				t.Fatalf("%s: no fenced refusal of token %d at %vs in the history", id, tok, secs)
			}
			want, read := fenceAt(at)
			wy, ok := grantY[want]
			if !ok {
				continue // the grant that raised it is outside the window
			}
			if got := lineAt(t, line[1], x); got != wy {
				t.Errorf("%s: at the refusal of token %d (%s) the line is at y %v; the fence held %d then (y %v)", id, tok, report.Secs(at), got, want, wy)
			}
			checked++
			if read {
				byRead++
			}
		}
	}
	// The recorded run's three refusals, in the run's chart and in their
	// stories', each met a fence a read had raised.
	if checked < 6 || byRead != checked {
		t.Errorf("%d refusals checked, %d of them at a fence a read raised; want 6 or more, all", checked, byRead)
	}
}
