// Package record is the one extension point for what a run records beside
// its history: the leaders the servers named, what it kept of their data,
// and whatever comes next (a library's belief windows, server restarts).
//
// A kind of record is one entry of a table (internal/clients/tables' Records): its
// key in results.json, its decoder, whether `fencecheck check` carries it
// over from the stored results (it was measured during the run, and the
// history cannot make it again), and the style rows its timeline marks are
// drawn with. A record itself says, through the optional interfaces below,
// how a report bounds it (Bounder), what the end-of-run summary prints of it
// (Summarizer), what it draws on the timeline and tells in stories
// (Marker), and the report section it fills (Sectioner). The store, check,
// the summary and the report handle every record through these, never by
// its name, so a new record is its own folder plus one line of the table.
//
// Anchors: Jepsen's checker/compose (a result is one entry of a map, under
// its own name) and its nemesis packages' plot styles; Porcupine's
// Annotation{ClientId, Tag, Start, End, Description}.
package record

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
)

// Record is one record of a run, stored in results.json under its kind's
// key. Its JSON is its own (MarshalJSON or its fields).
type Record interface {
	// Key is its kind's key (Kind.Key).
	Key() string
}

// Kind is one kind of record: a line of the records table.
type Kind struct {
	// Key is the record's key in results.json: a lower-case JSON name,
	// never one of results.json's own or a workload result's.
	Key string
	// Decode reads the record from its JSON in results.json. A value
	// results.json cannot hold is an error: the file is refused.
	Decode func(json.RawMessage) (Record, error)
	// Carried: `fencecheck check` keeps the stored record when it checks
	// the history again (the run measured it; the history cannot make it
	// again).
	Carried bool
	// Styles are how its marks are drawn, one row per tag (Mark.Tag).
	Styles []Style
	// Probe makes the record while the clients run (nil: the record is
	// made otherwise, as kept data is before teardown).
	Probe Probe
	// Derive makes the record from the run's configuration and history
	// whenever the run is checked (the run's own check and `fencecheck
	// check`; such a kind is not Carried): nil when the history holds
	// nothing of it.
	Derive func(r Run, events []history.Event) Record
}

// Run is what Derive knows of the run besides its history: its
// configuration, and the history's start on the kernel's monotonic clock
// (history.KernelMonotonic; 0: not recorded).
type Run struct {
	spec.Spec
	HistoryStartedMono int64
}

// Verdict is what a record says of the run: nothing (None), or that it is
// invalid or cannot be judged; Judge makes a valid run so.
type Verdict int

const (
	None Verdict = iota
	Invalid
	Unknown
)

// Verdicter is a record that judges the run: its verdict and why.
type Verdicter interface {
	Verdict() (Verdict, string)
}

// Probe makes a record while a run's clients run: the harness starts it
// when the clients begin and calls stop when they are done; stop returns
// the record (nil: nothing to record, as for a target that elects no
// leader). A probe never fails the run: what it cannot measure it leaves
// out, or says so in its record.
type Probe interface {
	Start(ctx context.Context, env Env) (stop func() Record)
}

// Env is what a probe may use of the run.
type Env interface {
	// Since is the time since the history began: the clock every record's
	// times are on.
	Since() time.Duration
	// LeaderAsker returns what asks the target which server leads, and
	// what releases it; ok is false for a target that elects none.
	LeaderAsker(ctx context.Context) (ask func(context.Context) (string, error), release func(), ok bool)
}

// Bounder is a record a report bounds before it reads it (a hand-made or
// hostile results.json): Bound returns a copy with its lists and texts cut
// to lim.
type Bounder interface {
	Bound(lim Limits) Record
}

// Limits are a report's bounds: a name's length, a free text's, and a
// list's length (a record cuts its strings with safetext.Clip).
type Limits struct {
	Name, Text, Items int
}

// Summarizer is a record the end-of-run summary prints: its lines, each a
// label and a text ("leaders", "n1 from 0.3s, ..."); a line with an empty
// label continues the one before. No line: nothing printed.
type Summarizer interface {
	Summary() []Line
}

// Line is one line of the end-of-run summary.
type Line struct{ Label, Text string }

// Marker is a record drawn on the report's timelines and told in its
// stories: Marks returns its marks in time order, given end, the run's
// last instant on the history's clock (a mark that lasts to the end of
// the run ends there).
type Marker interface {
	Marks(end int64) []Mark
}

// Mark is one mark of a record on a timeline: on lane Lane (a server's or
// a client's name), from Start to End (ns on the history's clock; End ==
// Start: an instant), drawn as its kind's style row for Tag says.
type Mark struct {
	Lane  string
	Tag   string
	Start int64
	End   int64
	// Words say what the mark is (its title, shown on hover).
	Words string
	// Label is a word written on the lane where the mark starts, "" none.
	Label string
	// Tell is what a story of the run says of the mark at Start, by Who
	// ("servers", a client's name); "" the stories leave it out.
	Tell, Who string
}

// Secs formats ns for a mark's words as the report does: "7.45s" ("never"
// for a negative time).
func Secs(ns int64) string {
	if ns < 0 {
		return "never"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 2, 64) + "s"
}

// Style is how the marks of one tag are drawn.
type Style struct {
	Tag string
	// Bar: a band along the bottom of the lane from Start to End; else a
	// symbol (Shape, the report's mark shapes) at Start.
	Bar   bool
	Shape string
	// Class is the drawn element's CSS class, LabelClass its label's.
	Class, LabelClass string
	// Tone is a story step's tone ("fault", "info", ...).
	Tone string
	// CSS is the style sheet's rules for the classes above.
	CSS string
}

// Sectioner is a record that fills a section of the report: its title
// and its lines (nil: no section).
type Sectioner interface {
	Section() (id, title string, lines []string)
}

// LeaderTeller is a record that knows which server led at an instant (""
// none known): the report names the leader a fault recorded before faults
// named it was aimed at.
type LeaderTeller interface {
	LeaderAt(t int64) string
}

var (
	mu    sync.RWMutex
	kinds []Kind
)

// Register adds kinds to the table the store reads results.json with, the
// harness starts probes from and the report draws with. The tables
// package registers every kind of its Records table (whose test checks
// that no two share a key); a key registered already keeps its first
// kind, so a test may register what the tables register too.
func Register(ks ...Kind) {
	mu.Lock()
	defer mu.Unlock()
	for _, k := range ks {
		if k.Key == "" || k.Decode == nil {
			panic("record: a kind needs a key and a decoder")
		}
		if !slices.ContainsFunc(kinds, func(o Kind) bool { return o.Key == k.Key }) {
			kinds = append(kinds, k)
		}
	}
}

// Kinds are the registered kinds, in the order registered.
func Kinds() []Kind {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(kinds)
}

// Lookup is the registered kind of key.
func Lookup(key string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, k := range kinds {
		if k.Key == key {
			return k, true
		}
	}
	return Kind{}, false
}

// StyleOf is the style row of a mark's tag among its kind's (a zero Style
// when the kind has no row for it: the mark is not drawn).
func StyleOf(key, tag string) (Style, bool) {
	k, ok := Lookup(key)
	if !ok {
		return Style{}, false
	}
	for _, s := range k.Styles {
		if s.Tag == tag {
			return s, true
		}
	}
	return Style{}, false
}

// Set is a run's records, at most one of each kind, in the registered
// kinds' order.
type Set []Record

// Put sets r in s, replacing the record of its kind; a nil r (a typed nil
// too) removes it.
func (s Set) Put(r Record) Set {
	if r == nil {
		return s
	}
	key := r.Key()
	out := slices.DeleteFunc(slices.Clone(s), func(o Record) bool { return o.Key() == key })
	if isNil(r) {
		return out
	}
	out = append(out, r)
	order := map[string]int{}
	for i, k := range Kinds() {
		order[k.Key] = i
	}
	slices.SortStableFunc(out, func(a, b Record) int { return rank(order, a) - rank(order, b) })
	return out
}

// rank is a record's place: its kind's, unregistered kinds last.
func rank(order map[string]int, r Record) int {
	if i, ok := order[r.Key()]; ok {
		return i
	}
	return len(order)
}

// isNil reports whether r holds a nil pointer, slice or map.
func isNil(r Record) bool {
	n, ok := r.(interface{ IsNil() bool })
	return ok && n.IsNil()
}

// Get is the record of key in s, if any.
func (s Set) Get(key string) (Record, bool) {
	for _, r := range s {
		if r.Key() == key {
			return r, true
		}
	}
	return nil, false
}

// Find is the record of type T in s, if any.
func Find[T Record](s Set) (T, bool) {
	for _, r := range s {
		if t, ok := r.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// Carry returns s with the records of old whose kinds are carried
// (Kind.Carried) in place of its own of those kinds.
func (s Set) Carry(old Set) Set {
	for _, k := range Kinds() {
		if !k.Carried {
			continue
		}
		s = slices.DeleteFunc(slices.Clone(s), func(r Record) bool { return r.Key() == k.Key })
		if r, ok := old.Get(k.Key); ok {
			s = s.Put(r)
		}
	}
	return s
}

// Bound returns s with every Bounder bounded to lim.
func (s Set) Bound(lim Limits) Set {
	out := make(Set, 0, len(s))
	for _, r := range s {
		if b, ok := r.(Bounder); ok {
			r = b.Bound(lim)
		}
		out = append(out, r)
	}
	return out
}

// Marks are every Marker's marks, each with its kind's key, in the set's
// order.
func (s Set) Marks(end int64) []Keyed {
	var out []Keyed
	for _, r := range s {
		if m, ok := r.(Marker); ok {
			for _, mk := range m.Marks(end) {
				out = append(out, Keyed{Key: r.Key(), Mark: mk})
			}
		}
	}
	return out
}

// Keyed is a mark with its record's key (to find its style row).
type Keyed struct {
	Key string
	Mark
}

// Style is the keyed mark's style row.
func (k Keyed) Style() (Style, bool) { return StyleOf(k.Key, k.Tag) }

// LeaderAt is the leader at t any LeaderTeller of s names ("" none).
func (s Set) LeaderAt(t int64) string {
	for _, r := range s {
		if lt, ok := r.(LeaderTeller); ok {
			if l := lt.LeaderAt(t); l != "" {
				return l
			}
		}
	}
	return ""
}

// CSS is every registered kind's style rules, in the registered order.
func CSS() string {
	var css string
	for _, k := range Kinds() {
		for _, st := range k.Styles {
			css += st.CSS
		}
	}
	return css
}

// Decode takes the registered kinds' keys out of obj (results.json's
// object) and returns their records, in the registered order. A JSON null
// is no record.
func Decode(obj map[string]json.RawMessage) (Set, error) {
	var s Set
	for _, k := range Kinds() {
		raw, ok := obj[k.Key]
		if !ok {
			continue
		}
		delete(obj, k.Key)
		if string(raw) == "null" {
			continue
		}
		r, err := k.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Key, err)
		}
		s = s.Put(r)
	}
	return s, nil
}
