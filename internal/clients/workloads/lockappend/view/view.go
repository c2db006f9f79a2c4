// Package view is the lock-append workload's report page: the stories of
// the lost updates and fence rejections, told from the history (story.go,
// on the model of the history in model.go), the timeline with the
// stories' marks, the lost elements, the tokens and the checkers. It lives
// apart from the workload (package lockappend) so that the worker binary,
// which links the workloads, links no report; package views pairs it with
// the workload.
package view

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// How many stories the report tells in full, with their own timeline; the
// others get one line each (up to report.MaxRows).
const (
	maxLostStories   = 12
	maxFencedStories = 6
	// maxLeads is how many stories the header sums up in a line.
	maxLeads = 5
	// storyPad widens a story's timeline beyond its first and last steps.
	storyPadFrac = 0.06
)

// storyView is a story with its own timeline, and a close-up of its end
// when the end is too short to see at the story's scale (a pause of
// seconds, then a few milliseconds in which the lost update happens).
type storyView struct {
	Story
	KindLabel string
	Fig       report.Figure
	Zoom      *report.Figure
	ZoomFrom  string
	ZoomTo    string
	// Tokens is the fencing chart of the story's window (nil when its
	// grants carried no token).
	Tokens *report.Figure
}

// storyLine is a story told in one line.
type storyLine struct {
	ID, At, Title, KindLabel string
	Lost                     string
}

type storiesData struct {
	Fencing    string
	Lost       []storyView
	LostMore   []storyLine
	Fenced     []storyView
	FencedMore []storyLine
	// Quiet explains a run with neither lost updates nor fence
	// rejections.
	Quiet string
	// Truncated counts stories beyond report.MaxRows not listed at all.
	Truncated int
}

type lostRow struct {
	Element, Client, Token, Acked, Erased, Kind, Story string
	// What is the checker's finding in words, as the terminal summary and
	// JUnit tell it (checkers.LostElement's Describe).
	What string
}

// lostTable is the lost elements' table: the first report.MaxRows of
// Total, More not listed.
type lostTable struct {
	Rows        []lostRow
	More, Total int
}

type linInfo struct {
	Present bool
	Name    string
	Size    string
	Large   bool
	Ops     int
	Message string
}

type checkersData struct {
	Rows []checkerRow
	Lin  linInfo
	JSON report.JSONBlock
}

type timelineData struct {
	Fig       report.Figure
	Aggregate bool
	Ops       int
}

// largeLin is the size past which the report warns that Porcupine's
// visualization is slow to open.
const largeLin = 5 << 20

// View is the lock-append report: the stories of the lost updates and
// fence rejections, the timeline, the charts, the lost elements, the
// checkers. Results that are not a lock-append result get report.GenericView.
func View(in *report.Input) (*report.Page, error) {
	res := in.Results
	la, ok := res.Result.(*lockappend.Result)
	if !ok {
		return report.GenericView(in)
	}
	p := report.NewPage(in, "")
	p.Title = fmt.Sprintf("%s · %s %s · fencing %s", strings.ToUpper(p.VerdictText()), in.Test.Target, res.Workload, orDash(in.Test.Fencing))
	t := tell(in, la)
	m, cfg, lostStories, fenced := t.m, t.cfg, t.lost, t.fenced
	if t.storyRes != "" && t.err == nil {
		p.Notes = append(p.Notes, fmt.Sprintf("The run wrote %d resources; the stories and the timeline below are %s's (see Resources for each one's verdict).",
			len(la.Resources), t.storyRes))
	}
	if t.err != nil && in.HistoryErr == "" {
		// The history does not pair: show the results alone.
		in.HistoryErr = t.err.Error()
	}
	if m.skipped > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d operations of the history have values that do not decode; the report leaves them out (see the checkers).", m.skipped))
	}
	workers := cfg.Workers
	last := max(m.Last, 1)

	lu := la.LostUpdates
	pct := 0.0
	if lu.Acknowledged > 0 {
		pct = 100 * float64(lu.Lost) / float64(lu.Acknowledged)
	}
	p.Headline, p.Sub = headline(in, la, lostStories, fenced, pct, m.tokenless())
	addLeads(p, lostStories, fenced)
	addCards(p, res, la, pct)
	if res.Note != "" {
		p.Notes = append(p.Notes, res.Note)
	}
	if la.Error != "" {
		p.Notes = append(p.Notes, "The checkers could not read the history: "+la.Error)
	}

	tl := report.TimelineInput{ID: "tl-main", Model: m.OpModel, Workers: workers, Servers: report.ServerNames(in.Test), From: 0, To: last,
		Marks: marksOf(append(append([]Story(nil), lostStories...), fenced...)), Tell: in.Tell, Records: report.RecordsOf(in)}
	in.Pace()
	main := report.DrawTimeline(tl)
	addFindings(p, in, la)
	stories := storiesSection(in, m, cfg, lostStories, fenced)
	in.Pace()
	tokens := report.TokensSection(report.TokensFromOps("tokens-main", m.OpModel, tl.Marks, workers, cfg.Fencing == "token", 0, last))
	in.Pace()
	charts := report.ChartsSection(laSamples(m, workers), m.Faults, last)
	p.Sections = append(p.Sections,
		tmpl.Section("stories", "What happened", "stories", stories),
		tmpl.Section("timeline", "Timeline", "timeline", timelineData{Fig: main, Aggregate: len(m.Ops) > report.DetailMax, Ops: len(m.Ops)}),
		tokens, charts,
		tmpl.Section("lost", "Lost updates", "lost", lostRows(la.LostUpdates, lostStories, workers)),
		tmpl.Section("tokens", "Fencing tokens", "tokens", tokenRows(m, la.Checkers.TokenMonotonic, workers)),
		tmpl.Section("checkers", "Checkers", "checkers", checkersSection(in, la)),
	)
	return p, nil
}

// addLeads lists the stories at the top of the page, up to maxLeads.
func addLeads(p *report.Page, lostStories, fenced []Story) {
	for _, group := range [][]Story{lostStories, fenced} {
		for _, st := range group {
			if len(p.Leads) == maxLeads {
				p.MoreLead++
				continue
			}
			cls := "bad"
			if st.Kind == KindFenced {
				cls = "good"
			}
			p.Leads = append(p.Leads, report.Lead{Href: "#" + st.ID, At: report.Secs(st.At), Text: st.Brief, Class: cls})
		}
	}
}

// addCards gives the page its cards: lost updates (pct of the
// acknowledged), fence rejections, operations, overlaps, faults, history.
func addCards(p *report.Page, res *store.Results, la *lockappend.Result, pct float64) {
	st, lu := la.Checkers.Stats, la.LostUpdates
	lostCard := report.Card{Label: "lost updates", Value: fmt.Sprintf("%d of %d", lu.Lost, lu.Acknowledged), Note: fmt.Sprintf("%.1f%% of acknowledged", pct)}
	if lu.Lost > 0 {
		lostCard.Class = "bad"
	}
	if la.Checkers.LostUpdates.Valid == checkers.Unknown {
		lostCard.Note = "unknown: " + la.Checkers.LostUpdates.Message
	}
	fenceCard := report.Card{Label: "fence rejections", Value: fmt.Sprint(la.FenceRejections), Note: "stale writes refused"}
	if la.FenceRejections > 0 {
		fenceCard.Class = "good"
	}
	p.Cards = []report.Card{lostCard}
	if la.FirstLostUpdateNS != nil {
		p.Cards = append(p.Cards, report.Card{Label: "first lost at", Value: report.Secs(*la.FirstLostUpdateNS)})
	}
	p.Cards = append(p.Cards,
		fenceCard,
		report.Card{Label: "operations", Value: fmt.Sprintf("%d ok", st.Ok), Note: opsNote(st)},
		report.Card{Label: "overlaps", Value: fmt.Sprint(la.Overlaps), Note: "two believed holders"},
		report.Card{Label: "faults", Value: fmt.Sprint(len(res.Faults))},
		report.Card{Label: "history", Value: fmt.Sprintf("%d events", res.Events), Note: "checked in " + orDash(res.CheckTime)},
	)
	if res.Interrupted {
		p.Cards = append(p.Cards, report.Card{Label: "run", Value: "interrupted", Class: "warn"})
	}
}

// opsNote is the operations card's note: the fails, by reason, and the
// infos.
func opsNote(st checkers.StatsResult) string {
	fails := fmt.Sprintf("%d fail", st.Fail)
	if st.Fail > 0 {
		fails += " (" + checkers.FailReasonsText(st.FailReasons) + ")"
	}
	return fmt.Sprintf("%s, %d info", fails, st.Info)
}

// addFindings adds the sections of a run with several resources or
// locks, partial updates or an audit log, and says in the headline what
// partial updates, the audit log and a side writer show.
func addFindings(p *report.Page, in *report.Input, la *lockappend.Result) {
	if len(la.Resources) > 1 {
		p.Sections = append(p.Sections, tmpl.Section("resources", "Resources", "resources", resourceRows(in.Test, la)))
	}
	if len(la.Locks) > 1 {
		var rows []resourceRow
		for _, n := range slices.Sorted(maps.Keys(la.Locks)) {
			r := la.Locks[n]
			rows = append(rows, resourceRow{Name: n, Valid: r.Valid.String(),
				Lost: fmt.Sprintf("%d of %d", r.LostUpdates.Lost, r.LostUpdates.Acknowledged), Rejections: r.FenceRejections})
		}
		p.Sections = append(p.Sections, tmpl.Section("locks", "Locks", "locks", rows))
	}
	if pu := la.PartialUpdates; pu != nil {
		var shown partialData
		for _, e := range pu.Elements[:min(len(pu.Elements), report.MaxRows)] {
			shown.Elements = append(shown.Elements, partialRow{Element: e.Element, Client: e.Process.Client(in.Test.Concurrency), Token: e.Token, AcceptedBy: e.AcceptedBy, RefusedBy: e.RefusedBy})
		}
		p.Sections = append(p.Sections, tmpl.Section("partial", "Partial updates", "partial", shown))
		if pu.Count > 0 {
			p.Sub = append(p.Sub, fmt.Sprintf("%s: a stale holder's write refused by one resource and acknowledged by another. Every write path must check the token.", plural(pu.Count, "partial update")))
		}
	}
	if a := la.AuditLog; a != nil {
		shown := auditData{Entries: a.Entries, RefusedButLogged: a.RefusedButLogged}
		for _, e := range a.Elements[:min(len(a.Elements), report.MaxRows)] {
			shown.Elements = append(shown.Elements, partialRow{Element: e.Element, Client: e.Process.Client(in.Test.Concurrency), Token: e.Token, RefusedBy: e.RefusedBy})
		}
		p.Sections = append(p.Sections, tmpl.Section("audit", "Audit log", "audit", shown))
		if a.RefusedButLogged > 0 {
			p.Sub = append(p.Sub, fmt.Sprintf("The audit log records %s that the resource refused: a log that checks no token claims writes that never happened.", plural(a.RefusedButLogged, "write")))
		}
	}
	if st := la.Checkers.Stats; st.SideWrites > 0 {
		p.Sub = append(p.Sub, fmt.Sprintf("A side writer wrote the resource %s without the lock or a token: no fence can stop a write path that does not send the token.", plural(st.SideWrites, "time")))
	}
}

// told is what the report tells of a run's stories: the model of the
// history they are told from, and the stories of its lost updates and
// fence rejections.
type told struct {
	m   *model
	cfg storyConfig
	// storyRes is the resource whose stories they are, when the run wrote
	// several ("" for one); its projection of the history failed if err
	// is set.
	storyRes     string
	lost, fenced []Story
	// err says why the history does not pair (m is then empty).
	err error
}

// tell builds the stories of a lock-append run as the report tells them.
// With several resources, the stories are those of the resource that lost
// the most (the first, if none lost anything), told from its projection
// of the history.
func tell(in *report.Input, la *lockappend.Result) told {
	t := told{cfg: storyConfig{Fencing: in.Test.Fencing, TTL: dstr(in.Test.TTL), Margin: dstr(in.Test.Margin), Workers: in.Test.Concurrency,
		Tell: in.Tell, Started: in.Test.HistoryStarted, Records: report.RecordsOf(in)}}
	lostElems := la.LostUpdates.Elements
	var m *model
	var err error
	if len(la.Resources) > 1 {
		// A resource's projection needs every operation at once.
		events := in.AllEvents()
		m, err = buildFromEvents(events)
		if err == nil {
			t.storyRes, lostElems = storyResource(la)
			t.cfg.Fencing = resourceFencing(in.Test, t.storyRes)
			m, err = buildProjected(events, t.storyRes)
		}
	} else {
		m, err = buildLockAppend(in.EachEvent)
	}
	if err != nil {
		t.m, t.err = &model{OpModel: &report.OpModel{}}, err
	} else {
		t.m = m
	}
	t.lost, t.fenced = stories(t.m, lostElems, t.cfg)
	if la.Error != "" {
		// The checkers rejected the history: tell no story of it either.
		t.lost, t.fenced = nil, nil
	}
	return t
}

// Lead is the first story the report of a lock-append run tells, in the
// one line its header gives it (Story.Brief): its first lost update's,
// else its first fence rejection's. An invalid run whose report tells
// neither (a token granted twice after a restart, with no update lost)
// is led by its first failing checker and that checker's message
// ("token-monotonic: ..."), so that a failing cell never reads as if
// nothing happened. "" when there is none of these or the results are
// not a lock-append result. It is what a matrix's JUnit file and job
// summary say of a cell, without rendering the page.
func Lead(in *report.Input) string {
	la, ok := in.Results.Result.(*lockappend.Result)
	if !ok {
		return ""
	}
	t := tell(in, la)
	for _, group := range [][]Story{t.lost, t.fenced} {
		if len(group) > 0 {
			return group[0].Brief
		}
	}
	if la.Valid != checkers.Invalid {
		return ""
	}
	k := la.Checkers
	for _, c := range []checkerRow{
		verdictRow(checkers.NameTokenMonotonic, k.TokenMonotonic.Verdict),
		verdictRow(checkers.NameLostUpdates, k.LostUpdates.Verdict),
		verdictRow(checkers.NameLinearizable, k.Linearizable.Verdict),
		verdictRow(checkers.NameStats, k.Stats.Verdict),
	} {
		if c.Valid == checkers.Invalid.String() && c.Message != "" {
			return c.Name + ": " + c.Message
		}
	}
	return ""
}

// storyResource is the resource whose stories the report tells: the one
// that lost the most, else the first; with its lost elements.
func storyResource(la *lockappend.Result) (string, []checkers.LostElement) {
	best := ""
	for _, n := range slices.Sorted(maps.Keys(la.Resources)) {
		if best == "" || la.Resources[n].LostUpdates.Lost > la.Resources[best].LostUpdates.Lost {
			best = n
		}
	}
	return best, la.Resources[best].LostUpdates.Elements
}

// buildFromEvents is buildLockAppend of events held.
func buildFromEvents(events []history.Event) (*model, error) {
	return buildLockAppend(func(fn func(history.Event) error) error {
		for _, e := range events {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// buildProjected is the model of one resource's projection of a history.
func buildProjected(events []history.Event, r string) (*model, error) {
	ops, err := history.Pair(events)
	if err != nil {
		return nil, err
	}
	names, err := lockappend.ResourceNames(ops)
	if err != nil {
		return nil, err
	}
	pops, err := lockappend.Project(ops, r, len(names) > 0 && names[0] == r)
	if err != nil {
		return nil, err
	}
	return buildFromOps(pops, events), nil
}

// resourceFencing is a resource's fencing mode in the run.
func resourceFencing(t store.TestInfo, r string) string {
	for _, x := range t.Resources {
		if x.Name == r {
			return x.Fencing
		}
	}
	return t.Fencing
}

// resourceRow is one resource's line of the Resources section.
type resourceRow struct {
	Name, Fencing, Valid, Lost string
	Rejections                 int
}

func resourceRows(t store.TestInfo, la *lockappend.Result) []resourceRow {
	var rows []resourceRow
	names := slices.Sorted(maps.Keys(la.Resources))
	if len(t.Resources) > 0 {
		names = nil
		for _, r := range t.Resources {
			names = append(names, r.Name)
		}
	}
	for _, n := range names {
		r, ok := la.Resources[n]
		if !ok {
			continue
		}
		rows = append(rows, resourceRow{Name: n, Fencing: orDash(resourceFencing(t, n)), Valid: r.Valid.String(),
			Lost: fmt.Sprintf("%d of %d", r.LostUpdates.Lost, r.LostUpdates.Acknowledged), Rejections: r.FenceRejections})
	}
	return rows
}

// headline is the verdict in a sentence, and what the stories below tell:
// each pattern with the number of stories that tell it, of all of them,
// and what fencing could have done, from what the run recorded (tokenless:
// no grant carried a token).
func headline(in *report.Input, la *lockappend.Result, lost, fenced []Story, pct float64, tokenless bool) (string, []string) {
	lu := la.LostUpdates
	var sub []string
	var h string
	switch la.Valid {
	case checkers.Invalid:
		if lu.Lost > 0 {
			h = fmt.Sprintf("Acknowledged updates were lost: %d of %d (%.1f%%)", lu.Lost, lu.Acknowledged, pct)
			switch {
			case slices.ContainsFunc(lost, func(s Story) bool { return s.Kind == KindSideWriter || s.Kind == KindSideWriterErased }):
				h += ", by a write path that takes no lock and sends no token"
			case len(lost) > 0 && !slices.ContainsFunc(lost, func(s Story) bool { return s.Kind != KindServerLost }):
				h += ", lost by the servers, which came back from a fault without the data they had acknowledged"
			case len(lost) > 0 && !slices.ContainsFunc(lost, func(s Story) bool { return s.Kind == KindUnexplained || s.Kind == KindServerLost }):
				h += ", destroyed by stale lock holders"
			case len(lost) > 0 && !slices.ContainsFunc(lost, func(s Story) bool { return s.Kind == KindUnexplained }):
				h += ", destroyed by stale lock holders and lost by the servers"
			}
			h += "."
		} else {
			h = "The history breaks the lock's guarantees."
		}
	case checkers.Valid:
		switch {
		case la.FenceRejections > 0:
			h = fmt.Sprintf("No acknowledged update was lost: the fence refused %s.", plural(la.FenceRejections, "stale write"))
		case len(in.Results.Faults) == 0:
			h = "No acknowledged update was lost; no fault was injected, so the run tested little."
		default:
			h = "No acknowledged update was lost, and no stale write reached the resource."
		}
	default:
		h = "The run cannot tell whether updates were lost."
	}
	counts := map[StoryKind]int{}
	for _, s := range lost {
		counts[s.Kind]++
	}
	of := func(n int) string { return fmt.Sprintf("%d of %s", n, plural(len(lost), "story")) }
	if n := counts[KindStaleOverwrote]; n > 0 {
		sub = append(sub, fmt.Sprintf("%s: a stale holder went on and wrote the list it had read before its lease passed on, erasing others' acknowledged elements.", of(n)))
	}
	if n := counts[KindStaleOverwritten]; n > 0 {
		sub = append(sub, fmt.Sprintf("%s: a stale holder's write landed inside a newer holder's critical section, and that holder's write then erased the stale holder's own acknowledged element.", of(n)))
	}
	if n := counts[KindServerLost]; n > 0 {
		sub = append(sub, fmt.Sprintf("%s: the servers lost acknowledged elements: the last write before a fault on them held the elements, and the first read after it did not (no client's write erased them).", of(n)))
	}
	if n := counts[KindUnexplained]; n > 0 {
		sub = append(sub, fmt.Sprintf("%s: an element was erased by a write whose outcome the harness never learnt.", of(n)))
	}
	if n := counts[KindSideWriter] + counts[KindSideWriterErased]; n > 0 {
		sub = append(sub, fmt.Sprintf("%s: the side writer, which takes no lock and sends no token, erased an element or had its own erased.", of(n)))
	}
	for _, c := range []checkerRow{
		verdictRow(checkers.NameLinearizable, la.Checkers.Linearizable.Verdict),
		verdictRow(checkers.NameTokenMonotonic, la.Checkers.TokenMonotonic.Verdict),
		verdictRow(checkers.NameStats, la.Checkers.Stats.Verdict),
		verdictRow(checkers.NameLostUpdates, la.Checkers.LostUpdates.Verdict),
	} {
		if c.Valid != "valid" && (c.Name != checkers.NameLostUpdates || lu.Lost == 0) && (c.Name != checkers.NameLinearizable || lu.Lost == 0) {
			sub = append(sub, fmt.Sprintf("%s: %s. %s", c.Name, c.Valid, strings.TrimSpace(c.Message+" "+c.Error)))
		}
	}
	if stale := counts[KindStaleOverwrote] + counts[KindStaleOverwritten]; stale > 0 && in.Test.Fencing == "none" {
		token := 0
		for _, s := range lost {
			if s.TokenStops {
				token++
			}
		}
		if tokenless {
			sub = append(sub, fmt.Sprintf("No grant of this run carried a fencing token (a lock without tokens): a token fence could not have refused any of them (%s); a compare-and-set tied to lock ownership (--fencing cas), where the resource offers it, would have.", plural(stale, "stale write")))
		} else {
			sub = append(sub, fmt.Sprintf("Fencing would have stopped them: a token fence would have refused %d of these %d stale writes (a higher token had already reached the resource), and a compare-and-set tied to lock ownership (--fencing cas) all %d.", token, stale, stale))
		}
	}
	if len(fenced) > 0 {
		why := "a newer token had already reached the resource"
		if in.Test.Fencing == "cas" {
			why = "the holder no longer owned the lock"
		}
		sub = append(sub, fmt.Sprintf("This run used %s fencing: each rejection below was a stale holder's write, refused because %s.", orDash(in.Test.Fencing), why))
	}

	return h, sub
}

func kindLabel(k StoryKind) string {
	switch k {
	case KindStaleOverwrote:
		return "stale write erased others' updates"
	case KindStaleOverwritten:
		return "stale write landed inside another critical section"
	case KindFenced:
		return "fence rejection"
	case KindSideWriter:
		return "erased by the side writer (no lock, no token)"
	case KindSideWriterErased:
		return "the side writer's write, inside a critical section"
	case KindServerLost:
		return "lost by the servers"
	}
	return "erased by a write of unknown outcome"
}

// storiesSection tells the first stories in full, with their own timeline,
// and lists the rest.
func storiesSection(in *report.Input, m *model, cfg storyConfig, lost, fenced []Story) storiesData {
	d := storiesData{Fencing: orDash(cfg.Fencing)}
	view := func(s Story) storyView {
		pad := int64(float64(s.To-s.From) * storyPadFrac)
		pad = max(pad, 200e6)
		actors := map[*report.Op]string{}
		involved := map[*report.Op]bool{}
		for _, a := range s.Actors {
			for _, o := range a.ops {
				actors[o] = a.Name
				involved[o] = true
			}
		}
		tl := report.TimelineInput{ID: "tl-" + s.ID, Model: m.OpModel, Workers: cfg.Workers, Servers: report.ServerNames(in.Test),
			From: max(s.From-pad, 0), To: s.To + pad, Marks: marksOf([]Story{s}), Involved: involved, Actors: actors, Tell: in.Tell, Records: report.RecordsOf(in)}
		v := storyView{Story: s, KindLabel: kindLabel(s.Kind), Fig: report.DrawTimeline(tl)}
		if tk := report.TokensFromOps("tokens-"+s.ID, m.OpModel, tl.Marks, cfg.Workers, cfg.Fencing == "token", tl.From, tl.To); !tk.Tokenless() {
			tk.Small = true
			fig := report.DrawTokens(tk)
			v.Tokens = &fig
		}
		// The end: from the first grant of another actor to the last step.
		focus := int64(-1)
		for _, a := range s.Actors[1:] {
			for _, o := range a.ops {
				if o.Acquired && (focus < 0 || o.AcquiredAt < focus) {
					focus = o.AcquiredAt
				}
			}
		}
		if focus >= 0 && s.To > focus && 4*(s.To-focus) < s.To-s.From {
			zpad := max((s.To-focus)/8, 10e6)
			tl.ID, tl.From, tl.To = "tl-"+s.ID+"-end", max(focus-zpad, 0), s.To+zpad
			z := report.DrawTimeline(tl)
			v.Zoom, v.ZoomFrom, v.ZoomTo = &z, report.Secs(tl.From), report.Secs(tl.To)
		}
		return v
	}
	line := func(s Story) storyLine {
		l := storyLine{ID: s.ID, At: report.Secs(s.At), Title: s.Title, KindLabel: kindLabel(s.Kind)}
		if len(s.Lost) > 0 {
			l.Lost = describeElements(s.Lost, 8)
		}
		return l
	}
	for i, s := range lost {
		switch {
		case i < maxLostStories:
			d.Lost = append(d.Lost, view(s))
		case i < report.MaxRows:
			d.LostMore = append(d.LostMore, line(s))
		default:
			d.Truncated++
		}
	}
	for i, s := range fenced {
		switch {
		case i < maxFencedStories:
			d.Fenced = append(d.Fenced, view(s))
		case i < report.MaxRows:
			d.FencedMore = append(d.FencedMore, line(s))
		default:
			d.Truncated++
		}
	}
	if len(lost) == 0 && len(fenced) == 0 {
		switch {
		case len(m.Faults) == 0:
			d.Quiet = "No fault was injected: no holder was stopped, so no stale write could happen."
		default:
			d.Quiet = "No acknowledged update was lost and the resource refused no write: no fault left a stale holder that wrote after its lease had passed on (it may have given up on its own, or its write failed)."
		}
	}
	return d
}

// laSamples returns the appends for the charts, each named by its client
// (history.Process.Client of workers).
func laSamples(m *model, workers int) []report.Sample {
	out := make([]report.Sample, 0, len(m.Ops))
	for _, o := range m.Ops {
		if o.End < 0 {
			continue
		}
		out = append(out, report.Sample{Invoke: o.Invoke, End: o.End, Type: o.Type, What: fmt.Sprintf("%s append %d", o.Proc.Client(workers), o.Element)})
	}
	return out
}

// lostRows lists the lost elements with who erased them, as the stories
// found.
func lostRows(lu checkers.LostUpdates, ss []Story, workers int) lostTable {
	t := lostTable{Total: len(lu.Elements)}
	story := map[int64]*Story{}
	for i := range ss {
		for _, e := range ss[i].Lost {
			story[e] = &ss[i]
		}
	}
	for i, e := range lu.Elements {
		if i == report.MaxRows {
			t.More = len(lu.Elements) - report.MaxRows
			break
		}
		r := lostRow{Element: fmt.Sprint(e.Element), Client: e.Process.Client(workers), Token: tokenCell(e.Token), Acked: report.Secs(e.Acknowledged), Erased: "unknown",
			What: e.Describe(workers)}
		if s := story[e.Element]; s != nil {
			r.Story, r.Kind = "#"+s.ID, kindLabel(s.Kind)
			if s.cause != "" {
				r.Erased = s.cause
			} else if d := s.eraser(); d != nil {
				tok, _ := d.TokenOf()
				r.Erased = fmt.Sprintf("%s, token %s, at %s", d.Proc.Client(workers), tokenCell(tok), report.Secs(d.WriteAt()))
			}
		} else if w := e.OverwrittenBy; w != nil && w.Known {
			r.Erased = fmt.Sprintf("%s, token %s (per the checker)", w.Process.Client(workers), tokenCell(w.Token))
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// tokenCell is a token for a table: "none" for a grant without one (0).
func tokenCell(t int64) string {
	if t == 0 {
		return "none"
	}
	return fmt.Sprint(t)
}

func checkersSection(in *report.Input, la *lockappend.Result) checkersData {
	c := la.Checkers
	d := checkersData{Rows: []checkerRow{
		verdictRow(checkers.NameLinearizable, c.Linearizable.Verdict),
		verdictRow(checkers.NameLostUpdates, c.LostUpdates.Verdict),
		verdictRow(checkers.NameTokenMonotonic, c.TokenMonotonic.Verdict),
		verdictRow(checkers.NameOverlap, c.Overlap.Verdict),
		verdictRow(checkers.NameStats, c.Stats.Verdict),
	}}
	if n := in.FileSize(store.LinFile); n >= 0 {
		d.Lin = linInfo{Present: true, Name: store.LinFile, Size: report.File{Size: n}.HumanSize(), Large: n > largeLin, Ops: c.Linearizable.Ops, Message: c.Linearizable.Message}
	}
	d.JSON = report.AsJSON(c)
	return d
}

// partialData is the partial-updates section, auditData the audit log's:
// their elements with each client named by its worker
// (history.Process.Client), as results.json has them by process.
type partialData struct{ Elements []partialRow }

type auditData struct {
	Entries, RefusedButLogged int
	Elements                  []partialRow
}

// partialRow is a write some resource refused by fencing: a partial
// update (acknowledged by AcceptedBy) or an audit log's entry.
type partialRow struct {
	Element               int64
	Client                string
	Token                 int64
	AcceptedBy, RefusedBy []string
}

// tokenTable is the token section: the checker's finding and its
// violations, each with the faults in effect around it.
type tokenTable struct {
	Message     string
	Rows        []tokenRow
	More, Total int
}

type tokenRow struct {
	Kind string
	// AClient and BClient name the two grants' clients
	// (history.Process.Client).
	AClient, BClient string
	AToken, BToken   int64
	AGranted, BAsked string
	BGranted, Faults string
}

// tokenRows lists the token violations (a token granted twice, or a later
// grant with a lower token), with when each grant happened and which faults
// were in effect between the first grant and the second; each grant's
// client is named by its worker (of workers).
func tokenRows(m *model, tr checkers.TokensResult, workers int) tokenTable {
	t := tokenTable{Message: strings.TrimSpace(tr.Message + " " + tr.Error)}
	for _, v := range tr.Violations {
		from, to := v.A.Granted, v.B.Granted
		var during []string
		for _, f := range m.Faults {
			stop := f.Stop
			if stop < 0 {
				stop = to
			}
			if f.Start <= to && stop >= from {
				during = append(during, fmt.Sprintf("%s on %s (%s to %s)", f.Fault, strings.Join(f.Nodes, ","), report.Secs(f.Start), report.Secs(stop)))
			}
		}
		faults := "none"
		if len(during) > 0 {
			faults = strings.Join(during, "; ")
		}
		t.Rows = append(t.Rows, tokenRow{Kind: v.Kind,
			AClient: v.A.Process.Client(workers), AToken: v.A.Token, AGranted: report.Secs(v.A.Granted),
			BClient: v.B.Process.Client(workers), BToken: v.B.Token, BAsked: report.Secs(v.B.Invoked), BGranted: report.Secs(v.B.Granted),
			Faults: faults})
	}
	t.More, t.Total = tr.Count-len(t.Rows), tr.Count
	return t
}

// checkerRow is one checker's verdict.
type checkerRow struct {
	Name, Valid, Message, Error string
}

func verdictRow(name string, v checkers.Verdict) checkerRow {
	return checkerRow{Name: name, Valid: v.Valid.String(), Message: v.Message, Error: v.Error}
}

// orDash is s, or "-" for none.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dstr is a duration as test.json wrote it ("2s"), "" for none.
func dstr(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
