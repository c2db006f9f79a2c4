package view

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// StoryKind says which pattern a story tells.
type StoryKind string

// Story kinds. A lost update needs two holders who both believed they held
// the lock, one of them stale (its lease had passed to a newer grant); the
// history tells which of two things happened.
const (
	// KindStaleOverwrote: the stale holder's write replaced a list that
	// held other clients' acknowledged elements, and nothing brought them
	// back (the seed's story: A's stale write erases B's update).
	KindStaleOverwrote StoryKind = "stale-overwrote"
	// KindStaleOverwritten: the stale holder's write landed inside a newer
	// holder's critical section, after that holder had read; the newer
	// holder's write, built on its older read, then erased the stale
	// holder's own acknowledged element.
	KindStaleOverwritten StoryKind = "stale-overwritten"
	// KindFenced: the resource refused a stale holder's write (fenced).
	KindFenced StoryKind = "fenced"
	// KindUnexplained: an acknowledged element is missing and no landed
	// write of the history erased it: a write whose outcome is unknown
	// (info) must have.
	KindUnexplained StoryKind = "unexplained"
	// KindSideWriter: the side writer (--side-writer), which takes no lock
	// and sends no token, erased acknowledged elements: a write path that
	// does not check the fence.
	KindSideWriter StoryKind = "side-writer"
	// KindServerLost: the servers lost acknowledged elements: the last
	// write acknowledged before a fault on the servers (a kill, a restart)
	// held them, and the first read after it did not. No client's write
	// erased them: the server came back without its data (a store without
	// persistence), and its fence and tokens may have started over too.
	KindServerLost StoryKind = "server-lost"
	// KindSideWriterErased: the side writer's own acknowledged write landed
	// inside a holder's critical section (it takes no lock), and the
	// holder's write, built on its older read, erased it.
	KindSideWriterErased StoryKind = "side-writer-erased"
)

// Step is one line of a story: at a time, an actor does something.
type Step struct {
	At  int64
	Who string
	// Text is plain text; the template escapes it.
	Text string
	// Tone is "", "fault", "bad", "good" or "result".
	Tone string
	// Wall is At on the wall clock, as logs/n*.log stamp their lines
	// ("21:04:05.123 UTC"): "" when the run did not record when its
	// history started, or for a step without a time.
	Wall string
}

// Actor is a client that plays a part in a story.
type Actor struct {
	Name    string // A, B, C ...
	Process history.Process
	Node    string
	Token   int64
	// TokenText is "token N", or "no token" for a grant without one.
	TokenText string
	Role      string

	// op is the client's first op in the story, ops all of them.
	op  *report.Op
	ops []*report.Op
}

// Story tells, from the history, how one stale write lost acknowledged
// updates, or how the fence stopped it.
type Story struct {
	ID      string
	Kind    StoryKind
	Title   string
	Summary string
	// Brief is the story in one sentence that names clients, not
	// letters, for the report's header.
	Brief  string
	Actors []Actor
	Steps  []Step
	// Lost are the acknowledged elements this story lost.
	Lost []int64
	// Fencing says why fencing would stop it (unfenced runs), did
	// (fenced runs), or why token fencing alone would not.
	Fencing string
	// TokenStops tells whether a token fence would refuse (or did refuse)
	// the stale write: a higher token had reached the resource before it.
	TokenStops bool
	// From and To bound the story in time.
	From, To int64
	// At is the time of the event its Brief tells (the stale write or
	// read, as its step shows it): the time the report's header gives it.
	At int64
	// Stale is the stale holder's process.
	Stale history.Process

	stale, other *report.Op
	victims      []*report.Op
	// cause is what erased the lost elements when no write did (a
	// server-lost story: "kill on n1 at 29.34s"), for the lost updates'
	// table.
	cause string
}

// eraser is the write that erased the story's lost elements, if the
// history has it: the stale write, or the newer holder's write that erased
// the stale holder's own element.
func (s *Story) eraser() *report.Op {
	switch s.Kind {
	case KindStaleOverwrote, KindUnexplained:
		return s.stale
	case KindStaleOverwritten:
		return s.other
	}
	return nil
}

// marksOf is what the stories say of the operations, for the timeline:
// each stale write and each lost element with its story's anchor, and each
// erasing write with the writes whose elements it erased.
func marksOf(ss []Story) report.Marks {
	mk := report.Marks{Stale: map[*report.Op]string{}, Lost: map[*report.Op]string{}}
	for i := range ss {
		s := &ss[i]
		if s.stale != nil {
			mk.Stale[s.stale] = "#" + s.ID
		}
		if s.Kind != KindFenced {
			for _, v := range s.victims {
				mk.Lost[v] = "#" + s.ID
			}
		}
		if d := s.eraser(); d != nil {
			mk.Erasures = append(mk.Erasures, report.Erasure{By: d, Victims: s.victims})
		}
	}
	return mk
}

// storyConfig is what the stories need from the configuration.
type storyConfig struct {
	Fencing string
	TTL     string
	Margin  string
	Workers int
	// Tell says the faults' records in words (report.Input's Tell); nil:
	// as recorded, name=value.
	Tell report.FaultTeller
	// Started is the wall-clock moment the history's clock reads 0
	// (test.json's history_started); zero: the steps show no wall clock.
	Started time.Time
	// Records are what the run recorded beside its history (results.json's
	// records: report.RecordsOf): each mark a record tells (record.Mark's
	// Tell) inside a story's span is one of its steps.
	Records record.Set
}

// stories builds the stories of a lock-append history: one for each stale
// write that lost acknowledged updates (lost lists them, as the lost-updates
// checker found them), and one for each write the fence refused.
func stories(m *model, lost []checkers.LostElement, cfg storyConfig) (lostStories, fenced []Story) {
	b := &storyBuilder{m: m, cfg: cfg, tokenless: m.tokenless()}
	lostStories = b.lostStories(lost)
	for _, o := range m.Ops {
		if r, _ := o.Rejected(); r {
			fenced = append(fenced, b.fencedStory(o))
		}
	}
	for i := range lostStories {
		lostStories[i].ID = fmt.Sprintf("lost-%d", i+1)
	}
	for i := range fenced {
		fenced[i].ID = fmt.Sprintf("fenced-%d", i+1)
	}
	return lostStories, fenced
}

type storyBuilder struct {
	m   *model
	cfg storyConfig
	// tokenless is m.tokenless(): no grant of the run carried a token.
	tokenless bool
	// around are the server faults with the writes and reads around
	// them, once lostByServers has asked.
	around map[int]aroundFault
}

// lostStories groups the lost elements by the stale write behind them.
func (b *storyBuilder) lostStories(lost []checkers.LostElement) []Story {
	type key struct {
		stale, other *report.Op
		kind         StoryKind
		// fault is the server fault that lost the data (a server-lost
		// story's), +1; 0 for none.
		fault int
	}
	groups := map[key][]*report.Op{}
	var order []key
	add := func(k key, v *report.Op) {
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], v)
	}
	for _, le := range lost {
		l := b.m.byElement[le.Element]
		if l == nil {
			continue
		}
		// The write that erased the element is the one the lost-updates
		// checker named: one analysis for results.json and the stories.
		d := b.overwriterOf(le)
		if w := le.OverwrittenBy; w != nil && w.Type != history.Ok && w.Late != string(history.Ok) {
			// The checker's overwriter never knowably landed: its outcome
			// is unknown.
			add(key{stale: l, other: d, kind: KindUnexplained}, l)
			continue
		}
		if le.SideWriter {
			add(key{stale: l, other: b.overwriterOf(le), kind: KindSideWriterErased}, l)
			continue
		}
		if fi, r := b.lostByServers(l); r != nil {
			add(key{stale: r, kind: KindServerLost, fault: fi + 1}, l)
			continue
		}
		if w := le.OverwrittenBy; w != nil && w.SideWriter {
			if sw := b.overwriterOf(le); sw != nil {
				add(key{stale: sw, kind: KindSideWriter}, l)
				continue
			}
		}
		if d == nil {
			add(key{stale: l, kind: KindUnexplained}, l)
			continue
		}
		older := b.older(d, l)
		switch {
		case d.StaleFrom >= 0 && d.StaleFrom < d.WriteAt() && (older || l.StaleFrom < 0 || l.StaleFrom >= l.WriteAt()):
			add(key{stale: d, kind: KindStaleOverwrote}, l)
		case l.StaleFrom >= 0 && l.StaleFrom < l.WriteAt():
			add(key{stale: l, other: d, kind: KindStaleOverwritten}, l)
		case older:
			add(key{stale: d, kind: KindStaleOverwrote}, l)
		default:
			add(key{stale: l, other: d, kind: KindStaleOverwritten}, l)
		}
	}
	out := make([]Story, 0, len(order))
	for _, k := range order {
		vs := groups[k]
		slices.SortFunc(vs, func(x, y *report.Op) int { return cmp.Compare(x.WriteIdx, y.WriteIdx) })
		switch k.kind {
		case KindStaleOverwrote:
			out = append(out, b.overwroteStory(k.stale, vs))
		case KindStaleOverwritten:
			out = append(out, b.overwrittenStory(k.stale, k.other))
		case KindSideWriter:
			out = append(out, b.sideWriterStory(k.stale, vs))
		case KindSideWriterErased:
			out = append(out, b.sideWriterErasedStory(k.stale, k.other))
		case KindServerLost:
			out = append(out, b.serverLostStory(b.m.Faults[k.fault-1], k.stale, vs))
		default:
			out = append(out, b.unexplainedStory(k.stale, k.other))
		}
	}
	slices.SortStableFunc(out, func(x, y Story) int { return cmp.Compare(x.To, y.To) })
	return out
}

// lostByServers tells whether the servers lost l's acknowledged element:
// the first fault on the servers (one that hit no client's container)
// after l's acknowledgement, where the last write acknowledged before it
// held the element and the first read after it did not. It returns the
// fault's index in the model's faults and that first read's op; nil when
// the history does not show such a loss (a later write explains it, or
// the first read after the fault still had the element).
func (b *storyBuilder) lostByServers(l *report.Op) (int, *report.Op) {
	if !l.Landed() || l.AckAt() < 0 {
		return -1, nil
	}
	if b.around == nil {
		b.around = b.serverFaults()
	}
	for i, f := range b.m.Faults {
		a, ok := b.around[i]
		if !ok || f.Start <= l.AckAt() {
			continue
		}
		if a.last == nil || (a.last != l && !slices.Contains(writtenList(a.last), l.Element)) || a.first == nil {
			return -1, nil
		}
		if rl, _ := readList(a.first); slices.Contains(rl, l.Element) {
			return -1, nil
		}
		return i, a.first
	}
	return -1, nil
}

// aroundFault is the last write acknowledged before a fault began and the
// first read after it began (nil: none).
type aroundFault struct{ last, first *report.Op }

// serverFaults are the faults on the servers (those that hit no client's
// container), by their index in the model's faults, each with the writes
// and reads around it.
func (b *storyBuilder) serverFaults() map[int]aroundFault {
	clients := map[string]bool{}
	for _, o := range b.m.Ops {
		clients[report.NodeOf(o.Proc, b.cfg.Workers)] = true
	}
	out := map[int]aroundFault{}
	for i, f := range b.m.Faults {
		if len(f.Nodes) == 0 || slices.ContainsFunc(f.Nodes, func(n string) bool { return clients[n] }) {
			continue
		}
		var a aroundFault
		for _, w := range b.m.writes {
			if w.AckAt() < f.Start && (a.last == nil || w.AckAt() > a.last.AckAt()) {
				a.last = w
			}
		}
		for _, o := range b.m.Ops {
			if o.HasReadList && o.ReadAt > f.Start && (a.first == nil || o.ReadAt < a.first.ReadAt) {
				a.first = o
			}
		}
		out[i] = a
	}
	return out
}

// writtenList is the list o's write carried: the list it read, with its
// element appended.
func writtenList(o *report.Op) []int64 {
	l, _ := readList(o)
	return append(slices.Clone(l), o.Element)
}

// older tells whether d's grant is the older of d's and l's, the one the
// lock had passed on from: by token where the grants carry tokens; in a
// run whose grants carry none, by the order the run recorded the grants.
func (b *storyBuilder) older(d, l *report.Op) bool {
	if b.tokenless {
		return d.AcquiredAt < l.AcquiredAt
	}
	lt, _ := l.TokenOf()
	dt, _ := d.TokenOf()
	return dt < lt
}

// overwriterOf is the append the lost-updates checker named as the
// overwriter, if the history has it.
func (b *storyBuilder) overwriterOf(le checkers.LostElement) *report.Op {
	if w := le.OverwrittenBy; w != nil && w.Known {
		return b.m.byElement[w.Element]
	}
	return nil
}

// cast names the actors of one story: A first, then B, C ...
type cast struct {
	cfg    storyConfig
	names  map[*report.Op]string
	actors []Actor
	// told are the ops whose grant the story has told.
	told map[*report.Op]bool
}

func newCast(cfg storyConfig) *cast {
	return &cast{cfg: cfg, names: map[*report.Op]string{}, told: map[*report.Op]bool{}}
}

// name returns o's letter, giving it the next one (with role) on first use.
// A letter is a client's, not a grant's: an op of a client (a worker) the
// story has named already takes its letter, and joins its actor's ops.
func (c *cast) name(o *report.Op, role string) string {
	if n, ok := c.names[o]; ok {
		return n
	}
	node := report.NodeOf(o.Proc, c.cfg.Workers)
	tok, _ := o.TokenOf()
	for i := range c.actors {
		a := &c.actors[i]
		if a.Node != node || o.Proc.IsSideWriter() {
			continue
		}
		c.names[o] = a.Name
		a.ops = append(a.ops, o)
		if tok != a.Token {
			a.TokenText += ", then " + tokenWord(tok)
		}
		if a.Role == "" {
			a.Role = role
		} else if role != "" && !strings.Contains(a.Role, role) {
			a.Role += "; then " + role
		}
		return a.Name
	}
	n := string(rune('A' + len(c.actors)))
	if len(c.actors) >= 8 {
		n = node
	}
	c.names[o] = n
	c.actors = append(c.actors, Actor{Name: n, Process: o.Proc, Node: node, Token: tok, TokenText: tokenWord(tok), Role: role, op: o, ops: []*report.Op{o}})
	return n
}

// byNode returns the actor letter running on node, if any.
func (c *cast) byNode(node string) (string, bool) {
	for _, a := range c.actors {
		if a.Node == node {
			return a.Name, true
		}
	}
	return "", false
}

// prelude tells the stale holder's critical section up to its write: its
// grant, read and lease check, the faults that hit it, and the grant that
// superseded it.
func (b *storyBuilder) prelude(c *cast, a *report.Op) []Step {
	A := c.name(a, "the stale holder")
	var steps []Step
	steps = append(steps, b.acquireStep(c, a, "")...)
	if l, ok := readList(a); ok {
		at := a.ReadAt
		if at < 0 {
			at = a.AcquiredAt
		}
		steps = append(steps, Step{At: at, Who: A, Text: "reads the list: " + describeList(l)})
	}
	if a.CheckedAt >= 0 {
		left := time.Duration(a.Checked.RemainingMS) * time.Millisecond
		if a.Checked.OK {
			margin := ""
			if b.cfg.Margin != "" {
				margin = " > " + b.cfg.Margin + " margin"
			}
			steps = append(steps, Step{At: a.CheckedAt, Who: A, Text: fmt.Sprintf("checks its lease: %s left%s: safe to write, it thinks", left, margin)})
		} else {
			steps = append(steps, Step{At: a.CheckedAt, Who: A, Text: fmt.Sprintf("checks its lease: only %s left", left)})
		}
	}
	end := a.WriteAt()
	if end < 0 {
		end = b.m.Last
	}
	steps = append(steps, b.faultSteps(c, a.AcquiredAt, end)...)
	steps = append(steps, b.recordSteps(a.AcquiredAt, end)...)
	if s := a.StaleBy; s != nil {
		C := c.name(s, "got the lock while "+A+" still believed it held it")
		c.told[s] = true
		ttl := ""
		if b.cfg.TTL != "" {
			ttl = " (TTL " + b.cfg.TTL + ")"
		}
		grant := fmt.Sprintf("fencing token %d (> %d)", s.Token, a.Token)
		if s.Token == 0 || a.Token == 0 {
			grant = grantWord(s.Token)
		}
		steps = append(steps, Step{At: s.AcquiredAt, Who: C, Tone: "bad",
			Text: fmt.Sprintf("acquires the lock: %s. %s's lease%s has expired, but %s does not know it: from here on %s is a stale holder",
				grant, A, ttl, A, A)})
	}
	return append(steps, b.estimateStep(c, a)...)
}

// faultSteps tells the faults whose windows meet [from, to].
func (b *storyBuilder) faultSteps(c *cast, from, to int64) []Step {
	var steps []Step
	for _, f := range b.m.Faults {
		stop := f.Stop
		if stop < 0 {
			stop = b.m.Last
		}
		if stop < from || f.Start > to {
			continue
		}
		const who = "nemesis"
		subject := strings.Join(f.Nodes, ", ")
		actor, isActor := "", false
		if len(f.Nodes) == 1 {
			if actor, isActor = c.byNode(f.Nodes[0]); isActor {
				subject = f.Nodes[0] + ", " + actor + "'s container"
			}
		}
		v := f.FaultValue
		if f.Stop >= 0 {
			// How long a healed fault held is its window, as the stop
			// step and the summary say it: the words do not say it a
			// second time (what it was meant to hold, another figure).
			v = report.WithoutHold(v)
		}
		healed := f.Stop >= 0 && f.Stop <= to+int64(time.Second)
		what := f.Fault
		if p := report.FaultWords(b.cfg.Tell, v, b.cfg.Workers); p != "" {
			what += ", " + p
		}
		pause := strings.HasPrefix(f.Fault, "pause")
		ck, clock := clockOf(f)
		var start string
		switch {
		case clock && isActor:
			start = fmt.Sprintf("%s starts on %s (%s): %s is not stopped, but %s: what it times by them, its lease estimate included, is wrong from here on", f.Fault, subject, what, actor, ck.now())
		case pause && isActor:
			start = fmt.Sprintf("SIGSTOP %s (%s): %s freezes inside its critical section, lease keepalives included", subject, what, actor)
		case pause:
			start = fmt.Sprintf("SIGSTOP %s (%s)", subject, what)
		default:
			start = fmt.Sprintf("%s starts on %s (%s)", f.Fault, subject, what)
		}
		steps = append(steps, Step{At: f.Start, Who: who, Text: start, Tone: "fault"})
		if healed {
			held := report.HeldFor(f)
			var stopText string
			switch {
			case clock && isActor && ck.kind == "clock-rate" && ck.rate > 0:
				stopText = fmt.Sprintf("%s on %s ends after %s: %s's clocks run at true speed again; they had counted %s of those %s",
					f.Fault, subject, held, actor, b.clockElapsed(f.Nodes[0], f.Start, f.Stop).Round(10*time.Millisecond), held)
			case clock && isActor:
				stopText = fmt.Sprintf("%s on %s ends after %s: %s's clock is true again", f.Fault, subject, held, actor)
			case pause && isActor:
				stopText = fmt.Sprintf("SIGCONT %s after %s: %s resumes, still believing it holds the lock", subject, held, actor)
			case pause:
				stopText = fmt.Sprintf("SIGCONT %s after %s", subject, held)
			default:
				stopText = fmt.Sprintf("%s on %s ends after %s", f.Fault, subject, held)
			}
			if f.Error != "" {
				stopText += ": recovery failed: " + f.Error
			}
			steps = append(steps, Step{At: f.Stop, Who: who, Text: stopText, Tone: "fault"})
		}
	}
	return steps
}

// recordSteps tells what the run's records tell in (from, to] (a leader
// change: which server became leader, or that none led and why, as the
// servers answered when asked), each in its style row's tone.
func (b *storyBuilder) recordSteps(from, to int64) []Step {
	var steps []Step
	for _, m := range b.cfg.Records.Marks(to) {
		if m.Tell == "" || m.Start <= from || m.Start > to {
			continue
		}
		st, _ := m.Style()
		steps = append(steps, Step{At: m.Start, Who: m.Who, Text: m.Tell, Tone: st.Tone})
	}
	return steps
}

// acquireStep tells o's grant, when it has one.
func (b *storyBuilder) acquireStep(c *cast, o *report.Op, role string) []Step {
	n := c.name(o, role)
	if !o.Acquired || c.told[o] {
		return nil
	}
	c.told[o] = true
	return []Step{{At: o.AcquiredAt, Who: n, Text: "acquires the lock: " + grantWord(o.Token)}}
}

// writeStep tells o's write and how the resource took it.
func (b *storyBuilder) writeStep(c *cast, o *report.Op, tone, extra string) []Step {
	n := c.name(o, "")
	l, _ := readList(o)
	written := append(slices.Clone(l), o.Element)
	tok, _ := o.TokenOf()
	var steps []Step
	if o.Type == history.Info && o.End >= 0 {
		steps = append(steps, Step{At: o.End, Who: "harness", Text: fmt.Sprintf("gives up waiting for %s: the operation is recorded info (outcome unknown)", n)})
	}
	at := stepWriteAt(o)
	var s string
	switch {
	case o.Landed():
		rev := ""
		if r := o.WriteComp().Rev; r > 0 {
			rev = fmt.Sprintf(", revision %d", r)
		}
		how := "ACCEPTED, acknowledged"
		if o.Late != nil {
			how = "ACCEPTED: the late result says ok"
		}
		s = fmt.Sprintf("writes %s%s: %s%s", describeList(written), withToken(tok), how, rev)
	default:
		if r, e := o.Rejected(); r {
			s = fmt.Sprintf("writes %s%s: REJECTED by the fence (%s)", describeList(written), withToken(tok), e)
			if o.Late != nil {
				s += ", says its late result"
			}
		} else {
			s = fmt.Sprintf("writes %s%s: outcome unknown (%s)", describeList(written), withToken(tok), o.Type)
		}
	}
	if extra != "" {
		s += ". " + extra
	}
	return append(steps, Step{At: at, Who: n, Text: s, Tone: tone})
}

// erasedBy returns the acknowledged elements that writes applied after a
// acquired the lock and before write position upto appended and that a's
// read lacks: what a stale write built on that read erases.
func (b *storyBuilder) erasedBy(a *report.Op, upto int) []int64 {
	read, _ := readList(a)
	in := make(map[int64]bool, len(read))
	for _, x := range read {
		in[x] = true
	}
	from := upto
	for from > 0 && b.m.writes[from-1].AckAt() >= a.AcquiredAt {
		from--
	}
	var out []int64
	for _, w := range b.m.writes[from:upto] {
		if w != a && !in[w.Element] && w.Type == history.Ok {
			out = append(out, w.Element)
		}
	}
	return out
}

// writesBefore returns how many writes (in the resource's order) were
// acknowledged before t.
func (b *storyBuilder) writesBefore(t int64) int {
	n, _ := slices.BinarySearchFunc(b.m.writes, t, func(w *report.Op, t int64) int { return cmp.Compare(w.AckAt(), t) })
	return n
}

// whyFencing says whether token and cas fencing stop the stale write of
// a, and whether a token fence refuses it: whether a read or a write with
// a higher token had raised the fence before a's write was sent (token
// fencing fences reads as well as writes: resources.Store's Read).
func (b *storyBuilder) whyFencing(c *cast, a *report.Op) (string, bool) {
	if b.m.tokenless() {
		return b.tokenlessFencing(c, a), false
	}
	r, _ := highestRaised(b.m.raises(true), a.WriteAt())
	hi, by := r.tok, r.op
	A := c.name(a, "")
	tok, _ := a.TokenOf()
	var s strings.Builder
	switch b.cfg.Fencing {
	case "token":
		s.WriteString("This run used token fencing, and the fence let this write through. ")
	case "cas":
		s.WriteString("This run used cas fencing, and the resource still took this write: the compare-and-set did not tie it to the lock. ")
	}
	stops := hi > tok && by != nil
	switch {
	case stops && b.cfg.Fencing != "token":
		what := fmt.Sprintf("%s's write, acknowledged at %s", c.name(by, fmt.Sprintf("whose write raised the highest token to %d", hi)), report.Secs(r.at))
		if r.read {
			what = fmt.Sprintf("%s's read at %s", c.name(by, fmt.Sprintf("whose read would have raised the highest token to %d", hi)), report.Secs(r.at))
		}
		fmt.Fprintf(&s, "Token fencing would have stopped it: the resource keeps the highest token it accepted, raised by every fenced read and write, and when %s's write was sent it would have held token %d (%s); %s's token %d is lower, so the write would have been refused and nothing lost. ",
			A, hi, what, A, tok)
	case !stops:
		fmt.Fprintf(&s, "Token fencing alone would not have stopped this write: when it was sent no read or write with a token above %d had reached the resource yet. ", tok)
	}
	if sb := a.StaleBy; sb != nil && b.cfg.Fencing != "cas" {
		C := c.name(sb, "")
		fmt.Fprintf(&s, "Fencing by compare-and-set (--fencing cas) ties the write to %s's ownership of the lock, which had ended when %s got the lock with token %d at %s: that write would have failed too. ",
			A, C, sb.Token, report.Secs(sb.AcquiredAt))
	}
	s.WriteString("Only the resource can stop a stale holder: " + A + " itself believed it held the lock when it wrote.")
	return s.String(), stops
}

// tokenlessFencing says what fencing could have done in a run whose
// grants carried no token: a token fence has nothing to compare.
func (b *storyBuilder) tokenlessFencing(c *cast, a *report.Op) string {
	A := c.name(a, "")
	s := "No grant of this run carried a fencing token (a lock without tokens): a token fence has nothing to compare, and could not have refused this write. "
	if sb := a.StaleBy; sb != nil && b.cfg.Fencing != "cas" {
		s += fmt.Sprintf("Fencing by compare-and-set (--fencing cas), where the resource offers it, ties the write to %s's ownership of the lock, which had ended when %s got the lock at %s. ",
			A, c.name(sb, ""), report.Secs(sb.AcquiredAt))
	}
	return s + "Only the resource can stop a stale holder: " + A + " itself believed it held the lock when it wrote."
}

// highestRE finds the highest accepted token a resource's refusal states
// ("token 28 < highest accepted 54").
var highestRE = regexp.MustCompile(`highest accepted (?:token )?([0-9]+)`)

// statedHighest is the highest accepted token a refusal states, if it
// states one.
func statedHighest(why string) (int64, bool) {
	m := highestRE.FindStringSubmatch(why)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, err == nil
}

// grantWord is a grant's token in a step: "fencing token N", or "no
// fencing token" for a grant without one (0).
func grantWord(tok int64) string {
	if tok == 0 {
		return "no fencing token"
	}
	return fmt.Sprintf("fencing token %d", tok)
}

// tokenWord is "token N", or "no token".
func tokenWord(tok int64) string {
	if tok == 0 {
		return "no token"
	}
	return fmt.Sprintf("token %d", tok)
}

// withToken is " with token N", or " without a token".
func withToken(tok int64) string {
	if tok == 0 {
		return " without a token"
	}
	return fmt.Sprintf(" with token %d", tok)
}

// overwroteStory: the stale holder a's write erased the acknowledged
// elements of victims.
func (b *storyBuilder) overwroteStory(a *report.Op, victims []*report.Op) Story {
	c := newCast(b.cfg)
	steps := b.prelude(c, a)
	A := c.name(a, "")
	var lostEls []int64
	for i, v := range victims {
		lostEls = append(lostEls, v.Element)
		if i >= 3 {
			continue
		}
		role := "whose acknowledged update is lost"
		steps = append(steps, b.acquireStep(c, v, role)...)
		steps = append(steps, b.writeStep(c, v, "good", "")...)
	}
	if len(victims) > 3 {
		last := victims[len(victims)-1]
		steps = append(steps, Step{At: last.AckAt(), Who: "others",
			Text: moreSections(len(victims)-3) + elementsPhrase(lostEls[3:])})
	}
	erased := b.erasedBy(a, a.WriteIdx)
	extra := fmt.Sprintf("Its list is the one it read at %s", report.Secs(a.ReadAt))
	if len(erased) > 0 {
		extra += fmt.Sprintf(": it lacks %s, acknowledged since", elementsPhrase(erased))
	}
	steps = append(steps, b.writeStep(c, a, "bad", extra)...)
	B := c.name(victims[0], "")
	lostWho := B + "'s acknowledged update"
	if len(victims) > 1 {
		lostWho = fmt.Sprintf("%d acknowledged updates", len(victims))
	}
	steps = append(steps, Step{At: a.AckAt(), Who: "result", Tone: "result",
		Text: fmt.Sprintf("%s %s missing from the final read: %s %s LOST%s",
			elementsPhrase(lostEls), isAre(len(lostEls)), lostWho, isAre(len(victims)), b.finalNote())})
	st := Story{
		Kind: KindStaleOverwrote, Steps: steps, Lost: lostEls,
		Title: fmt.Sprintf("%s's stale write%s erased %s", A, checkers.TokenPhrase(a.Token), lostWho),
		Summary: fmt.Sprintf("%s (%s) acquired the lock%s, read the list%s. Its lease expired and the lock moved on%s. "+
			"%s %s still believing it held the lock and wrote the list it had read before: the resource accepted it at %s, and %s appended meanwhile %s gone.",
			A, report.NodeOf(a.Proc, b.cfg.Workers), withToken(a.Token), b.stoppedPhrase(a, "inside its critical section"), b.movedOn(c, a), A, b.wentOn(a), report.Secs(b.writeTime(a)),
			describeVictims(c, victims), isAre(len(victims))),
		stale: a, victims: victims,
	}
	st.Fencing, st.TokenStops = b.whyFencing(c, a)
	var owners []string
	for i, v := range victims {
		if i == 3 {
			owners = append(owners, fmt.Sprintf("%d more", len(victims)-3))
			break
		}
		vt, _ := v.TokenOf()
		owners = append(owners, fmt.Sprintf("%d of %s%s", v.Element, report.NodeOf(v.Proc, b.cfg.Workers), checkers.TokenPhrase(vt)))
	}
	st.At = b.writeTime(a)
	st.Brief = fmt.Sprintf("%s wrote its stale list at %s: %s lost.", b.briefHolder(a), report.Secs(st.At), "element "+strings.Join(owners, ", "))
	return b.finish(st, c)
}

// overwrittenStory: the stale holder a's write landed inside d's critical
// section; d's write then erased a's own acknowledged element.
func (b *storyBuilder) overwrittenStory(a, d *report.Op) Story {
	c := newCast(b.cfg)
	steps := b.prelude(c, a)
	A := c.name(a, "the stale holder, whose own acknowledged update is lost")
	B := c.name(d, "in whose critical section the stale write landed")
	erased := b.erasedBy(a, a.WriteIdx)
	if len(erased) > 0 {
		first := b.m.byElement[erased[0]]
		steps = append(steps, Step{At: first.AckAt(), Who: "others",
			Text: fmt.Sprintf("meanwhile other holders append and are acknowledged: %s", describeElements(erased, 12))})
	}
	steps = append(steps, b.acquireStep(c, d, "")...)
	if l, ok := readList(d); ok && d.ReadAt >= 0 {
		steps = append(steps, Step{At: d.ReadAt, Who: B, Text: fmt.Sprintf("reads the list: %s. %s's element %d is not in it: %s has not written yet", describeList(l), A, a.Element, A)})
	}
	extra := ""
	if len(erased) > 0 {
		extra = fmt.Sprintf("Its list is the one it read at %s: for the moment it erases %s", report.Secs(a.ReadAt), describeElements(erased, 10))
	}
	steps = append(steps, b.writeStep(c, a, "bad", extra)...)
	back := ""
	if len(erased) > 0 {
		back = "brings " + describeElements(erased, 6) + " back but "
	}
	steps = append(steps, b.writeStep(c, d, "bad", fmt.Sprintf("%s read before %s's write landed: its list %sdoes not have %s's element %d", B, A, back, A, a.Element))...)
	steps = append(steps, Step{At: d.AckAt(), Who: "result", Tone: "result",
		Text: fmt.Sprintf("element %d is missing from the final read: %s's own acknowledged update is LOST. %s was told its write succeeded, although its lease had expired before it wrote%s",
			a.Element, A, A, b.finalNote())})
	st := Story{
		Kind: KindStaleOverwritten, Steps: steps, Lost: []int64{a.Element},
		Title: fmt.Sprintf("%s's stale write%s landed inside %s's critical section; %s's write%s erased %s's acknowledged element %d", A, checkers.TokenPhrase(a.Token), B, B, checkers.TokenPhrase(d.Token), A, a.Element),
		Summary: fmt.Sprintf("%s (%s) acquired the lock%s, read the list%s. Its lease expired and the lock moved on%s. "+
			"%s %s and wrote while %s%s was inside its own critical section, after %s had read: the resource accepted %s's write and acknowledged element %d. "+
			"%s then wrote the list it had read before, and %s's element %d is gone.",
			A, report.NodeOf(a.Proc, b.cfg.Workers), withToken(a.Token), b.stoppedPhrase(a, "inside its critical section"), b.movedOn(c, a), A, b.wentOn(a), B, checkers.TokenPhrase(d.Token), B, A, a.Element, B, A, a.Element),
		stale: a, other: d, victims: []*report.Op{a},
	}
	st.Fencing, st.TokenStops = b.whyFencing(c, a)
	st.At = b.writeTime(a)
	st.Brief = fmt.Sprintf("%s wrote at %s inside %s's critical section%s, whose write then erased its own acknowledged element %d.",
		b.briefHolder(a), report.Secs(st.At), report.NodeOf(d.Proc, b.cfg.Workers), checkers.TokenPhrase(d.Token), a.Element)
	return b.finish(st, c)
}

// serverLostStory: the servers lost the victims' acknowledged elements in
// fault f; r is the first read after f began, which lacked them.
func (b *storyBuilder) serverLostStory(f history.Fault, r *report.Op, victims []*report.Op) Story {
	c := newCast(b.cfg)
	var steps []Step
	lost := make([]int64, len(victims))
	for i, v := range victims {
		lost[i] = v.Element
		if i >= 3 {
			continue
		}
		c.name(v, "whose acknowledged update is lost")
		steps = append(steps, b.acquireStep(c, v, "")...)
		steps = append(steps, b.writeStep(c, v, "good", "")...)
	}
	if len(victims) > 3 {
		steps = append(steps, Step{At: victims[len(victims)-1].AckAt(), Who: "others",
			Text: moreSections(len(victims)-3) + elementsPhrase(lost[3:])})
	}
	steps = append(steps, b.faultSteps(c, f.Start, max(f.Stop, f.Start))...)
	// Tokens that started over: the first grant after the fault, at or
	// below a token granted before it.
	var before int64
	var after *report.Op
	for _, g := range b.m.grants {
		switch {
		case g.AcquiredAt < f.Start:
			before = max(before, g.Token)
		case after == nil:
			after = g
		}
	}
	restarted := after != nil && before > 0 && after.Token <= before
	if restarted {
		G := c.name(after, "whose grant came after the fault")
		c.told[after] = true
		steps = append(steps, Step{At: after.AcquiredAt, Who: G, Tone: "bad",
			Text: fmt.Sprintf("acquires the lock: %s, though token %d was granted before the fault: the lock service's tokens started over", grantWord(after.Token), before)})
	}
	R := c.name(r, "whose read after the fault found the elements gone")
	steps = append(steps, b.acquireStep(c, r, "")...)
	rl, _ := readList(r)
	steps = append(steps, Step{At: r.ReadAt, Who: R, Tone: "bad",
		Text: fmt.Sprintf("reads the list: %s. The %s acknowledged before the fault %s not in it: the servers lost %s", describeList(rl), elementsPhrase(lost), isAre(len(lost)), plural(len(lost), "acknowledged update"))})
	steps = append(steps, Step{At: r.ReadAt, Who: "result", Tone: "result",
		Text: fmt.Sprintf("%s %s missing from the final read: LOST%s", elementsPhrase(lost), isAre(len(lost)), b.finalNote())})
	where := strings.Join(f.Nodes, ", ")
	title := fmt.Sprintf("The servers lost %s in %s on %s", plural(len(lost), "acknowledged update"), f.Fault, where)
	them, were := "them", "were"
	if len(lost) == 1 {
		them, were = "it", "was"
	}
	summary := fmt.Sprintf("%s, acknowledged before %s hit %s at %s, %s in the last write acknowledged before it. The first read after it, %s's at %s, found %s: the servers came back without the data they had acknowledged, and no client's write erased %s.",
		capital(elementsPhrase(lost)), f.Fault, where, report.Secs(f.Start), were, R, report.Secs(r.ReadAt), describeList(rl), them)
	if restarted {
		summary += fmt.Sprintf(" The lock service's tokens started over too: %s got token %d at %s, after token %d before the fault.", c.name(after, ""), after.Token, report.Secs(after.AcquiredAt), before)
	}
	fencing := "No fence could have stopped this: no client's write erased these elements, the servers lost them"
	if restarted {
		fencing += ", and the fence's tokens started over with them"
	}
	fencing += ". Only servers that keep what they acknowledged across a restart keep them (persistence, written to disk before the answer)."
	st := Story{Kind: KindServerLost, Steps: steps, Lost: lost, Title: title, Summary: summary, Fencing: fencing, victims: victims,
		At: f.Start, cause: fmt.Sprintf("the servers (%s on %s at %s)", f.Fault, where, report.Secs(f.Start)),
		Brief: fmt.Sprintf("%s on %s at %s: the servers lost %s acknowledged before it (%s).", f.Fault, where, report.Secs(f.Start), plural(len(lost), "element"), describeElements(lost, 6))}
	return b.finish(st, c)
}

// capital is s with its first letter in capitals.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// sideWriterStory: the side writer's batch w, with no lock and no token,
// erased the victims' acknowledged elements.
func (b *storyBuilder) sideWriterStory(w *report.Op, victims []*report.Op) Story {
	c := newCast(b.cfg)
	var steps []Step
	lost := make([]int64, len(victims))
	for i, v := range victims {
		lost[i] = v.Element
	}
	if l, ok := readList(w); ok {
		steps = append(steps, Step{At: w.Invoke, Who: "side writer", Text: fmt.Sprintf("reads the list, with no lock and no token: %s", describeList(l))})
	}
	for _, v := range victims {
		c.name(v, "whose acknowledged update is lost")
		steps = append(steps, b.acquireStep(c, v, "")...)
		steps = append(steps, b.writeStep(c, v, "good", "")...)
	}
	at := w.WriteAt()
	steps = append(steps, Step{At: at, Who: "side writer", Tone: "bad",
		Text: fmt.Sprintf("writes its list with element %d appended, unfenced: ACCEPTED", w.Element)})
	steps = append(steps, Step{At: max(at, w.End), Who: "result", Tone: "result",
		Text: fmt.Sprintf("%s missing from the final read: LOST%s", elementsPhrase(lost), b.finalNote())})
	title := fmt.Sprintf("The side writer's batch erased %s", elementsPhrase(lost))
	summary := fmt.Sprintf("The side writer read the list at %s, worked, and wrote it back at %s with its own element appended, without taking the lock and without a token. Meanwhile %s had been acknowledged; the write erased %s. The write came from the side writer: no fence can stop a write path that does not send the token, so every write path must check it.",
		report.Secs(w.Invoke), report.Secs(at), elementsPhrase(lost), plural(len(lost), "of them"))
	st := Story{Kind: KindSideWriter, Steps: steps, Lost: lost, Title: title, Summary: summary, stale: w, victims: victims, At: at,
		Brief: fmt.Sprintf("The side writer (no lock, no token) erased %s.", elementsPhrase(lost))}
	return b.finish(st, c)
}

// sideWriterErasedStory: the side writer's batch w landed inside holder d's
// critical section, and d's write erased w's element.
func (b *storyBuilder) sideWriterErasedStory(w, d *report.Op) Story {
	c := newCast(b.cfg)
	var steps []Step
	if l, ok := readList(w); ok {
		steps = append(steps, Step{At: w.Invoke, Who: "side writer", Text: fmt.Sprintf("reads the list, with no lock and no token: %s", describeList(l))})
	}
	at := w.WriteAt()
	steps = append(steps, Step{At: at, Who: "side writer", Tone: "bad",
		Text: fmt.Sprintf("writes its list with element %d appended, unfenced: acknowledged", w.Element)})
	to := max(at, w.End)
	summary := fmt.Sprintf("The side writer wrote element %d at %s without taking the lock and without a token. ", w.Element, report.Secs(at))
	if d != nil {
		D := c.name(d, "the holder whose write erased it")
		steps = append(steps, b.acquireStep(c, d, "")...)
		steps = append(steps, b.writeStep(c, d, "bad", "")...)
		to = max(to, d.WriteAt())
		summary += fmt.Sprintf("%s held the lock and had read the list before that write; its own write, built on that read, then erased element %d. The side writer took no lock, so nothing ordered its write with %s's, and it sent no token, so no fence could refuse it: every write path must check.", D, w.Element, D)
	}
	steps = append(steps, Step{At: to, Who: "result", Tone: "result", Text: fmt.Sprintf("element %d is missing from the final read: LOST%s", w.Element, b.finalNote())})
	st := Story{Kind: KindSideWriterErased, At: to, Steps: steps, Lost: []int64{w.Element}, Title: fmt.Sprintf("The side writer's element %d landed inside a critical section and was erased", w.Element),
		Summary: summary, stale: w, victims: []*report.Op{w},
		Brief: fmt.Sprintf("The side writer's element %d (no lock, no token) was erased by the holder it interrupted.", w.Element)}
	return b.finish(st, c)
}

// unexplainedStory: l's acknowledged element is missing, yet no landed write
// erased it; w (nil if unknown) is the overwriter the checker names.
func (b *storyBuilder) unexplainedStory(l, w *report.Op) Story {
	c := newCast(b.cfg)
	L := c.name(l, "whose acknowledged update is lost")
	steps := b.acquireStep(c, l, "")
	steps = append(steps, b.writeStep(c, l, "good", "")...)
	title := fmt.Sprintf("%s's acknowledged element %d is lost, and no acknowledged write erased it", L, l.Element)
	summary := fmt.Sprintf("Element %d of %s was acknowledged at %s but is missing from the final read. No write the history saw succeed erased it, so a write whose outcome the harness never learnt (info) must have landed after it.",
		l.Element, report.NodeOf(l.Proc, b.cfg.Workers), report.Secs(l.AckAt()))
	to := l.AckAt()
	if w != nil {
		W := c.name(w, "whose write of unknown outcome erased it")
		steps = append(steps, b.prelude(c, w)...)
		steps = append(steps, b.writeStep(c, w, "bad", "")...)
		title = fmt.Sprintf("%s's acknowledged element %d was erased by %s's write, whose outcome the harness never learnt", L, l.Element, W)
		summary += fmt.Sprintf(" The final list carries %s's element %d where %d should be: %s's write (%s, %s) landed.", W, w.Element, l.Element, W, tokenWord(w.Token), w.Type)
		to = max(to, w.WriteAt())
	}
	steps = append(steps, Step{At: to, Who: "result", Tone: "result", Text: fmt.Sprintf("element %d is missing from the final read: LOST%s", l.Element, b.finalNote())})
	st := Story{Kind: KindUnexplained, At: to, Steps: steps, Lost: []int64{l.Element}, Title: title, Summary: summary, stale: w, victims: []*report.Op{l},
		Brief: fmt.Sprintf("Element %d of %s was erased by a write of unknown outcome.", l.Element, report.NodeOf(l.Proc, b.cfg.Workers))}
	if w != nil {
		st.Fencing, _ = b.whyFencing(c, w)
	}
	return b.finish(st, c)
}

// fencedStory: the fence refused o's stale write.
func (b *storyBuilder) fencedStory(a *report.Op) Story {
	c := newCast(b.cfg)
	steps := b.prelude(c, a)
	A := c.name(a, "the stale holder")
	at := a.WriteAt()
	if at < 0 {
		at = a.RejectedAt()
	}
	_, why := a.Rejected()
	// What raised the fence: under token fencing a read raises it as a
	// write does, so the highest token may be a reader's whose write had
	// not happened yet. The resource's own figure at the moment of the
	// write, when its refusal states one, is the one the story tells (the
	// harness's order of reports may not have reached it yet), credited
	// to the first operation that carried it.
	rs := b.m.raises(b.cfg.Fencing == "token")
	r, raised := highestRaised(rs, a.RejectedAt())
	if said, ok := statedHighest(why); ok && (!raised || said != r.tok) {
		r, raised = firstRaiseOf(rs, said)
		r.tok = said
	}
	hi, by := r.tok, r.op
	if by != nil {
		steps = append(steps, b.raiseSteps(c, r)...)
	}
	// What A's write would have erased: acknowledged elements appended
	// since A's read.
	upto := b.writesBefore(at)
	erased := b.erasedBy(a, upto)
	// With token fencing reads are fenced too: a holder whose lease ended
	// before it read is refused at its read, and writes nothing.
	readRefused := a.WriteSentAt < 0
	if readRefused {
		tok, _ := a.TokenOf()
		steps = append(steps, Step{At: a.RejectedAt(), Who: A, Tone: "good",
			Text: fmt.Sprintf("reads%s: REJECTED by the fence (%s); it writes nothing", withToken(tok), why)})
	} else {
		steps = append(steps, b.writeStep(c, a, "good", "")...)
	}
	survived := "survive"
	if b.m.hasFinal {
		in := map[int64]bool{}
		for _, x := range b.m.final {
			in[x] = true
		}
		missing := 0
		for _, x := range erased {
			if !in[x] {
				missing++
			}
		}
		if missing == 0 {
			survived = "are all in the final read"
		} else {
			survived = fmt.Sprintf("survived this write (%d of them are missing from the final read for another reason)", missing)
		}
	}
	res := "nothing lost by this write"
	if len(erased) > 0 {
		res = fmt.Sprintf("the %s that %s's stale list lacked (%s) %s", plural(len(erased), "acknowledged element"), A, describeElements(erased, 10), survived)
	}
	steps = append(steps, Step{At: a.RejectedAt(), Who: "result", Tone: "good", Text: res})

	var f strings.Builder
	tok, _ := a.TokenOf()
	switch {
	case b.cfg.Fencing == "cas":
		fmt.Fprintf(&f, "The resource's compare-and-set ties the write to %s's ownership of the lock", A)
		if sb := a.StaleBy; sb != nil {
			fmt.Fprintf(&f, ", which had ended when %s got the lock with token %d at %s", c.name(sb, ""), sb.Token, report.Secs(sb.AcquiredAt))
		}
		fmt.Fprintf(&f, ": the write was refused (%s). ", why)
	case hi > 0 && by != nil && r.read:
		fmt.Fprintf(&f, "The resource keeps the highest token it accepted, from reads and writes alike (token fencing fences both): %d, from %s's read at %s. %s's token %d is lower, so it refused the write (%s). ",
			hi, c.name(by, ""), report.Secs(r.at), A, tok, why)
	case hi > 0 && by != nil:
		fmt.Fprintf(&f, "The resource keeps the highest token it accepted: %d, from %s's write acknowledged at %s. %s's token %d is lower, so it refused the write (%s). ",
			hi, c.name(by, ""), report.Secs(r.at), A, tok, why)
	default:
		fmt.Fprintf(&f, "The resource refused the write (%s). ", why)
	}
	if readRefused {
		fmt.Fprintf(&f, "%s still believed it held the lock when it read: the resource refused the read, so it never wrote.", A)
	} else {
		fmt.Fprintf(&f, "%s still believed it held the lock when it wrote: only the resource could stop it.", A)
	}
	if len(erased) > 0 {
		fmt.Fprintf(&f, " Without fencing, %s's list from %s would have replaced the list and erased %s.", A, report.Secs(a.ReadAt), plural(len(erased), "acknowledged element"))
	}
	summary := fmt.Sprintf("%s (%s) acquired the lock%s%s. The lock moved on%s. When %s %s and wrote%s, the resource refused the write.",
		A, report.NodeOf(a.Proc, b.cfg.Workers), withToken(tok), b.stoppedPhrase(a, "inside its critical section"), b.movedOn(c, a), A, b.wentOn(a), withToken(tok))
	st := Story{
		Kind: KindFenced, Steps: steps, Fencing: f.String(), Summary: summary,
		Title: fmt.Sprintf("The fence stopped %s's stale write (token %d < %d)", A, tok, hi),
		stale: a, other: by,
	}
	if hi <= tok {
		st.Title = fmt.Sprintf("The resource refused %s's stale write%s", A, checkers.TokenPhrase(tok))
	}
	st.At = b.writeTime(a)
	st.Brief = fmt.Sprintf("%s wrote at %s: refused by the fence", b.briefHolder(a), report.Secs(st.At))
	if readRefused {
		st.Title = fmt.Sprintf("The fence refused %s's stale read%s", A, checkers.TokenPhrase(tok))
		st.Summary = fmt.Sprintf("%s (%s) acquired the lock%s%s. The lock moved on%s. When %s went on and read%s, the resource refused the read: it never wrote.",
			A, report.NodeOf(a.Proc, b.cfg.Workers), withToken(tok), b.stoppedPhrase(a, "before it read"), b.movedOn(c, a), A, withToken(tok))
		st.At = b.actTime(report.NodeOf(a.Proc, b.cfg.Workers), a.RejectedAt())
		st.Brief = fmt.Sprintf("%s read at %s: refused by the fence", b.briefHolder(a), report.Secs(st.At))
	}
	if hi > tok {
		st.Brief += fmt.Sprintf(" (highest accepted token %d)", hi)
	}
	st.Brief += "."
	return b.finish(st, c)
}

// raiseSteps tells the grant of the operation whose read or write raised
// the resource's highest token to the one that refused a stale write, and
// that read or write, at its own time.
func (b *storyBuilder) raiseSteps(c *cast, r raise) []Step {
	o := r.op
	if !r.read {
		c.name(o, fmt.Sprintf("whose write raised the resource's highest accepted token to %d", r.tok))
		return append(b.acquireStep(c, o, ""), b.writeStep(c, o, "good", "")...)
	}
	C := c.name(o, fmt.Sprintf("whose fenced read raised the resource's highest accepted token to %d", r.tok))
	steps := b.acquireStep(c, o, "")
	l, _ := readList(o)
	return append(steps, Step{At: r.at, Who: C, Tone: "good",
		Text: fmt.Sprintf("reads the list with token %d: %s. The read is fenced: the resource raises its highest accepted token to %d", r.tok, describeList(l), r.tok)})
}

// holdUp is the fault on a's container between its grant and its write
// (the end of the history if it never wrote), the first: what kept it
// busy while its lease passed on. ok is false when none did.
func (b *storyBuilder) holdUp(a *report.Op) (f history.Fault, ok bool) {
	node := report.NodeOf(a.Proc, b.cfg.Workers)
	end := a.WriteAt()
	if end < 0 {
		end = b.m.Last
	}
	for _, f := range b.m.Faults {
		if f.Start > end || (f.Stop >= 0 && f.Stop < a.AcquiredAt) || !slices.Contains(f.Nodes, node) {
			continue
		}
		return f, true
	}
	return history.Fault{}, false
}

// faultSpan is a fault's name and window for prose: "pause-holder for
// 5.6s (3.30s to 8.90s)", or "... from 3.30s" for one never healed.
func faultSpan(f history.Fault) string {
	if f.Stop >= 0 {
		return fmt.Sprintf("%s for %s (%s to %s)", f.Fault, report.HeldFor(f), report.Secs(f.Start), report.Secs(f.Stop))
	}
	return fmt.Sprintf("%s from %s", f.Fault, report.Secs(f.Start))
}

// stoppedPhrase says, for a summary, what the fault on a's container did
// to it while its lease passed on, where ("inside its critical section",
// "before it read"): " and was stopped inside its critical section by
// pause-holder for 5.6s (3.30s to 8.90s)"; a clock fault did not stop it:
// " and was not stopped: its clocks ran at 0.2x true speed inside its
// critical section (clock-rate:client:x0.2 for 6.54s, ...), so its lease
// estimate was wrong".
func (b *storyBuilder) stoppedPhrase(a *report.Op, where string) string {
	f, ok := b.holdUp(a)
	if !ok {
		return " and was stopped " + where
	}
	if ck, ok := clockOf(f); ok {
		return fmt.Sprintf(" and was not stopped: %s %s, by %s, so its lease estimate was wrong", ck.words("its"), where, faultSpan(f))
	}
	return fmt.Sprintf(" and was stopped %s by %s", where, faultSpan(f))
}

// wentOn is how a's stale write followed the fault: a stopped holder
// "woke up"; one whose clock was wrong had never stopped, and "went on".
func (b *storyBuilder) wentOn(a *report.Op) string {
	if f, ok := b.holdUp(a); ok {
		if _, clock := clockOf(f); clock {
			return "went on"
		}
	}
	return "woke up"
}

// briefHolder names the stale holder for a brief: "w3 (token 19),
// stopped by pause-holder for 5.61s," or "w3 (token 19), its clocks at
// 0.2x by clock-rate:client:x0.2 for 6.54s,".
func (b *storyBuilder) briefHolder(a *report.Op) string {
	tok, _ := a.TokenOf()
	s := report.NodeOf(a.Proc, b.cfg.Workers) + checkers.TokenPhrase(tok)
	f, ok := b.holdUp(a)
	if !ok {
		return s
	}
	what := "stopped"
	if ck, ok := clockOf(f); ok {
		what = ck.brief()
	}
	span := strings.SplitN(faultSpan(f), " (", 2)[0]
	return s + ", " + what + " by " + span + ","
}

// clockFault is what a clock fault did to a client's clock, from its
// record: run at rate (clock-rate), or jump by offset (clock-skew), or
// flip (clock-strobe).
type clockFault struct {
	kind   string // clock-rate, clock-skew, clock-strobe
	rate   float64
	offset time.Duration
}

// clockOf reads a clock fault's record: its kind by name, its rate or
// offset from its figures (a run recorded before typed records: from its
// params). ok is false for a fault of another kind.
func clockOf(f history.Fault) (clockFault, bool) {
	var ck clockFault
	for _, k := range []string{"clock-rate", "clock-skew", "clock-strobe"} {
		if f.Fault == k || strings.HasPrefix(f.Fault, k+":") {
			ck.kind = k
		}
	}
	if ck.kind == "" {
		return ck, false
	}
	var rec struct {
		Rate   float64          `json:"rate"`
		Offset history.Duration `json:"offset"`
	}
	if f.DecodeFigures(&rec) == nil {
		ck.rate, ck.offset = rec.Rate, rec.Offset.D()
	}
	if f.Recorded != nil {
		if r, err := strconv.ParseFloat(f.Recorded["rate"], 64); err == nil {
			ck.rate = r
		}
		if d, err := time.ParseDuration(f.Recorded["offset"]); err == nil {
			ck.offset = d
		}
	}
	if ck.rate <= 0 || math.IsInf(ck.rate, 0) || math.IsNaN(ck.rate) {
		ck.rate = 0
	}
	return ck, true
}

// words says what the fault did to whose clocks: "its clocks ran at 0.2x
// true speed", "its lease clock jumped by -4s", "its wall clock flipped
// between true and ahead".
func (ck clockFault) words(whose string) string {
	switch {
	case ck.kind == "clock-rate" && ck.rate > 0:
		return fmt.Sprintf("%s clocks ran at %sx true speed", whose, rateText(ck.rate))
	case ck.kind == "clock-rate":
		return whose + " clocks ran at a wrong rate"
	case ck.kind == "clock-skew" && ck.offset != 0:
		return fmt.Sprintf("%s clock jumped %s by %s", whose, aheadBehind(ck.offset), ck.offset.Abs())
	case ck.kind == "clock-skew":
		return whose + " clock jumped"
	}
	return whose + " wall clock flipped between true and ahead"
}

// now is words in the present, for the step where the fault starts: "its
// clocks run at 0.2x true speed".
func (ck clockFault) now() string {
	switch {
	case ck.kind == "clock-rate" && ck.rate > 0:
		return fmt.Sprintf("its clocks run at %sx true speed", rateText(ck.rate))
	case ck.kind == "clock-rate":
		return "its clocks run at a wrong rate"
	case ck.kind == "clock-skew" && ck.offset != 0:
		return fmt.Sprintf("its clock jumps %s by %s", aheadBehind(ck.offset), ck.offset.Abs())
	case ck.kind == "clock-skew":
		return "its clock jumps"
	}
	return "its wall clock flips between true and ahead"
}

// brief is words in a brief's few words: "its clocks at 0.2x".
func (ck clockFault) brief() string {
	switch {
	case ck.kind == "clock-rate" && ck.rate > 0:
		return fmt.Sprintf("its clocks at %sx", rateText(ck.rate))
	case ck.kind == "clock-skew" && ck.offset != 0:
		return fmt.Sprintf("its clock %s %s", ck.offset.Abs(), aheadBehind(ck.offset))
	}
	return "its clock wrong"
}

// rateText is a clock rate as its fault names it: 0.2, 1.5.
func rateText(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

func aheadBehind(d time.Duration) string {
	if d < 0 {
		return "behind"
	}
	return "ahead"
}

// clockElapsed is how much time a client's clock counted from true time
// from to to, its clocks running at the rates of the clock-rate faults
// on its node (true speed outside them).
func (b *storyBuilder) clockElapsed(node string, from, to int64) time.Duration {
	counted := float64(to - from)
	for _, f := range b.m.Faults {
		ck, ok := clockOf(f)
		if !ok || ck.kind != "clock-rate" || ck.rate == 0 || !slices.Contains(f.Nodes, node) {
			continue
		}
		stop := f.Stop
		if stop < 0 {
			stop = b.m.Last
		}
		lo, hi := max(from, f.Start), min(to, stop)
		if hi > lo {
			counted += float64(hi-lo) * (ck.rate - 1)
		}
	}
	return time.Duration(counted)
}

// estimateStep tells, at a's write, what a's lease estimate said when a
// clock-rate fault made it count time wrong: how much its clock had
// counted since its lease check, and how much of its lease it therefore
// believed left, against when the lease truly passed on. None when a was
// under no clock-rate fault, made no lease check, or its estimate did
// not say time was left.
func (b *storyBuilder) estimateStep(c *cast, a *report.Op) []Step {
	f, ok := b.holdUp(a)
	if !ok || a.CheckedAt < 0 || a.WriteSentAt < 0 {
		return nil
	}
	ck, ok := clockOf(f)
	if !ok || ck.kind != "clock-rate" || ck.rate == 0 {
		return nil
	}
	node := report.NodeOf(a.Proc, b.cfg.Workers)
	w := a.WriteSentAt
	counted := b.clockElapsed(node, a.CheckedAt, w)
	left := time.Duration(a.Checked.RemainingMS)*time.Millisecond - counted
	if left <= 0 {
		return nil
	}
	A := c.name(a, "")
	text := fmt.Sprintf("by its own clock, running at %sx, only %s had passed since its lease check at %s (%s of true time): its lease estimate said %s left",
		rateText(ck.rate), counted.Round(time.Millisecond), report.Secs(a.CheckedAt), time.Duration(w-a.CheckedAt).Round(time.Millisecond), left.Round(time.Millisecond))
	if sb := a.StaleBy; sb != nil {
		text += fmt.Sprintf(", yet its lease had passed on when %s got the lock at %s", c.name(sb, ""), report.Secs(sb.AcquiredAt))
	}
	return []Step{{At: w, Who: A, Tone: "bad", Text: text}}
}

// movedOn names the grant that superseded a.
func (b *storyBuilder) movedOn(c *cast, a *report.Op) string {
	if s := a.StaleBy; s != nil {
		return fmt.Sprintf(": %s got it%s at %s", c.name(s, ""), withToken(s.Token), report.Secs(s.AcquiredAt))
	}
	return ""
}

func (b *storyBuilder) finalNote() string {
	if b.m.hasFinal {
		return fmt.Sprintf(" (final read at %s)", report.Secs(b.m.finalAt))
	}
	return ""
}

// finish sorts the steps, sets the window and the actors. A step of an
// actor inside a pause of its container (the worker's report of a write
// and the nemesis's resume race to the harness) is moved to the resume: a
// frozen process does nothing.
func (b *storyBuilder) finish(st Story, c *cast) Story {
	acts := int64(-1)
	for i := range st.Steps {
		s := &st.Steps[i]
		if s.Tone == "fault" {
			continue
		}
		for _, a := range c.actors {
			if a.Name == s.Who {
				s.At = b.actTime(a.Node, s.At)
			}
		}
		if s.Who != "result" {
			acts = max(acts, s.At)
		}
	}
	// A result is known once the acts it follows are done: a write moved
	// to its writer's resume carries its result with it.
	for i := range st.Steps {
		if s := &st.Steps[i]; s.Who == "result" {
			s.At = max(s.At, acts)
		}
	}
	slices.SortStableFunc(st.Steps, func(x, y Step) int { return cmp.Compare(x.At, y.At) })
	if !b.cfg.Started.IsZero() {
		for i := range st.Steps {
			st.Steps[i].Wall = wallClock(b.cfg.Started, st.Steps[i].At)
		}
	}
	st.Actors = c.actors
	st.From, st.To = -1, -1
	for _, s := range st.Steps {
		if s.At < 0 {
			continue
		}
		if st.From < 0 || s.At < st.From {
			st.From = s.At
		}
		st.To = max(st.To, s.At)
	}
	if st.stale != nil {
		st.Stale = st.stale.Proc
	}
	return st
}

// actTime is when a client on node did something the history stamped at
// t, as the stories tell it: a step inside a pause of its container (the
// worker's report and the nemesis's resume race to the harness) happened
// at the resume, since a frozen process does nothing.
func (b *storyBuilder) actTime(node string, t int64) int64 {
	for _, f := range b.m.Faults {
		if strings.HasPrefix(f.Fault, "pause") && f.Stop >= 0 && f.Start < t && t < f.Stop && slices.Contains(f.Nodes, node) {
			t = f.Stop
		}
	}
	return t
}

// writeTime is o's write as the stories tell it (actTime).
func (b *storyBuilder) writeTime(o *report.Op) int64 {
	return b.actTime(report.NodeOf(o.Proc, b.cfg.Workers), stepWriteAt(o))
}

// stepWriteAt is when o's write step happens in the history's stamps:
// the write-sent phase, else the acknowledgement; for a write a late
// result says landed, no later than that result.
func stepWriteAt(o *report.Op) int64 {
	at := o.WriteAt()
	if o.Landed() && o.Late != nil {
		at = min(at, o.LateAt)
	}
	return at
}

// wallClock is the moment at ns into the history on the wall clock, in
// UTC to the millisecond ("21:04:05.123 UTC"), as a reader matches it
// against logs/n*.log; "" for no time (ns < 0).
func wallClock(started time.Time, ns int64) string {
	if ns < 0 {
		return ""
	}
	return started.Add(time.Duration(ns)).UTC().Format("15:04:05.000") + " UTC"
}

func describeVictims(c *cast, vs []*report.Op) string {
	var parts []string
	for i, v := range vs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(vs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s's element %d", c.name(v, ""), v.Element))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// elementsPhrase writes "element 16" or "elements 16, 17".
func elementsPhrase(xs []int64) string {
	if len(xs) == 1 {
		return "element " + describeElements(xs, 1)
	}
	return "elements " + describeElements(xs, 10)
}

// moreSections starts the line that sums up n more critical sections.
func moreSections(n int) string {
	if n == 1 {
		return "1 more critical section appends and is acknowledged: "
	}
	return fmt.Sprintf("%d more critical sections append and are acknowledged: ", n)
}
