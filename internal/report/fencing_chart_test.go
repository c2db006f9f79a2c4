package report

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The fencing chart draws one mark per write with a token, each by its
// outcome (a stale accepted write as a diamond, a refusal as a cross, a
// lost element ringed), a bar per grant (its stale part apart), and the
// highest accepted token as a step line that rises only with an accepted
// write.
func TestTokensChart(t *testing.T) {
	in := TokensInput{ID: "tk", From: 0, To: 10e9,
		Grants: []TokenGrant{
			{Who: "w1", Token: 4, From: 1e9, To: 6e9, StaleFrom: 3e9, StaleFromTokens: 7},
			{Who: "w2", Token: 7, From: 3e9, To: 5e9, StaleFrom: -1},
		},
		Writes: []TokenWrite{
			{Who: "w2", What: "append 2", Token: 7, HasToken: true, At: 4e9, Outcome: WriteAccepted, Lost: true},
			{Who: "w1", What: "append 1", Token: 4, HasToken: true, At: 6e9, Outcome: WriteAccepted, Stale: true, Href: "#lost-1"},
			{Who: "w3", What: "append 3", Token: 9, HasToken: true, At: 8e9, Outcome: WriteRefused},
			{Who: "w3", What: "append 4", Token: 9, HasToken: true, At: 9e9, Outcome: WriteUnknown},
		}}
	f := DrawTokens(in)
	count := func(class string) int {
		n := 0
		for _, m := range f.Marks {
			if strings.Contains(" "+m.Class+" ", " "+class+" ") {
				n++
			}
		}
		return n
	}
	if n := count("tw"); n != len(in.Writes) {
		t.Errorf("%d write marks, want one per write (%d)", n, len(in.Writes))
	}
	for class, want := range map[string]int{"w-stale": 1, "w-ok": 1, "w-fenced": 1, "w-unknown": 1, "lost": 1} {
		if n := count(class); n != want {
			t.Errorf("%d marks of class %s, want %d", n, class, want)
		}
	}
	for _, m := range f.Marks {
		if m.Class == "tw w-stale" && (m.Shape != "diamond" || m.Href != "#lost-1") {
			t.Errorf("the stale write is drawn as %s linking %q", m.Shape, m.Href)
		}
	}
	var grants, stale int
	for _, r := range f.Rects {
		switch r.Class {
		case "grant":
			grants++
		case "grant stale":
			stale++
		}
	}
	if grants != 2 || stale != 1 {
		t.Errorf("%d grant bars and %d stale parts, want 2 and 1", grants, stale)
	}
	// The step line rises once, at the only write with the highest token
	// accepted (the stale write's 4 is below it; the refused 9 is not
	// accepted).
	if got := highestAccepted(in.Writes, nil); len(got) != 1 || got[0].At != 4e9 || got[0].Token != 7 {
		t.Errorf("highest accepted steps %v, want one to 7 at 4s", got)
	}
	if len(f.Paths) != 1 || f.Paths[0].Class != "fence-line" {
		t.Errorf("paths %+v, want the step line", f.Paths)
	}
}

// A run whose grants carried no token gets a sentence, not a chart of
// zeros.
func TestTokensChartTokenless(t *testing.T) {
	in := TokensInput{ID: "tk", To: 5e9,
		Grants: []TokenGrant{{Who: "w1", From: 1e9, To: 2e9, StaleFrom: -1}, {Who: "w2", From: 2e9, To: 3e9, StaleFrom: -1}},
		Writes: []TokenWrite{{Who: "w1", HasToken: true, At: 1.5e9}, {Who: "w2", At: 2.5e9}}}
	if !in.Tokenless() {
		t.Fatal("grants without tokens are not tokenless")
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, "tokens-chart", TokensFigure(in)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "No grant carried a fencing token (2 grants)") || strings.Contains(page, "<svg") {
		t.Errorf("tokenless section:\n%s", page)
	}
	in.Grants[0].Token = 3
	if in.Tokenless() {
		t.Error("a grant with token 3 is tokenless")
	}
}

// Past maxTokenWrites, only the stale grants and the writes that are not
// plainly accepted are drawn: a long history's chart stays bounded.
func TestTokensChartBounded(t *testing.T) {
	in := TokensInput{ID: "tk", To: 1e12}
	for i := range int64(3 * maxTokenWrites) {
		in.Grants = append(in.Grants, TokenGrant{Who: "w1", Token: i + 1, From: i * 1e8, To: i*1e8 + 5e7, StaleFrom: -1})
		in.Writes = append(in.Writes, TokenWrite{Who: "w1", Token: i + 1, HasToken: true, At: i*1e8 + 4e7})
	}
	in.Grants[10].StaleFrom, in.Grants[10].StaleFromTokens = 10*1e8+1e7, 12
	in.Writes[10].Stale, in.Writes[10].Token = true, 11
	f := DrawTokens(in)
	if len(f.Rects) != 2 || len(f.Marks) != 1 || f.Marks[0].Class != "tw w-stale" {
		t.Errorf("%d grant bars and %d marks, want the stale grant's 2 and the stale write", len(f.Rects), len(f.Marks))
	}
	// 9000 rises on a plot about 1000 wide: at most one every half unit,
	// up to the last token.
	if len(f.Paths) != 1 || strings.Count(f.Paths[0].D, "V") > 2*int(figW) {
		t.Fatalf("the step line has %d rises for 9000 steps", strings.Count(f.Paths[0].D, "V"))
	}
	// It ends at the highest token: its last rise is the highest of all.
	var ys []float64
	for _, part := range strings.Split(f.Paths[0].D, "V")[1:] {
		v, err := strconv.ParseFloat(strings.Fields(part)[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		ys = append(ys, v)
	}
	if ys[len(ys)-1] != slices.Min(ys) {
		t.Errorf("the step line ends at y %v, below its highest rise %v", ys[len(ys)-1], slices.Min(ys))
	}
}

// Past maxTokenWrites writes with more than maxTokenMarks that matter (a
// long run with thousands of stale holders), the chart is drawn in bins:
// a bounded number of shapes whatever the history's length, every stale
// write still counted in the titles of its bins' points, the first story
// of a bin linked.
func TestTokensChartBinned(t *testing.T) {
	in := TokensInput{ID: "tk", To: 3e12}
	stale := 0
	for i := range int64(30 * maxTokenWrites) {
		g := TokenGrant{Who: "w1", Token: i + 1, From: i * 3e7, To: i*3e7 + 2e7, StaleFrom: -1}
		w := TokenWrite{Who: "w1", Token: i + 1, HasToken: true, At: i*3e7 + 1e7}
		if i%20 == 10 {
			g.StaleFrom, g.StaleFromTokens = i*3e7+1e7, i+2
			w.Stale, w.Token, w.Href = true, i, "#lost-"+strconv.Itoa(stale+1)
			stale++
		}
		in.Grants = append(in.Grants, g)
		in.Writes = append(in.Writes, w)
	}
	if stale <= maxTokenMarks {
		t.Fatalf("%d stale writes: the chart would not be binned", stale)
	}
	f := DrawTokens(in)
	w := figW - labelW - rightPad
	bins := int(w / tokenBinW)
	if len(f.Rects) > 2*bins || len(f.Marks) > 6*bins {
		t.Errorf("%d bars and %d points for %d bins", len(f.Rects), len(f.Marks), bins)
	}
	counted, linked := 0, 0
	for _, m := range f.Marks {
		if m.Class != "tw w-stale agg" {
			continue
		}
		n, err := strconv.Atoi(strings.Fields(strings.SplitN(m.Title, ": ", 2)[1])[0])
		if err != nil {
			t.Fatalf("title %q: %v", m.Title, err)
		}
		counted += n
		if strings.HasPrefix(m.Href, "#lost-") {
			linked++
		}
	}
	if counted != stale {
		t.Errorf("the binned points count %d stale writes, the history has %d", counted, stale)
	}
	if linked == 0 || linked != countClass(f, "tw w-stale agg") {
		t.Errorf("%d of %d stale points link a story", linked, countClass(f, "tw w-stale agg"))
	}
	if countClass(f, "tw w-ok agg") == 0 || countClass(f, "grant stale") == 0 {
		t.Error("no accepted writes or no stale grants drawn")
	}
	if len(f.Texts) == 0 || !strings.Contains(f.Texts[len(f.Texts)-1].Text, "bins of") {
		t.Error("the binned chart does not say so")
	}
}

// countClass counts the points and bars of f whose class is class.
func countClass(f Figure, class string) int {
	n := 0
	for _, m := range f.Marks {
		if m.Class == class {
			n++
		}
	}
	for _, r := range f.Rects {
		if r.Class == class {
			n++
		}
	}
	return n
}

// A fenced read raises the fence as an accepted write does: the step line
// rises at the read, to the reader's token, before the reader's write is
// acknowledged; a refusal between the two is titled with the fence it met
// and what raised it; each rise a read made is marked.
func TestTokensChartReadRaisesFence(t *testing.T) {
	in := TokensInput{ID: "tk", From: 0, To: 10e9,
		Grants: []TokenGrant{
			{Who: "w1", Token: 31, From: 1e9, To: 9e9, StaleFrom: 5e9, StaleFromTokens: 66},
			{Who: "w3", Token: 66, From: 5e9, To: 9.9e9, StaleFrom: -1},
		},
		Reads: []TokenRead{{Who: "w1", Token: 31, At: 1.1e9}, {Who: "w3", Token: 66, At: 9.571e9}},
		Writes: []TokenWrite{
			{Who: "w1", Token: 31, HasToken: true, At: 2e9, Outcome: WriteAccepted},
			{Who: "w1", Token: 31, HasToken: true, At: 9.58e9, Outcome: WriteRefused, Stale: true},
			{Who: "w3", Token: 66, HasToken: true, At: 9.84e9, Outcome: WriteAccepted},
		}}
	steps := highestAccepted(in.Writes, in.Reads)
	if len(steps) != 2 || steps[1] != (fenceStep{At: 9.571e9, Token: 66, Who: "w3", Read: true}) {
		t.Fatalf("steps %+v, want a rise to 66 at w3's read (9.571s)", steps)
	}
	if st, _ := fenceAt(steps, 9.58e9); st.Token != 66 {
		t.Errorf("the fence at the refusal is %d, want 66", st.Token)
	}
	f := DrawTokens(in)
	var refused, raises []mark
	for _, m := range f.Marks {
		switch {
		case strings.Contains(m.Class, "w-fenced"):
			refused = append(refused, m)
		case m.Class == "raise":
			raises = append(raises, m)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Title, "(31 < 66, the fence raised by w3's fenced read at 9.57s)") {
		t.Errorf("refusals %+v", refused)
	}
	if len(raises) != 2 {
		t.Errorf("%d rises marked as reads', want 2", len(raises))
	}
}

// Tokens whose values leap (ZooKeeper's zxids: epoch<<32 | counter) are
// drawn by rank, each distinct token at its own height, the axis saying
// so; tokens that count up (etcd's revisions) stay to scale.
func TestTokenAxisByRank(t *testing.T) {
	zk := []int64{4294967299, 4294967302, 4294967305, 8589934662, 8589934665, 12884901890}
	ax := newTokenAxis(zk, chartTop, tokensChartH-chartBot)
	if !ax.ranked {
		t.Fatal("ZooKeeper's tokens are drawn to scale")
	}
	for i := 1; i < len(zk); i++ {
		if gap := ax.y(zk[i-1]) - ax.y(zk[i]); gap < minTokenGap {
			t.Errorf("tokens %d and %d are %v apart", zk[i-1], zk[i], gap)
		}
	}
	var f Figure
	ax.ticks(&f, scale{t0: 0, t1: 1, x0: labelW, x1: figW - rightPad})
	if !slices.ContainsFunc(f.Texts, func(tx text) bool { return strings.Contains(tx.Text, "by rank") }) {
		t.Error("the axis by rank does not say so")
	}
	etcd := []int64{3, 4, 6, 7, 9, 12, 40, 44, 66, 106}
	if ax := newTokenAxis(etcd, chartTop, tokensChartH-chartBot); ax.ranked {
		t.Error("etcd's tokens are drawn by rank")
	}
}
