package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The fencing chart ("Tokens over time"): the fence as every talk about
// fencing draws it. x is time, on the timeline's scale; y is the token
// (by rank when the tokens' values are too far apart to tell apart on a
// linear axis: tokenAxis). Each grant is a bar at its token, from its
// grant to when its holder stopped believing it held the lock (red once a
// higher token was granted); the highest token the resource had accepted
// is a step line, raised by each accepted write and, under token fencing,
// by each fenced read (a new holder's read raises the fence before it
// writes: a small triangle marks each rise a read made); each write is a
// point at its token: accepted (a dot at its acknowledgement), refused by
// the fence (a cross), lost (a ring around its dot), of unknown outcome (a
// square), and a stale write that the resource accepted (a diamond). A
// write below the step line was a stale holder's: the fence refuses it,
// or, unfenced, it lands.

// TokenGrant is one grant of the lock as the fencing chart draws it: its
// token, held from From to To (when its holder stopped believing it held
// the lock), stale from StaleFrom (-1: never).
type TokenGrant struct {
	Who             string
	Token           int64
	From, To        int64
	StaleFrom       int64
	StaleFromTokens int64 // the higher token granted at StaleFrom
}

// WriteOutcome is what became of a write, as the fencing chart draws it.
type WriteOutcome int

// The outcomes of a write.
const (
	WriteAccepted WriteOutcome = iota // acknowledged by the resource
	WriteRefused                      // refused by the fence
	WriteUnknown                      // sent; its outcome never learnt
)

// TokenWrite is one write: its token (HasToken false for a write with
// none), when the resource accepted or refused it (At: the
// acknowledgement or the refusal; for an unknown outcome, when it was
// sent), its outcome, whether it was a stale holder's write (Stale) and
// whether its acknowledged element was later lost (Lost). Href links it
// to the story that tells it.
type TokenWrite struct {
	Who      string
	What     string
	Token    int64
	HasToken bool
	At       int64
	Outcome  WriteOutcome
	Stale    bool
	Lost     bool
	Href     string
}

// TokenRead is a fenced read the resource accepted: under token fencing
// it raised the resource's fence to its Token (when higher) by At, when
// the read returned to its client (Who, reading for What).
type TokenRead struct {
	Who   string
	What  string
	Token int64
	At    int64
}

// TokensInput is what a fencing chart draws, over [From, To].
type TokensInput struct {
	ID     string
	Grants []TokenGrant
	Writes []TokenWrite
	// Reads are the fenced reads (token fencing only): each raised the
	// fence, as an accepted write does.
	Reads    []TokenRead
	From, To int64
	// Small draws the chart shorter, for a story.
	Small bool
}

// Tokenless reports whether no grant and no write carried a token (a
// token is above 0): then there is nothing to draw.
func (in TokensInput) Tokenless() bool {
	return !slices.ContainsFunc(in.Grants, func(g TokenGrant) bool { return g.Token > 0 }) &&
		!slices.ContainsFunc(in.Writes, func(w TokenWrite) bool { return w.HasToken && w.Token > 0 })
}

// tokensChartH and tokensSmallH are the chart's heights.
const (
	tokensChartH px = 230
	tokensSmallH px = 130
	// maxTokenWrites bounds the writes, and the grants, drawn one by one:
	// past it, only those that matter are (a write other than a plain
	// accepted one, a grant that went stale), so that the page stays
	// bounded whatever the history's length.
	maxTokenWrites = 3000
	// maxTokenMarks bounds those that matter drawn one by one: past it
	// too (a long run with thousands of stale holders), the chart is
	// drawn in bins of tokenBinW units of width (tokensBinned).
	maxTokenMarks = 1000
	tokenBinW     = 4
)

// fenceStep is a rise of the step line: at At the resource's highest
// accepted token became Token, raised by Who's fenced read (Read) or
// accepted write.
type fenceStep struct {
	At, Token int64
	Who       string
	Read      bool
}

// highestAccepted is the step line: the running highest token among the
// accepted writes (by the time the resource acknowledged them) and the
// fenced reads (by the time they returned), from the first one: a
// fenceStep at each rise. At one time, a read counts before a write.
func highestAccepted(ws []TokenWrite, rs []TokenRead) []fenceStep {
	acc := make([]fenceStep, 0, len(ws)+len(rs))
	for _, r := range rs {
		if r.Token > 0 {
			acc = append(acc, fenceStep{At: r.At, Token: r.Token, Who: r.Who, Read: true})
		}
	}
	for _, w := range ws {
		if w.Outcome == WriteAccepted && w.HasToken && w.Token > 0 {
			acc = append(acc, fenceStep{At: w.At, Token: w.Token, Who: w.Who})
		}
	}
	slices.SortStableFunc(acc, func(a, b fenceStep) int { return cmp.Compare(a.At, b.At) })
	var steps []fenceStep
	var top int64
	for _, st := range acc {
		if st.Token > top {
			top = st.Token
			steps = append(steps, st)
		}
	}
	return steps
}

// fenceAt is the step in effect at t (the last at or before it), false
// before the first.
func fenceAt(steps []fenceStep, t int64) (fenceStep, bool) {
	i, _ := slices.BinarySearchFunc(steps, t+1, func(st fenceStep, t int64) int { return cmp.Compare(st.At, t) })
	if i == 0 {
		return fenceStep{}, false
	}
	return steps[i-1], true
}

// raiser says who raised the fence to st, for a title.
func (st fenceStep) raiser() string {
	what := "accepted write"
	if st.Read {
		what = "fenced read"
	}
	return fmt.Sprintf("%s's %s at %s", st.Who, what, Secs(st.At))
}

// DrawTokens draws the fencing chart of in (see the top of this file).
func DrawTokens(in TokensInput) Figure {
	h := tokensChartH
	if in.Small {
		h = tokensSmallH
	}
	f := Figure{ID: in.ID, Class: "chart tokens", W: figW, H: h,
		Label: "Tokens over time: each grant's token, the highest token the resource had accepted, and each write at its token"}
	s := scale{t0: in.From, t1: max(in.To, in.From+1), x0: labelW, x1: figW - rightPad}
	in.From, in.To = s.t0, s.t1
	inWin := in.inWin
	var toks []int64 // every token drawn, as seen
	for _, g := range in.Grants {
		if g.Token > 0 && inWin(g.From, g.To) {
			toks = append(toks, g.Token)
		}
	}
	for _, w := range in.Writes {
		if w.HasToken && w.Token > 0 && inWin(w.At, w.At) {
			toks = append(toks, w.Token)
		}
	}
	steps := highestAccepted(in.Writes, in.Reads)
	for i, st := range steps {
		if st.At <= in.To && (i+1 == len(steps) || steps[i+1].At >= in.From) {
			toks = append(toks, st.Token)
		}
	}
	plotTop, plotBot := chartTop, h-chartBot
	ax := newTokenAxis(toks, plotTop, plotBot)
	y := ax.y
	ax.ticks(&f, s)
	timeTicks(&f, s, h-6, plotTop, plotBot)
	f.Lines = append(f.Lines, line{X1: s.x0, Y1: plotBot, X2: s.x1, Y2: plotBot, Class: "axis"})

	// The grants, and the writes: one by one, only those that matter, or
	// in bins (see maxTokenWrites and maxTokenMarks).
	barH := px(5)
	if in.Small {
		barH = 4
	}
	grants, n, notable := 0, 0, 0
	for _, g := range in.Grants {
		if g.Token > 0 && inWin(g.From, g.To) {
			grants++
			if g.StaleFrom >= 0 {
				notable++
			}
		}
	}
	for _, w := range in.Writes {
		if w.HasToken && w.Token > 0 && inWin(w.At, w.At) {
			n++
			if w.Outcome != WriteAccepted || w.Stale || w.Lost {
				notable++
			}
		}
	}
	few := grants <= maxTokenWrites && n <= maxTokenWrites
	if !few && notable > maxTokenMarks {
		tokensBinned(&f, in, s, y, barH, grants, n)
	} else {
		drawGrants(&f, in, s, y, barH, grants <= maxTokenWrites)
		drawWrites(&f, in, s, y, steps, n <= maxTokenWrites)
		if few {
			drawRaises(&f, in, s, y, steps)
		} else {
			f.Texts = append(f.Texts, text{X: s.x1, Y: chartTop - 3, Anchor: "end", Class: "note",
				Text: fmt.Sprintf("%d grants and %d writes: only the stale grants and the writes that are not plainly accepted are drawn", grants, n)})
		}
	}

	// The highest accepted token, as a step line from the one in effect
	// at From (or the first) to To. Rises within half a unit of the
	// figure of the last one drawn are drawn as one, to the highest, so
	// the line is bounded by the figure's width, whatever the history's
	// length.
	var d strings.Builder
	top, penX := int64(-1), px(-1)
	for _, st := range steps {
		if st.At <= in.From {
			top = st.Token
			continue
		}
		if st.At > in.To {
			break
		}
		// The pen is at penX, owing a rise to top there.
		x := s.x(st.At)
		switch {
		case d.Len() == 0 && top >= 0:
			d.WriteString("M" + s.x(in.From).String() + " " + y(top).String() + " H" + x.String())
			penX = x
		case d.Len() == 0:
			d.WriteString("M" + x.String() + " " + y(st.Token).String())
			penX = x
		case x-penX >= 0.5:
			d.WriteString(" V" + y(top).String() + " H" + x.String())
			penX = x
		}
		top = st.Token
	}
	if d.Len() == 0 && top >= 0 {
		d.WriteString("M" + s.x(in.From).String() + " " + y(top).String())
	} else if d.Len() > 0 {
		d.WriteString(" V" + y(top).String())
	}
	if d.Len() > 0 {
		d.WriteString(" H" + s.x(in.To).String())
		f.Paths = append(f.Paths, svgPath{D: d.String(), Class: "fence-line", Title: fmt.Sprintf("the highest token the resource had accepted, raised by fenced reads and accepted writes (%d at %s)", top, Secs(in.To))})
	}

	return f
}

// tokenAxis maps tokens to y over [top, bot]: linearly, or by rank (the
// k-th lowest distinct token at the k-th of equal steps) where a linear
// axis would draw two distinct tokens less than minTokenGap apart and the
// ranks spread them at least rankGain times as far: ZooKeeper's tokens
// are zxids (epoch<<32 | counter), so a new epoch leaps by 2^32 and
// flattens every grant of a linear axis into one line, while tokens that
// count up (etcd's revisions) stay to scale.
type tokenAxis struct {
	top, bot   px
	ranked     bool
	toks       []int64 // ranked: the distinct tokens, ascending
	ymin, ymax int64   // linear: the range drawn
}

const (
	minTokenGap  px = 3
	rankGain        = 50
	maxRankTicks    = 6
)

// newTokenAxis is the axis of the tokens drawn (any order, repeats
// allowed), over [top, bot].
func newTokenAxis(toks []int64, top, bot px) tokenAxis {
	ax := tokenAxis{top: top, bot: bot}
	ds := slices.Clone(toks)
	slices.Sort(ds)
	ds = slices.Compact(ds)
	if len(ds) == 0 {
		ax.ymin, ax.ymax = 0, 1
		return ax
	}
	lo, hi := ds[0], ds[len(ds)-1]
	// From just below the lowest token to just above the highest, in
	// whole tokens.
	span := max(hi-lo, 1)
	pad := max(span/12, 1)
	ax.ymin, ax.ymax = max(lo-pad, 0), hi+pad
	if len(ds) < 2 {
		return ax
	}
	gap := ds[1] - ds[0]
	for i := 2; i < len(ds); i++ {
		gap = min(gap, ds[i]-ds[i-1])
	}
	linear := px(float64(gap)/float64(ax.ymax-ax.ymin)) * (bot - top)
	ranked := (bot - top) / px(len(ds))
	if linear < minTokenGap && ranked >= rankGain*linear {
		ax.ranked, ax.toks = true, ds
	}
	return ax
}

// y is token v's height: by rank, a token between two drawn ones (a grid
// line's) is placed between theirs.
func (ax tokenAxis) y(v int64) px {
	if !ax.ranked {
		return ax.bot - px(float64(v-ax.ymin)/float64(ax.ymax-ax.ymin))*(ax.bot-ax.top)
	}
	n := len(ax.toks)
	i, found := slices.BinarySearch(ax.toks, v)
	pos := float64(i)
	switch {
	case found:
	case i == 0:
		pos = -0.5
	case i == n:
		pos = float64(n) - 0.5
	default:
		a, b := ax.toks[i-1], ax.toks[i]
		pos = float64(i-1) + float64(v-a)/float64(b-a)
	}
	return ax.bot - px((pos+0.5)/float64(n))*(ax.bot-ax.top)
}

// ticks draws the axis's grid lines and labels, and its name: "token",
// or, by rank, "token, by rank" with the token of every few ranks written
// at its height.
func (ax tokenAxis) ticks(f *Figure, s scale) {
	label := func(v int64) {
		f.Lines = append(f.Lines, line{X1: s.x0, Y1: ax.y(v), X2: s.x1, Y2: ax.y(v), Class: "grid"})
		f.Texts = append(f.Texts, text{X: s.x0 - 6, Y: ax.y(v) + 4, Text: fmt.Sprint(v), Class: "tick", Anchor: "end"})
	}
	if ax.ranked {
		every := (len(ax.toks) + maxRankTicks - 1) / maxRankTicks
		for i := 0; i < len(ax.toks); i += every {
			label(ax.toks[i])
		}
		// Above the plot: the ticks' long tokens fill the label column.
		f.Texts = append(f.Texts, text{X: 6, Y: ax.top - 3, Text: "token, by rank (not to scale)", Class: "lane-label"})
		return
	}
	step := max(int64(niceStep(float64(ax.ymax-ax.ymin), 4)), 1)
	for v := (ax.ymin + step - 1) / step * step; v <= ax.ymax; v += step {
		label(v)
	}
	f.Texts = append(f.Texts, text{X: 6, Y: ax.top + 8, Text: "token", Class: "lane-label"})
}

// inWin reports whether [a, b] meets the chart's window.
func (in TokensInput) inWin(a, b int64) bool { return b >= in.From && a <= in.To }

// drawGrants draws each grant in the window as a bar at its token (its
// stale part apart); all false: only the grants that went stale.
func drawGrants(f *Figure, in TokensInput, s scale, y func(int64) px, barH px, all bool) {
	for _, g := range in.Grants {
		if g.Token <= 0 || !in.inWin(g.From, g.To) || (!all && g.StaleFrom < 0) {
			continue
		}
		cut := g.To
		title := fmt.Sprintf("%s held token %d from %s to %s", g.Who, g.Token, Secs(g.From), Secs(g.To))
		if g.StaleFrom >= 0 {
			cut = g.StaleFrom
			title += fmt.Sprintf("; stale from %s, when token %d was granted", Secs(g.StaleFrom), g.StaleFromTokens)
		}
		f.Rects = append(f.Rects, shape{X: s.x(g.From), Y: y(g.Token) - barH/2, W: s.width(g.From, cut, 1), H: barH, Class: "grant", Title: title})
		if g.StaleFrom >= 0 {
			f.Rects = append(f.Rects, shape{X: s.x(cut), Y: y(g.Token) - barH/2, W: s.width(cut, g.To, 1), H: barH, Class: "grant stale", Title: title})
		}
	}
}

// drawWrites draws each write in the window with a token as a point at
// it, by its outcome, a lost one ringed, a refused one's title naming the
// fence it met (of steps) and what raised it; all false: only the writes
// that are not plainly accepted.
func drawWrites(f *Figure, in TokensInput, s scale, y func(int64) px, steps []fenceStep, all bool) {
	for _, w := range in.Writes {
		if !w.HasToken || w.Token <= 0 || !in.inWin(w.At, w.At) {
			continue
		}
		if plain := w.Outcome == WriteAccepted && !w.Stale && !w.Lost; plain && !all {
			continue
		}
		m := mark{X: s.x(w.At), Y: y(w.Token), R: 3.2, Href: w.Href}
		who := fmt.Sprintf("%s's write of %s with token %d", w.Who, w.What, w.Token)
		m.Shape, m.Class = writeShape(w)
		switch m.Class {
		case "tw w-stale":
			m.Title = fmt.Sprintf("%s: a stale holder's write, ACCEPTED at %s", who, Secs(w.At))
		case "tw w-ok":
			m.Title = fmt.Sprintf("%s: accepted at %s", who, Secs(w.At))
		case "tw w-unknown":
			m.Title = fmt.Sprintf("%s: sent at %s, outcome unknown", who, Secs(w.At))
		default:
			m.Title = fmt.Sprintf("%s: REFUSED by the fence at %s", who, Secs(w.At))
			if st, ok := fenceAt(steps, w.At); ok && st.Token > w.Token {
				m.Title += fmt.Sprintf(" (%d < %d, the fence raised by %s)", w.Token, st.Token, st.raiser())
			}
		}
		f.Marks = append(f.Marks, m)
		if w.Lost {
			f.Marks = append(f.Marks, mark{X: m.X, Y: m.Y, R: 7, Shape: "ring", Class: "lost", Href: w.Href,
				Title: fmt.Sprintf("%s: acknowledged, then LOST", who)})
		}
	}
}

// drawRaises marks each rise of the step line in the window that a fenced
// read made (one made by a write has the write's point): a small triangle
// on the line where it rose.
func drawRaises(f *Figure, in TokensInput, s scale, y func(int64) px, steps []fenceStep) {
	n := 0
	for _, st := range steps {
		if st.Read && in.inWin(st.At, st.At) {
			n++
		}
	}
	if n > maxTokenWrites {
		return // the line alone, bounded
	}
	for _, st := range steps {
		if !st.Read || !in.inWin(st.At, st.At) {
			continue
		}
		f.Marks = append(f.Marks, mark{X: s.x(st.At), Y: y(st.Token), R: 3, Shape: "raise", Class: "raise",
			Title: fmt.Sprintf("%s's fenced read raised the fence to token %d at %s", st.Who, st.Token, Secs(st.At))})
	}
}

// writeShape is the shape and the class of a write's point, by its
// outcome.
func writeShape(w TokenWrite) (shape, class string) {
	switch {
	case w.Outcome == WriteAccepted && w.Stale:
		return "diamond", "tw w-stale"
	case w.Outcome == WriteAccepted:
		return "dot", "tw w-ok"
	case w.Outcome == WriteRefused && w.Stale:
		return "cross", "tw w-fenced stale"
	case w.Outcome == WriteRefused:
		return "cross", "tw w-fenced"
	}
	return "q", "tw w-unknown"
}

// tokenBin is what one bin of a binned fencing chart holds of one kind
// (grants, their stale parts, or the writes of one outcome): how many,
// their lowest and highest tokens, and the first story linked.
type tokenBin struct {
	n      int
	lo, hi int64
	href   string
}

func (b *tokenBin) add(token int64, href string) {
	if b.n == 0 || token < b.lo {
		b.lo = token
	}
	b.hi = max(b.hi, token)
	b.n++
	if b.href == "" {
		b.href = href
	}
}

// tokensBinned draws the grants and the writes of a long history in bins
// of tokenBinW units: in each bin, a bar over the tokens of the grants
// held in it (red over those held stale), and one point per kind of write
// (by outcome, as one by one; lost ones ringed) at the lowest token of
// its kind, its title counting them and giving their tokens, linking the
// first story among them. The shapes are bounded by the bins, whatever
// the history's length.
func tokensBinned(f *Figure, in TokensInput, s scale, y func(int64) px, barH px, grants, writes int) {
	bn := newBins(s, max(int((s.x1-s.x0)/tokenBinW), 1))
	held, stale := make([]tokenBin, bn.n), make([]tokenBin, bn.n)
	classes := []string{"tw w-ok", "tw w-stale", "tw w-fenced", "tw w-fenced stale", "tw w-unknown", "lost"}
	shapes := map[string]string{}
	kinds := make([][]tokenBin, len(classes))
	for k := range kinds {
		kinds[k] = make([]tokenBin, bn.n)
	}
	for _, g := range in.Grants {
		if g.Token <= 0 || !in.inWin(g.From, g.To) {
			continue
		}
		cut := g.To
		if g.StaleFrom >= 0 {
			cut = g.StaleFrom
			for b := bn.of(cut); b <= bn.of(g.To); b++ {
				stale[b].add(g.Token, "")
			}
		}
		for b := bn.of(g.From); b <= bn.of(cut); b++ {
			held[b].add(g.Token, "")
		}
	}
	for _, w := range in.Writes {
		if !w.HasToken || w.Token <= 0 || !in.inWin(w.At, w.At) {
			continue
		}
		shape, class := writeShape(w)
		k := slices.Index(classes, class)
		shapes[class] = shape
		kinds[k][bn.of(w.At)].add(w.Token, w.Href)
		if w.Lost {
			kinds[len(classes)-1][bn.of(w.At)].add(w.Token, w.Href)
		}
	}
	shapes["lost"] = "ring"
	for b := range bn.n {
		x, mid := bn.x(b), bn.x(b)+bn.w/2
		for _, g := range []struct {
			bin   tokenBin
			class string
			what  string
		}{{held[b], "grant", "held"}, {stale[b], "grant stale", "held stale"}} {
			if g.bin.n == 0 {
				continue
			}
			top := y(g.bin.hi) - barH/2
			f.Rects = append(f.Rects, shape{X: x, Y: top, W: max(bn.w-0.5, 1), H: y(g.bin.lo) + barH/2 - top, Class: g.class,
				Title: fmt.Sprintf("%s: tokens %d to %d %s", binSpan(bn, b), g.bin.lo, g.bin.hi, g.what)})
		}
		for k, class := range classes {
			wb := kinds[k][b]
			if wb.n == 0 {
				continue
			}
			m := mark{X: mid, Y: y(wb.lo), R: 3.2, Shape: shapes[class], Class: class + " agg", Href: wb.href,
				Title: fmt.Sprintf("%s: %s, tokens %d to %d", binSpan(bn, b), countOf(wb.n, tokenWriteWords[class]), wb.lo, wb.hi)}
			if class == "lost" {
				m.R = 7
			}
			f.Marks = append(f.Marks, m)
		}
	}
	f.Texts = append(f.Texts, text{X: s.x1, Y: chartTop - 3, Anchor: "end", Class: "note",
		Text: fmt.Sprintf("%d grants and %d writes, drawn in %d bins of %s: a point stands for a bin's writes of its kind, at their lowest token", grants, writes, bn.n, time.Duration(bn.ns).Round(time.Millisecond))})
}

// tokenWriteWords name the writes of each class of a binned chart, one
// and many.
var tokenWriteWords = map[string][2]string{
	"tw w-ok":           {"write accepted", "writes accepted"},
	"tw w-stale":        {"stale holder's write ACCEPTED", "stale holders' writes ACCEPTED"},
	"tw w-fenced":       {"write REFUSED by the fence", "writes REFUSED by the fence"},
	"tw w-fenced stale": {"stale holder's write REFUSED by the fence", "stale holders' writes REFUSED by the fence"},
	"tw w-unknown":      {"write of unknown outcome", "writes of unknown outcome"},
	"lost":              {"write acknowledged, then LOST", "writes acknowledged, then LOST"},
}

// countOf is n with the words for one or many.
func countOf(n int, words [2]string) string {
	if n == 1 {
		return "1 " + words[0]
	}
	return fmt.Sprintf("%d %s", n, words[1])
}

// binSpan is bin b's time span, as prose.
func binSpan(bn bins, b int) string { return bn.at(b) + " to " + bn.at(b+1) }

// tokensData is the fencing section: the chart, or why there is none.
type tokensData struct {
	Fig       Figure
	Tokenless bool
	Grants    int
	Small     bool
	// FencedReads: fenced reads raised the fence (the legend says how).
	FencedReads bool
}

// TokensSection is the section "Tokens over time" of in; a run whose
// grants carried no token says so instead of drawing zeros.
func TokensSection(in TokensInput) Section {
	return section{ID: "fencing-chart", Title: "Tokens over time", tmpl: "tokens-chart", data: TokensFigure(in)}
}

// TokensFigure is the fencing chart of in for a template ("tokens-chart"):
// the figure, or, tokenless, the note that says why there is none.
func TokensFigure(in TokensInput) tokensData {
	d := tokensData{Grants: len(in.Grants), Small: in.Small, FencedReads: len(in.Reads) > 0}
	if in.Tokenless() {
		d.Tokenless = true
		return d
	}
	d.Fig = DrawTokens(in)
	return d
}

// TokensFromOps is the fencing chart's input from a timeline's model and
// the marks a view found in it: each grant, and each write of an
// operation that writes (Op.Writes), that falls in [from, to]; with
// fencedReads (a run under token fencing, whose reads raise the fence),
// each read of a grant's holder that returned in [from, to]; and, for the
// step line's level at from, the accepted write and the fenced read with
// the highest token before from (drawn as no point: they are outside the
// window). Names are the clients' workers. A story's window so costs a
// pass over the model, not a chart of the whole history.
func TokensFromOps(id string, m *OpModel, marks Marks, workers int, fencedReads bool, from, to int64) TokensInput {
	in := TokensInput{ID: id, From: from, To: to}
	to = max(to, from+1) // as DrawTokens's scale
	if from <= 0 {
		// The whole run's chart: at most a grant and a write an
		// operation, allocated once (a million operations' lists grown
		// by doubling would hold twice that).
		in.Grants, in.Writes = make([]TokenGrant, 0, len(m.Ops)), make([]TokenWrite, 0, len(m.Ops)+1)
	}
	var before *Op // the accepted write with the highest token before from
	var beforeTok int64
	var readBefore *Op // the fenced read with the highest token before from
	for _, o := range m.Ops {
		if o.Acquired && o.AcquiredAt <= to && o.BeliefEnd(m.Last) >= from {
			g := TokenGrant{Who: NodeOf(o.Proc, workers), Token: o.Token, From: o.AcquiredAt, To: o.BeliefEnd(m.Last), StaleFrom: -1}
			if o.StaleFrom >= 0 && o.StaleBy != nil {
				g.StaleFrom, g.StaleFromTokens = o.StaleFrom, o.StaleBy.Token
			}
			in.Grants = append(in.Grants, g)
		}
		if fencedReads && o.Acquired && o.HasRead && o.ReadAt >= 0 && o.Token > 0 && o.ReadAt <= to {
			if o.ReadAt >= from {
				in.Reads = append(in.Reads, TokenRead{Who: NodeOf(o.Proc, workers), What: o.Label, Token: o.Token, At: o.ReadAt})
			} else if readBefore == nil || o.Token > readBefore.Token {
				readBefore = o
			}
		}
		if !o.Writes {
			continue
		}
		var outcome WriteOutcome
		var at int64
		switch r, _ := o.Rejected(); {
		case r:
			outcome, at = WriteRefused, o.RejectedAt()
		case o.Landed():
			outcome, at = WriteAccepted, o.AckAt()
		case o.WriteSentAt >= 0:
			outcome, at = WriteUnknown, o.WriteSentAt
		default:
			continue // never sent
		}
		if at < 0 || at > to {
			continue
		}
		tok, has := o.TokenOf()
		if at < from {
			if outcome == WriteAccepted && has && tok > beforeTok {
				before, beforeTok = o, tok
			}
			continue
		}
		w := TokenWrite{Who: NodeOf(o.Proc, workers), What: o.Label, Token: tok, HasToken: has, Href: marks.Stale[o], Outcome: outcome, At: at}
		_, w.Lost = marks.Lost[o]
		if href, ok := marks.Lost[o]; ok && w.Href == "" {
			w.Href = href
		}
		w.Stale = marks.Stale[o] != ""
		in.Writes = append(in.Writes, w)
	}
	if before != nil {
		in.Writes = append(in.Writes, TokenWrite{Who: NodeOf(before.Proc, workers), What: before.Label, Token: beforeTok, HasToken: true, At: before.AckAt(), Outcome: WriteAccepted})
	}
	if readBefore != nil {
		in.Reads = append(in.Reads, TokenRead{Who: NodeOf(readBefore.Proc, workers), What: readBefore.Label, Token: readBefore.Token, At: readBefore.ReadAt})
	}
	return in
}

// tokensSrc is the fencing chart's template ("tokens-chart", with
// tokensData), parsed with every page's.
const tokensSrc = `{{define "tokens-chart"}}{{if .Tokenless}}<p class="tokenless">No grant carried a fencing token{{with .Grants}} ({{.}} grants){{end}}: there is no token to draw, and no token fence could tell a stale holder from the current one.</p>
{{else}}{{if not .Small}}<div class="legend">
<span><svg viewBox="0 0 28 14"><rect x="2" y="5" width="24" height="5" style="fill:var(--belief)"/></svg>a grant's token, held (acquired → releasing)</span>
<span><svg viewBox="0 0 28 14"><rect x="2" y="5" width="24" height="5" style="fill:var(--stale)"/></svg>still held after a higher token was granted (stale)</span>
<span><svg viewBox="0 0 28 14"><path d="M2 11H12V3H26" style="fill:none;stroke:#111;stroke-width:1.6"/></svg>highest token the resource had accepted</span>
{{if .FencedReads}}<span><svg viewBox="0 0 28 14"><use href="#g-raise" x="14" y="8" style="fill:#111"/></svg>the fence raised by a fenced read</span>{{end}}
<span><svg viewBox="0 0 28 14"><circle cx="14" cy="7" r="3.5" style="fill:#fff;stroke:#2e7d32;stroke-width:1.6"/></svg>write accepted</span>
<span><svg viewBox="0 0 28 14"><use href="#g-diamond" x="14" y="7" style="fill:#c62828"/></svg>stale write accepted</span>
<span><svg viewBox="0 0 28 14"><use href="#g-cross" x="14" y="7" style="fill:none;stroke:#111;stroke-width:2.2"/></svg>write refused by the fence</span>
<span><svg viewBox="0 0 28 14"><use href="#g-ring" x="14" y="7" style="fill:none;stroke:#c62828;stroke-width:2"/></svg>acknowledged, then lost</span>
<span><svg viewBox="0 0 28 14"><use href="#g-q" x="14" y="7" style="fill:#fff;stroke:#ef6c00;stroke-width:1.6"/></svg>outcome unknown</span>
</div>
<p class="muted">{{if .FencedReads}}The line rises with each accepted write and with each fenced read: a new holder's read raises the fence before it writes. {{end}}A write below the line carries a lower token than the resource had already accepted: a stale holder's. A token fence refuses it; without one, it lands.</p>
{{end}}{{template "figure" .Fig}}{{end}}{{end}}`

// tokensCSS is the fencing chart's style.
const tokensCSS = `
.fig .grant{fill:var(--belief);fill-opacity:.85}.fig .grant.stale{fill:var(--stale)}
.fig .fence-line{fill:none;stroke:#111;stroke-width:1.6}.fig .raise{fill:#111}
p.tokenless{background:var(--bg);border:1px solid var(--line);padding:6px 10px;border-radius:6px}
`
