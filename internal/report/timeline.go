package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
)

// Timeline geometry, in SVG user units (the figure scales to the page).
const (
	figW       px = 1100
	labelW     px = 92 // the lane labels' column
	rightPad   px = 14 //
	axisH      px = 30 // the fault labels and the time axis above the lanes
	clientH    px = 30 // a client lane
	serverH    px = 28 // a server lane: its faults' row over its leader's
	stripH     px = 5  // the fault strip at the top of a client lane
	beliefH    px = 12 // a lock-belief bar
	bottomPad  px = 22 // room for tick labels below
	overviewNs    = 500
)

// DetailMax is the largest number of operations a timeline draws one by
// one; past it the lanes are aggregated into overviewNs time bins.
const DetailMax = 1500

// laneSpec is one lane of a timeline.
type laneSpec struct {
	Name   string
	Kind   string // client, server, node
	Worker int    // client lanes: the worker index
	y, h   px
}

// faultRow is the top and height of a server or node lane's upper row,
// where its faults are bars and their events marks with words.
func (l laneSpec) faultRow() (px, px) { return l.y + 3, 12 }

// recordRow is the top and height of a lane's row for the run's records'
// bars: a server or node lane's lower row (its leader), clear of the
// lane's bottom edge so that it reads as the lane's and not the next
// one's; a client lane's bottom strip.
func (l laneSpec) recordRow() (px, px) {
	if l.Kind == "client" {
		return l.y + l.h - 3, 3
	}
	return l.y + l.h - 9, 5
}

// recordSymbolY is where a record's symbol sits on the lane: a client
// lane's middle, a server or node lane's lower row.
func (l laneSpec) recordSymbolY() px {
	if l.Kind == "client" {
		return l.y + l.h/2
	}
	top, _ := l.recordRow()
	return top + 1
}

// wordY is the baseline of the words written on a lane (laneLabeler): a
// client lane's bottom, a server or node lane's fault row.
func (l laneSpec) wordY() px {
	if l.Kind == "client" {
		return l.y + l.h - 4
	}
	top, h := l.faultRow()
	return top + h - 2
}

// TimelineInput is what a timeline draws: the operations of Model from
// From to To (ns), a lane per worker (Workers) and per server.
type TimelineInput struct {
	ID      string
	Model   *OpModel
	Workers int
	Servers []string
	From    int64
	To      int64
	// Marks are what the view's account of the history says of its
	// operations; involved, when set, dims every other operation, and
	// actors names operations on their lock-belief bars.
	Marks    Marks
	Involved map[*Op]bool
	Actors   map[*Op]string
	// Tell says the faults' records in words (Input.Tell); nil: as
	// recorded.
	Tell FaultTeller
	// Records are what the run recorded beside its history (its
	// results' records, RecordsOf): their marks are drawn on the lanes.
	Records record.Set
}

// Marks are what a view found in a history, drawn on its timeline: the
// stale writes, the operations whose acknowledged element was lost, and
// which write erased which. Anchors ("#lost-1") link a mark to where the
// page tells it.
type Marks struct {
	// Stale maps a stale holder's operation to its anchor: its write is
	// drawn as a stale write (accepted) or a fenced one (refused).
	Stale map[*Op]string
	// Lost maps an operation whose acknowledged element was lost to its
	// anchor.
	Lost map[*Op]string
	// Erasures are the writes that erased others' elements, each drawn
	// to the writes of the elements it erased.
	Erasures []Erasure
}

// Erasure is a write (By) that erased the elements of Victims.
type Erasure struct {
	By      *Op
	Victims []*Op
}

// lanes lays the lanes out: one per worker, one per server, one per other
// node a fault names.
func (in *TimelineInput) lanes() []laneSpec {
	var ls []laneSpec
	workers := in.Workers
	side := false
	if workers <= 0 {
		for _, o := range in.Model.Ops {
			if !o.Proc.IsSideWriter() {
				workers = max(workers, int(o.Proc)+1)
			}
		}
	}
	for _, o := range in.Model.Ops {
		side = side || o.Proc.IsSideWriter()
	}
	known := map[string]bool{}
	for w := range workers {
		name := fmt.Sprintf("w%d", w+1)
		known[name] = true
		ls = append(ls, laneSpec{Name: name, Kind: "client", Worker: w})
	}
	if side {
		ls = append(ls, laneSpec{Name: "side writer", Kind: "client", Worker: workers})
	}
	for _, s := range in.Servers {
		known[s] = true
		ls = append(ls, laneSpec{Name: s, Kind: "server"})
	}
	others := 0
	for _, f := range in.Model.Faults {
		for _, n := range f.Nodes {
			if !known[n] && others < MaxItems { // a bounded number of lanes, whatever the faults name
				known[n] = true
				others++
				ls = append(ls, laneSpec{Name: n, Kind: "node"})
			}
		}
	}
	y := axisH
	for i := range ls {
		ls[i].y = y
		if ls[i].Kind == "client" {
			ls[i].h = clientH
		} else {
			ls[i].h = serverH
		}
		y += ls[i].h
	}
	return ls
}

// DrawTimeline draws the lanes of a history's operations over [From, To]:
// one by one when at most DetailMax operations fall in the window, else
// aggregated.
func DrawTimeline(in TimelineInput) Figure {
	ls := in.lanes()
	h := axisH + bottomPad
	for _, l := range ls {
		h += l.h
	}
	f := Figure{ID: in.ID, Class: "timeline", W: figW, H: h,
		Label: "Timeline: one lane per client with its lock-belief intervals and writes, one per server, fault windows shaded"}
	s := scale{t0: in.From, t1: max(in.To, in.From+1), x0: labelW, x1: figW - rightPad}
	lanesBottom := h - bottomPad

	var inWindow []*Op
	for _, o := range in.Model.Ops {
		end := o.End
		if o.Late != nil {
			end = max(end, o.LateAt)
		}
		if end < 0 {
			end = in.Model.Last
		}
		if end >= in.From && o.Invoke <= in.To {
			inWindow = append(inWindow, o)
		}
	}
	detail := len(inWindow) <= DetailMax

	// Lane backgrounds and labels.
	for i, l := range ls {
		cls := "lane " + l.Kind
		if i%2 == 1 {
			cls += " odd"
		}
		f.Bands = append(f.Bands, shape{X: 0, Y: l.y, W: figW, H: l.h, Class: cls})
		f.Texts = append(f.Texts, text{X: 6, Y: l.y + l.h/2 + 4, Text: l.Name + laneRole(l), Class: "lane-label"})
	}
	timeTicks(&f, s, lanesBottom+16, axisH-4, lanesBottom)

	faultBands(&f, in, s, ls, lanesBottom, detail)
	// The faults' words first: a leader's word gives way to them.
	label := newLaneLabeler(&f, ls)
	if detail {
		serverEvents(&f, in, s, ls, label)
	}
	recordMarks(&f, in, s, ls, label)
	if detail {
		drawOps(&f, in, s, ls, inWindow)
	} else {
		aggregateOps(&f, in, s, ls, inWindow)
	}
	return f
}

func laneRole(l laneSpec) string {
	switch l.Kind {
	case "client":
		return " client"
	case "server":
		return " server"
	}
	return ""
}

// faultIn returns when the fault's window ends (the history's end, for
// one not healed) and whether the window meets [From, To].
func (in *TimelineInput) faultIn(ft history.Fault) (int64, bool) {
	stop := ft.Stop
	if stop < 0 {
		stop = in.Model.Last
	}
	return stop, stop >= in.From && ft.Start <= in.To
}

// laneIndex maps a worker or node name to its lane.
func laneIndex(ls []laneSpec) map[string]int {
	idx := make(map[string]int, len(ls))
	for i, l := range ls {
		idx[l.Name] = i
	}
	return idx
}

// faultWin is a fault window as a figure shades it: from a to b, its
// title and label, its nodes (more: some left out of a merged window's),
// its kind (faultKind; "" for a merged window of several kinds).
type faultWin struct {
	a, b  int64
	title string
	label string
	nodes []string
	more  bool
	kind  string
}

// faultKind is the kind of a fault, by its name, that colours its window
// (one class of the figures' style each): "pause" (a holder or a server
// stopped), "kill" (a process or a server killed, a power loss), "cut" (a
// partition), "clock" (a clock set wrong), "slow" (a throttle, a slow
// disk, a network fault), "other".
func faultKind(fault string) string {
	name, _, _ := strings.Cut(fault, ":")
	switch {
	case strings.HasPrefix(name, "pause"):
		return "pause"
	case strings.HasPrefix(name, "kill"):
		return "kill"
	case strings.HasPrefix(name, "partition"):
		return "cut"
	case strings.HasPrefix(name, "clock"):
		return "clock"
	case name == "cpu-throttle" || name == "disk-slow" || name == "netem":
		return "slow"
	}
	return "other"
}

// bandClass is the class of a fault window's band (and, with "fault",
// its bars) of kind.
func bandClass(base, kind string) string {
	if kind == "" {
		return base
	}
	return base + " " + kind
}

// mergeWins merges the windows (in any order) closer than bin to each
// other, so that a long run's thousands of faults stay a bounded number of
// shapes; a merged window is titled with how many faults it holds, and
// unlabelled.
func mergeWins(wins []faultWin, bin int64) []faultWin {
	slices.SortFunc(wins, func(x, y faultWin) int { return cmp.Compare(x.a, y.a) })
	var merged []faultWin
	var count []int
	for _, w := range wins {
		if n := len(merged); n > 0 && w.a-merged[n-1].b <= bin {
			last := &merged[n-1]
			last.b = max(last.b, w.b)
			if last.kind != w.kind {
				last.kind = ""
			}
			count[n-1]++
			for _, nd := range w.nodes {
				if len(last.nodes) == MaxItems { // bounded, whatever the faults name
					last.more = true
					break
				}
				if !slices.Contains(last.nodes, nd) {
					last.nodes = append(last.nodes, nd)
				}
			}
			continue
		}
		w.nodes = slices.Clone(w.nodes)
		merged = append(merged, w)
		count = append(count, 1)
	}
	for i := range merged {
		if count[i] > 1 {
			nodes := strings.Join(merged[i].nodes, ", ")
			if merged[i].more {
				nodes += " and more"
			}
			merged[i].title = fmt.Sprintf("%d faults from %s to %s on %s", count[i], Secs(merged[i].a), Secs(merged[i].b), nodes)
			merged[i].label = ""
		}
	}
	return merged
}

// faultBands shades every fault window across all lanes (labelled above
// the lanes) and draws it on the lanes of its nodes. Aggregated, windows
// closer than a bin merge.
func faultBands(f *Figure, in TimelineInput, s scale, ls []laneSpec, bottom px, detail bool) {
	idx := laneIndex(ls)
	var wins []faultWin
	for _, ft := range in.Model.Faults {
		stop, ok := in.faultIn(ft)
		if !ok {
			continue
		}
		title := fmt.Sprintf("%s on %s: %s to %s", ft.Fault, strings.Join(ft.Nodes, ", "), Secs(ft.Start), Secs(stop))
		if p := FaultWords(in.Tell, ft.FaultValue, in.Workers); p != "" {
			title += " (" + p + ")"
		}
		if ft.Error != "" {
			title += "; recovery failed: " + ft.Error
		}
		label := ft.Fault + " " + strings.Join(ft.Nodes, ",")
		wins = append(wins, faultWin{a: ft.Start, b: stop, title: title, label: label, nodes: ft.Nodes, kind: faultKind(ft.Fault)})
	}
	if !detail {
		wins = mergeWins(wins, (s.t1-s.t0)/overviewNs)
	}
	lastLabelEnd := px(-1)
	for _, w := range wins {
		x := s.x(w.a)
		wd := s.width(w.a, w.b, 1.5)
		f.Bands = append(f.Bands, shape{X: x, Y: axisH - 4, W: wd, H: bottom - axisH + 4, Class: bandClass("band", w.kind), Title: w.title})
		if w.label != "" && detail {
			// After the window's start, or, where it would run off the
			// figure, ending at its right edge; left out where it would
			// overlap the label before it.
			lw := px(7 * float64(len(w.label)))
			t := text{X: x + 2, Y: 11, Text: w.label, Class: bandClass("band-label", w.kind)}
			start := x
			if x+2+lw > figW-2 {
				t.X, t.Anchor, start = figW-2, "end", figW-2-lw
			}
			if start > lastLabelEnd {
				f.Texts = append(f.Texts, t)
				lastLabelEnd = start + lw + 8
			}
		}
		for _, n := range w.nodes {
			i, ok := idx[n]
			if !ok {
				continue
			}
			l := ls[i]
			cls := bandClass("fault", w.kind)
			if l.Kind == "client" {
				f.Rects = append(f.Rects, shape{X: x, Y: l.y + 1, W: wd, H: stripH, Class: cls, Title: w.title})
			} else {
				y, h := l.faultRow()
				f.Rects = append(f.Rects, shape{X: x, Y: y, W: wd, H: h, Class: cls, Title: w.title})
			}
		}
	}
}

// drawOps draws each operation: its span (invoke to completion), its
// lock-belief interval (stale part marked), its write, and the stories'
// marks.
func drawOps(f *Figure, in TimelineInput, s scale, ls []laneSpec, ops []*Op) {
	sm := in.Marks
	lane := func(p history.Process) laneSpec {
		w := laneOf(p, in.Workers)
		if w < len(ls) && ls[w].Kind == "client" {
			return ls[w]
		}
		return ls[0]
	}
	writeXY := map[*Op][2]px{}
	for _, o := range ops {
		l := lane(o.Proc)
		mid := l.y + stripH + (l.h-stripH)/2
		dim := ""
		if in.Involved != nil && !in.Involved[o] {
			dim = " dim"
		}
		end := o.End
		if end < 0 {
			end = in.Model.Last
		}
		who := opWho(o, in.Workers)
		// The span: waiting, working, releasing.
		spanTitle := fmt.Sprintf("%s: %s, %s at %s (invoked %s)", who, o.Label, o.Type, Secs(o.End), Secs(o.Invoke))
		if o.Type == history.Fail && o.Comp.Reason != "" {
			spanTitle += ": " + o.Comp.Reason
		}
		f.Lines = append(f.Lines, line{X1: s.x(o.Invoke), Y1: mid, X2: s.x(end), Y2: mid, Class: "span " + string(o.Type) + dim, Title: spanTitle})
		if o.Late != nil {
			f.Lines = append(f.Lines, line{X1: s.x(end), Y1: mid, X2: s.x(o.LateAt), Y2: mid, Class: "span late" + dim,
				Title: fmt.Sprintf("%s: late result %s at %s", who, o.Late.Type, Secs(o.LateAt))})
		}
		// The lock-belief interval.
		if o.Acquired {
			be := o.BeliefEnd(in.Model.Last)
			title := fmt.Sprintf("%s believed it held the lock from %s to %s", who, Secs(o.AcquiredAt), Secs(be))
			cut := be
			if o.StaleFrom >= 0 {
				cut = o.StaleFrom
				if o.StaleBy.Token == 0 {
					title += fmt.Sprintf("; stale from %s, when the lock was granted to %s", Secs(o.StaleFrom), NodeOf(o.StaleBy.Proc, in.Workers))
				} else {
					title += fmt.Sprintf("; stale from %s, when token %d was granted", Secs(o.StaleFrom), o.StaleBy.Token)
				}
			}
			y := mid - beliefH/2
			f.Rects = append(f.Rects, shape{X: s.x(o.AcquiredAt), Y: y, W: s.width(o.AcquiredAt, cut, 1), H: beliefH, Class: "belief" + dim, Title: title})
			if o.StaleFrom >= 0 {
				f.Rects = append(f.Rects, shape{X: s.x(cut), Y: y, W: s.width(cut, be, 1), H: beliefH, Class: "belief stale" + dim, Title: title})
			}
			if dim == "" {
				beliefLabel(f, s.x(o.AcquiredAt), s.x(be), mid, in.Actors[o], o.Token)
			}
		}
		// The write.
		if !o.Writes {
			continue
		}
		wt := o.WriteAt()
		if wt < 0 || (!o.Landed() && o.WriteSentAt < 0) {
			if r, _ := o.Rejected(); !r {
				continue
			}
			wt = o.RejectedAt()
		}
		x := s.x(wt)
		writeXY[o] = [2]px{x, mid}
		m := mark{X: x, Y: mid, R: 3.2}
		switch r, why := o.Rejected(); {
		case sm.Stale[o] != "" && o.Landed():
			m.Shape, m.Class, m.Href = "diamond", "w-stale", sm.Stale[o]
			m.Title = fmt.Sprintf("%s: stale write ACCEPTED at %s: it lost acknowledged updates (see the story)", who, Secs(wt))
		case r:
			m.Shape, m.Class, m.Href = "cross", "w-fenced", sm.Stale[o]
			m.Title = fmt.Sprintf("%s: write REJECTED by the fence at %s: %s", who, Secs(wt), why)
		case o.Landed():
			m.Shape, m.Class = "dot", "w-ok"
			m.Title = fmt.Sprintf("%s: write of element %d accepted at %s", who, o.Element, Secs(wt))
		default:
			m.Shape, m.Class = "q", "w-unknown"
			m.Title = fmt.Sprintf("%s: write sent at %s, outcome unknown (%s)", who, Secs(wt), o.Type)
		}
		m.Class += dim
		f.Marks = append(f.Marks, m)
		if href, ok := sm.Lost[o]; ok {
			f.Marks = append(f.Marks, mark{X: x, Y: mid, R: 7, Shape: "ring", Class: "lost", Href: href,
				Title: fmt.Sprintf("element %d of %s: acknowledged, then LOST", o.Element, who)})
		}
	}
	// Connect each destroying write to the elements it erased: one arc a
	// lane, to the last of them drawn on it, so that a write that erased
	// forty elements draws a few arcs, not a fan of forty over one lane.
	for _, e := range sm.Erasures {
		from, ok := writeXY[e.By]
		if e.By == nil || !ok {
			continue
		}
		type toLane struct {
			last  *Op
			elems []int64
		}
		var lanes []int
		byLane := map[int]*toLane{}
		for _, v := range e.Victims {
			if _, ok := writeXY[v]; !ok || v == e.By {
				continue
			}
			w := laneOf(v.Proc, in.Workers)
			tl := byLane[w]
			if tl == nil {
				tl = &toLane{}
				byLane[w] = tl
				lanes = append(lanes, w)
			}
			if tl.last == nil || writeXY[v][0] >= writeXY[tl.last][0] {
				tl.last = v
			}
			tl.elems = append(tl.elems, v.Element)
		}
		for _, w := range lanes {
			tl := byLane[w]
			to := writeXY[tl.last]
			what := fmt.Sprintf("element %d", tl.elems[0])
			if n := len(tl.elems); n > 1 {
				what = fmt.Sprintf("%d elements (%s)", n, elementList(tl.elems, 8))
			}
			f.Paths = append(f.Paths, svgPath{D: arc(from[0], from[1], to[0], to[1], 18), Class: "erase",
				Title: fmt.Sprintf("%s's write erased %s of %s", NodeOf(e.By.Proc, in.Workers), what, NodeOf(tl.last.Proc, in.Workers))})
		}
	}
}

// elementList lists elements, the first max of them, then how many more.
func elementList(es []int64, max int) string {
	var b strings.Builder
	for i, e := range es {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(es)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, e)
	}
	return b.String()
}

// labelCharW is the width of a character of a lock-belief bar's label
// (bold, 10 units high), generously.
const labelCharW px = 6.6

// beliefLabel writes on a lock-belief bar from x0 to x1 (at height mid)
// its actor's letter (a story's A, B, ...; "" none) and its token (0:
// none): both inside the bar where they fit, else the letter alone; the
// letter is always written, outside the bar, before it, where even it
// does not fit, so that a story's short grant keeps its name. A token
// that does not fit (ZooKeeper's are ten digits) is left to the bar's
// tooltip and the fencing chart.
func beliefLabel(f *Figure, x0, x1, mid px, actor string, token int64) {
	label := actor
	if token != 0 {
		label = strings.TrimSpace(actor + " " + fmt.Sprint(token))
	}
	room := x1 - x0 - 6
	switch {
	case label != "" && px(len(label))*labelCharW <= room:
		f.Texts = append(f.Texts, text{X: x0 + 3, Y: mid + 3.5, Text: label, Class: "belief-label"})
	case actor == "":
	case px(len(actor))*labelCharW <= room:
		f.Texts = append(f.Texts, text{X: x0 + 3, Y: mid + 3.5, Text: actor, Class: "belief-label"})
	default:
		f.Texts = append(f.Texts, text{X: x0 - 2, Y: mid + 3.5, Text: actor, Class: "belief-label out", Anchor: "end"})
	}
}

// opWho names o's client in a tooltip: its worker (w1, as the lanes and
// the stories name clients), and its token when its grant carried one
// (token 0 is none: a lock without tokens).
func opWho(o *Op, workers int) string {
	who := NodeOf(o.Proc, workers)
	if tok, _ := o.TokenOf(); tok != 0 {
		who += fmt.Sprintf(", token %d", tok)
	}
	return who
}

// aggregateOps draws a long history in overviewNs bins per lane: how much
// of each bin a client believed it held the lock (shade), when it did so
// stale (red), and counts of the writes that matter (fenced, stale
// accepted, lost, unknown). The number of shapes is bounded by lanes x bins.
func aggregateOps(f *Figure, in TimelineInput, s scale, ls []laneSpec, ops []*Op) {
	bn := newBins(s, overviewNs)
	aggs := bn.aggregate(in, ls, ops)
	peak := 0
	for _, a := range aggs {
		for b := range a.ok {
			peak = max(peak, a.ok[b]+a.fail[b])
		}
	}
	for i, l := range ls {
		if l.Kind == "client" {
			bn.drawDone(f, l, aggs[i], peak)
			bn.draw(f, l, aggs[i])
		}
	}
	note := fmt.Sprintf("%d operations and %d fault windows, aggregated in %d bins of %s", len(ops), len(in.Model.Faults), bn.n, time.Duration(bn.ns).Round(time.Millisecond))
	if peak > 0 {
		note += fmt.Sprintf(": a bar's height is the operations a client completed in a bin (up to %d), grey ok, light failed", peak)
	}
	f.Texts = append(f.Texts, text{X: figW - rightPad, Y: axisH - 8, Anchor: "end", Class: "note", Text: note})
}

// bins cut a timeline's span into n bins of equal time.
type bins struct {
	s    scale
	n    int
	span int64
	w    px      // a bin's width
	ns   float64 // a bin's time
}

func newBins(s scale, n int) bins {
	span := s.t1 - s.t0
	return bins{s: s, n: n, span: span, w: (s.x1 - s.x0) / px(n), ns: float64(span) / float64(n)}
}

// of is the bin of time t (the first or last for a time outside).
func (bn bins) of(t int64) int {
	return min(max(int((t-bn.s.t0)*int64(bn.n)/max(bn.span, 1)), 0), bn.n-1)
}

// at is the start of bin b (b = n: the end), as prose.
func (bn bins) at(b int) string { return Secs(bn.s.t0 + int64(float64(b)*bn.ns)) }

// x is the left edge of bin b.
func (bn bins) x(b int) px { return bn.s.x0 + px(b)*bn.w }

// addCover adds to c, bin by bin, the time from a to b.
func (bn bins) addCover(c []int64, a, b int64) {
	a, b = max(a, bn.s.t0), min(b, bn.s.t1)
	for t := a; t < b; {
		bi := bn.of(t)
		binEnd := bn.s.t0 + int64(bi+1)*bn.span/int64(bn.n)
		e := min(b, binEnd)
		if e <= t {
			e = b // the last bin
		}
		c[bi] += e - t
		t = e
	}
}

// laneAgg is a client lane's bins: the time its clients believed they held
// the lock, the time they did so stale, the writes that matter, and the
// operations of no critical section (a register's reads and writes) that
// completed in each, ok and failed.
type laneAgg struct {
	cover, stale []int64
	marks        map[[2]int]int // bin, kind -> count
	ok, fail     []int
}

// The kinds of writes that matter, as aggregated.
const (
	kFenced = iota
	kStale
	kLost
	kUnknown
)

// aggregate adds up each client lane's operations in the bins.
func (bn bins) aggregate(in TimelineInput, ls []laneSpec, ops []*Op) []laneAgg {
	sm := in.Marks
	aggs := make([]laneAgg, len(ls))
	for i := range aggs {
		aggs[i] = laneAgg{cover: make([]int64, bn.n), stale: make([]int64, bn.n), marks: map[[2]int]int{}, ok: make([]int, bn.n), fail: make([]int, bn.n)}
	}
	for _, o := range ops {
		w := laneOf(o.Proc, in.Workers)
		if w >= len(ls) || ls[w].Kind != "client" {
			continue
		}
		a := &aggs[w]
		if !o.Writes && o.End >= 0 {
			switch o.Type {
			case history.Ok:
				a.ok[bn.of(o.End)]++
			case history.Fail:
				a.fail[bn.of(o.End)]++
			}
		}
		if o.Acquired {
			be := o.BeliefEnd(in.Model.Last)
			if o.StaleFrom >= 0 {
				bn.addCover(a.cover, o.AcquiredAt, o.StaleFrom)
				bn.addCover(a.stale, o.StaleFrom, be)
			} else {
				bn.addCover(a.cover, o.AcquiredAt, be)
			}
		}
		wt := o.WriteAt()
		switch r, _ := o.Rejected(); {
		case r:
			a.marks[[2]int{bn.of(o.RejectedAt()), kFenced}]++
		case sm.Stale[o] != "":
			a.marks[[2]int{bn.of(wt), kStale}]++
		case o.Type == history.Info && !o.Landed():
			a.marks[[2]int{bn.of(max(o.Invoke, wt)), kUnknown}]++
		}
		if _, ok := sm.Lost[o]; ok {
			a.marks[[2]int{bn.of(o.AckAt()), kLost}]++
		}
	}
	return aggs
}

// draw draws a client lane's bins: the shade, the stale time under it, and
// the writes that matter over it.
func (bn bins) draw(f *Figure, l laneSpec, a laneAgg) {
	mid := l.y + stripH + (l.h-stripH)/2
	// Runs of bins with the same shade are one rectangle.
	level := func(c int64) int { return min(int(float64(c)/bn.ns*4+0.999), 4) }
	for b := 0; b < bn.n; {
		lv := level(a.cover[b])
		e := b + 1
		for e < bn.n && level(a.cover[e]) == lv {
			e++
		}
		if lv > 0 {
			f.Rects = append(f.Rects, shape{X: bn.x(b), Y: mid - beliefH/2, W: px(e-b) * bn.w, H: beliefH,
				Class: fmt.Sprintf("agg l%d", lv), Title: fmt.Sprintf("%s held the lock about %d%% of %s to %s", l.Name, lv*25, bn.at(b), bn.at(e))})
		}
		b = e
	}
	for b := 0; b < bn.n; b++ {
		if a.stale[b] > 0 {
			f.Rects = append(f.Rects, shape{X: bn.x(b), Y: mid + beliefH/2, W: max(bn.w, 1.5), H: 3, Class: "agg-stale",
				Title: fmt.Sprintf("%s: a stale holder believed it held the lock (%s)", l.Name, time.Duration(a.stale[b]).Round(time.Millisecond))})
		}
	}
	// The writes that matter, as runs of bins per kind, drawn over the
	// shade: at most one rectangle per bin and kind.
	for _, k := range []int{kUnknown, kFenced, kLost, kStale} {
		for b := 0; b < bn.n; {
			if a.marks[[2]int{b, k}] == 0 {
				b++
				continue
			}
			e, n := b, 0
			for e < bn.n && a.marks[[2]int{e, k}] > 0 {
				n += a.marks[[2]int{e, k}]
				e++
			}
			f.Rects = append(f.Rects, bn.markRun(l, k, b, e, n, mid))
			b = e
		}
	}
}

// doneLevels is how many heights drawDone draws a bin's count at: runs of
// bins at one height are one rectangle, so the shapes stay bounded by
// lanes x bins whatever the counts.
const doneLevels = 8

// drawDone draws a client lane's operations of no critical section as a
// histogram: in each bin a bar as high as the operations the lane
// completed in it (of peak, the most in any bin of any lane: the lane's
// full height), failed ones stacked on the ok ones.
func (bn bins) drawDone(f *Figure, l laneSpec, a laneAgg, peak int) {
	if peak == 0 {
		return
	}
	bot, full := l.y+l.h-2, l.h-stripH-4
	level := func(n int) int { return (n*doneLevels + peak - 1) / peak }
	height := func(lv int) px { return full * px(lv) / doneLevels }
	for b := 0; b < bn.n; {
		okLv, allLv := level(a.ok[b]), level(a.ok[b]+a.fail[b])
		e, ok, fail := b, 0, 0
		for e < bn.n && level(a.ok[e]) == okLv && level(a.ok[e]+a.fail[e]) == allLv {
			ok, fail = ok+a.ok[e], fail+a.fail[e]
			e++
		}
		title := fmt.Sprintf("%s, %s to %s: %d ok and %d failed operations completed", l.Name, bn.at(b), bn.at(e), ok, fail)
		if okLv > 0 {
			f.Rects = append(f.Rects, shape{X: bn.x(b), Y: bot - height(okLv), W: px(e-b) * bn.w, H: height(okLv), Class: "agg-done ok", Title: title})
		}
		if allLv > okLv {
			f.Rects = append(f.Rects, shape{X: bn.x(b), Y: bot - height(allLv), W: px(e-b) * bn.w, H: height(allLv) - height(okLv), Class: "agg-done fail", Title: title})
		}
		b = e
	}
}

// markRun is the rectangle of n writes of kind k in bins b to e.
func (bn bins) markRun(l laneSpec, k, b, e, n int, mid px) shape {
	from, to := bn.at(b), bn.at(e)
	r := shape{X: bn.x(b), W: max(px(e-b)*bn.w, 2), Y: mid - beliefH/2 - 2, H: beliefH + 4}
	switch k {
	case kFenced:
		r.Class, r.Title = "agg-mark w-fenced-bin", fmt.Sprintf("%s: %d writes rejected by the fence, %s to %s", l.Name, n, from, to)
	case kStale:
		r.Class, r.Title = "agg-mark w-stale-bin", fmt.Sprintf("%s: %d stale writes accepted that lost updates, %s to %s", l.Name, n, from, to)
	case kLost:
		r.Class, r.Title = "agg-mark lost-bin", fmt.Sprintf("%s: %d acknowledged elements lost, %s to %s", l.Name, n, from, to)
	default:
		r.Class, r.Title = "agg-mark unknown-bin", fmt.Sprintf("%s: %d operations of unknown outcome, %s to %s", l.Name, n, from, to)
	}
	return r
}

// FaultTeller says a fault's record in words, read through the fault's own
// record type (the harness passes nemesis.Tell, which the report, a lower
// layer, cannot import): client names a process as the page names clients.
// ok is false when it cannot tell the record by type (a run recorded before
// typed records, a fault or figures it does not know).
type FaultTeller func(v history.FaultValue, client func(history.Process) string) (words string, ok bool)

// FaultWords is a fault's record as a page prints it: in words by tell,
// naming processes by their worker (of workers: w1, w2, ...); or, when tell
// is nil or cannot tell it, name=value as recorded (DescribeParams of
// v.Shown()), so that the pages of runs recorded before typed records read
// as they always did.
func FaultWords(tell FaultTeller, v history.FaultValue, workers int) string {
	if w, ok := tell.words(v, workers); ok {
		return w
	}
	return DescribeParams(v.Shown())
}

// words is v's record told by t (nil tells nothing), naming processes by
// their worker, of workers.
func (t FaultTeller) words(v history.FaultValue, workers int) (string, bool) {
	if t == nil {
		return "", false
	}
	return t(v, func(p history.Process) string { return NodeOf(p, workers) })
}

// DescribeParams writes a fault's record as people read it
// (history.FaultValue's Shown) as k=v, sorted, leaving out the process and
// token (which a holder fault's description names apart).
func DescribeParams(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		if k != "process" && k != "token" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+p[k])
	}
	return strings.Join(parts, " ")
}
