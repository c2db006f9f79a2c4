package checkers

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// LinearizableResult is the verdict of Porcupine on the append-list model.
type LinearizableResult struct {
	Verdict
	// Ops is the number of operations Porcupine checked: ok appends, info
	// appends that may have taken effect, and ok final reads.
	Ops int `json:"ops"`
	// Info is how many of Ops are info appends (maybe, returning at
	// infinity), and Inferred how many of those had their read list
	// inferred from where their element was observed.
	Info     int `json:"info"`
	Inferred int `json:"inferred"`
	// NoEffect counts info appends left out because they can only have had
	// no effect: their element appears in no list the history observed.
	NoEffect int `json:"no_effect"`
	// VisualizationWindow says which part of a long history the
	// visualization shows (empty: all of it).
	VisualizationWindow string `json:"visualization_window,omitempty"`
	// Visualization is the base name of Porcupine's visualization of an
	// illegal history, when one was asked for and written.
	Visualization string `json:"visualization,omitempty"`
}

// stepKind is what an operation does in the append-list model.
type stepKind uint8

const (
	stepAppend stepKind = iota // an ok append: state must equal from, becomes to
	stepMaybe                  // an info append: no effect, or as stepAppend
	stepRead                   // an ok final read: state must equal from
)

// listInput is a Porcupine operation's input in the append-list model.
// Lists are interned: from and to are ids in the check's listTable, so that a
// state is one small comparable int.
type listInput struct {
	kind     stepKind
	pos      int32 // in the check's operations, for progress
	from, to int
	element  int64
	inferred bool
}

// listMeta is a Porcupine operation's metadata, shown in the visualization.
type listMeta struct {
	process history.Process
	token   int64
	known   bool
	event   int
}

// describe is m as the visualization shows it, its client named by client
// (Options.client): "w3, token 19, event 412".
func (m listMeta) describe(client func(history.Process) string) string {
	s := client(m.process)
	if m.known {
		s += ", token " + strconv.FormatInt(m.token, 10)
	}
	return s + ", event " + strconv.Itoa(m.event)
}

// listTable interns lists: every list the check meets gets a small id, so
// that states compare and hash as ints. For describing, it keeps only each
// list's length and last elements.
type listTable struct {
	// client names a process in the visualization (Options.client).
	client func(history.Process) string
	ids    map[string]int
	lists  []listSummary
	buf    []byte
}

type listSummary struct {
	n    int
	tail []int64 // the last min(n, 3) elements
}

const tailLen = 3

// newListTable returns a table holding only the empty list, as id 0, whose
// model names clients as opts does (Options.client).
func newListTable(opts Options) *listTable {
	t := &listTable{ids: map[string]int{}, client: opts.client}
	t.read(nil)
	return t
}

// encode writes l to t.buf and returns it; a list's encoding followed by an
// element's encoding is the encoding of the list with the element appended.
func (t *listTable) encode(l []int64) []byte {
	t.buf = t.buf[:0]
	for _, x := range l {
		t.buf = binary.AppendVarint(t.buf, x)
	}
	return t.buf
}

// intern returns the id of the list encoded in key, adding it (with the
// summary s) if it is new.
func (t *listTable) intern(key []byte, s func() listSummary) int {
	if id, ok := t.ids[string(key)]; ok {
		return id
	}
	id := len(t.lists)
	t.ids[string(key)] = id
	t.lists = append(t.lists, s())
	return id
}

// list decodes the list with id (a scan of the table: for rare use).
func (t *listTable) list(id int) []int64 {
	for key, i := range t.ids {
		if i != id {
			continue
		}
		var out []int64
		for b := []byte(key); len(b) > 0; {
			x, n := binary.Varint(b)
			if n <= 0 {
				break
			}
			out = append(out, x)
			b = b[n:]
		}
		return out
	}
	return nil
}

// read interns l, and returns its id.
func (t *listTable) read(l []int64) int {
	return t.intern(t.encode(l), func() listSummary { return summarize(l) })
}

// appended interns l with e appended, and returns the ids of l and of l+[e].
func (t *listTable) appended(l []int64, e int64) (from, to int) {
	from = t.read(l)
	key := binary.AppendVarint(t.buf, e)
	t.buf = key
	to = t.intern(key, func() listSummary {
		s := t.lists[from]
		tail := append(append([]int64(nil), s.tail...), e)
		return listSummary{n: s.n + 1, tail: tail[max(0, len(tail)-tailLen):]}
	})
	return from, to
}

func summarize(l []int64) listSummary {
	return listSummary{n: len(l), tail: append([]int64(nil), l[max(0, len(l)-tailLen):]...)}
}

// describe writes a list short: whole when it has at most three elements,
// else its last element after how many come before it.
func (s listSummary) describe() string {
	var b strings.Builder
	b.WriteByte('[')
	tail := s.tail
	if s.n > tailLen {
		fmt.Fprintf(&b, "..%d elements.., ", s.n-1)
		tail = tail[len(tail)-1:]
	}
	for i, x := range tail {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// model returns the append-list model over t's lists: the state is a list
// id, starting at the empty list's (0). An ok append is legal only if the state
// is the list it read, and makes it that list with its element appended; an
// info append may do the same or nothing; a final read is legal only if the
// state is the list it returned.
func (t *listTable) model() porcupine.Model { return t.modelFrom(0) }

// modelFrom is model starting at list id init (a window of a history starts
// at the list its first append read).
func (t *listTable) modelFrom(init int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{init} },
		Step: func(state, input, _ any) []any {
			s, in := state.(int), input.(listInput)
			switch in.kind {
			case stepAppend:
				if s == in.from {
					return []any{in.to}
				}
				return nil
			case stepMaybe:
				if s == in.from {
					return []any{s, in.to}
				}
				return []any{s}
			default:
				if s == in.from {
					return []any{s}
				}
				return nil
			}
		},
		Equal: func(a, b any) bool { return a.(int) == b.(int) },
		Hash:  func(s any) uint64 { return mix(uint64(s.(int))) },
		DescribeOperation: func(input, _ any) string {
			in := input.(listInput)
			switch in.kind {
			case stepRead:
				return "final read " + t.lists[in.from].describe()
			case stepMaybe:
				how := "info"
				if in.inferred {
					how = "info, read inferred"
				}
				return fmt.Sprintf("maybe append %d to %s (%s)", in.element, t.lists[in.from].describe(), how)
			default:
				return fmt.Sprintf("append %d to %s", in.element, t.lists[in.from].describe())
			}
		},
		DescribeState: func(state any) string { return t.lists[state.(int)].describe() },
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return m.(listMeta).describe(t.client)
		},
	}
	return nm.ToModel()
}

// mix is SplitMix64's finalizer: ids that differ in one bit hash far apart,
// so that XOR-combined hashes of state sets rarely collide.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// checkLinearizable checks with Porcupine that the operations of h are
// linearizable on an append-list model, where each critical
// section is one atomic step: it is legal only if the list equals what the
// section read, and it appends the section's element.
//
// Ok appends and ok final reads are checked as they are; fail appends are
// left out. An info append (or one that never completed) returns at
// infinity and may have no effect or append its element; its read list is
// taken from its completion, its late result or its read phase, else
// inferred from where its element appears in a list the history observed.
// An info append whose element appears in no observed list is left out: in
// the model a list holding an element only grows, so an effect that no later
// list shows can only have been followed by no-ops, and dropping it changes
// no verdict.
//
// opts.Timeout bounds the search (0: no bound); when it runs out the result
// is Unknown, never Valid. opts.MemoryBudget bounds the process's memory
// while it checks (0: no bound); past it the search stops and the result is
// Unknown, never Valid nor Invalid, saying why, with the peak measured. When
// the history is illegal and opts.VisualizationPath is set, Porcupine's
// visualization is written there (unless the budget stops the search for
// the part to draw: then res.VisualizationWindow says so).
func checkLinearizable(h *AppendHistory, opts Options) LinearizableResult {
	g := startGuard(opts)
	defer g.stop()
	var res LinearizableResult
	t := newListTable(opts)
	inf := h.last + 1
	var pops []porcupine.Operation
	meta := func(a *AppendOp) listMeta {
		tok, known := a.tokenOf()
		return listMeta{process: a.Op.Process, token: tok, known: known, event: a.Op.Invoke.Index}
	}

	// Info appends need to know where their element was observed.
	maybe := map[int64]bool{}
	for i := range h.appends {
		if a := &h.appends[i]; a.Type() == history.Info {
			maybe[a.Element] = true
		}
	}
	seen := h.locate(maybe)

	for i := range h.appends {
		a := &h.appends[i]
		switch a.Type() {
		case history.Ok:
			from, to := t.appended(a.Comp.Read, a.Element)
			pops = append(pops, porcupine.Operation{
				ClientId: clientID(a.Op.Process),
				Input:    listInput{kind: stepAppend, pos: int32(len(pops)), from: from, to: to, element: a.Element},
				Call:     a.Op.Invoke.Time,
				Return:   a.Op.Complete.Time,
				Metadata: meta(a),
			})
		case history.Info:
			prefix, observed := seen[a.Element]
			if !observed {
				res.NoEffect++
				continue
			}
			read, known := a.knownRead()
			if !known {
				read = prefix
				res.Inferred++
			}
			from, to := t.appended(read, a.Element)
			pops = append(pops, porcupine.Operation{
				ClientId: clientID(a.Op.Process),
				Input:    listInput{kind: stepMaybe, pos: int32(len(pops)), from: from, to: to, element: a.Element, inferred: !known},
				Call:     a.Op.Invoke.Time,
				Return:   inf,
				Metadata: meta(a),
			})
			res.Info++
		}
	}
	for _, f := range h.finals {
		pops = append(pops, porcupine.Operation{
			ClientId: clientID(f.Op.Process),
			Input:    listInput{kind: stepRead, pos: int32(len(pops)), from: t.read(f.List)},
			Call:     f.Op.Invoke.Time,
			Return:   f.Op.Complete.Time,
			Metadata: listMeta{process: f.Op.Process, event: f.Op.Invoke.Index},
		})
	}
	res.Ops = len(pops)
	lanes := denseClients(opts.Workers, pops)

	model := t.model()
	s := &search{g: g, pos: func(input any) int { return int(input.(listInput).pos) }}
	var result porcupine.CheckResult
	var info porcupine.LinearizationInfo
	if opts.VisualizationPath != "" {
		result, info = porcupine.CheckOperationsVerbose(s.model(model), pops, opts.Timeout)
	} else {
		result = porcupine.CheckOperationsTimeout(s.model(model), pops, opts.Timeout)
	}
	switch {
	case result != porcupine.Ok && s.aborted.Load():
		// The budget cut the search short: its Illegal means nothing.
		res.Valid = Unknown
		res.Message = fmt.Sprintf("%s (%d info)", g.reason(int(s.reached.Load()), res.Ops), res.Info)
	case result == porcupine.Ok:
		res.Valid = Valid
		res.Message = fmt.Sprintf("linearizable: %d operations (%d of them info), %d info appends left out as no-ops", res.Ops, res.Info, res.NoEffect)
	case result == porcupine.Illegal:
		res.Valid = Invalid
		res.Message = fmt.Sprintf("not linearizable: no order of the %d operations explains every list read", res.Ops)
		if opts.VisualizationPath != "" {
			vmodel, vinfo := model, info
			if len(pops) > vizLimit {
				// Porcupine's page grows with the history: show a window
				// around the first failure instead.
				var ok bool
				vmodel, vinfo, res.VisualizationWindow, ok = failingWindow(t, pops, info, opts.Timeout, g)
				if !ok {
					if res.VisualizationWindow == "" {
						res.VisualizationWindow = fmt.Sprintf("no visualization: %d operations are too many to draw, and no window around the failure fails on its own", len(pops))
					}
					break
				}
			}
			nameLanes(&vinfo, lanes, pops, opts.client)
			if err := porcupine.VisualizePath(vmodel, vinfo, opts.VisualizationPath); err != nil {
				res.Error = fmt.Errorf("checkers: writing the visualization: %w", err).Error()
			} else {
				res.Visualization = opts.visualizationName()
			}
		}
	default:
		res.Valid = Unknown
		res.Message = fmt.Sprintf("timed out after %s checking %d operations (%d info)", opts.Timeout, res.Ops, res.Info)
	}
	return res
}

// clientID is a process as Porcupine's client id, before denseClients.
func clientID(p history.Process) int { return max(int(p), 0) }

// denseClients renumbers the operations' client ids 0, 1, 2, ... across
// parts, each worker's processes (of workers) together in the order the
// harness ran them, then the side writer's and the final reads': Porcupine's
// visualization draws one lane per id up to the largest, and the final
// read's process is 1,000,000. It returns the ids as they were
// (processes), lane i's at i.
func denseClients(workers int, parts ...[]porcupine.Operation) []int {
	var ids []int
	seen := map[int]bool{}
	for _, pops := range parts {
		for _, o := range pops {
			if !seen[o.ClientId] {
				seen[o.ClientId] = true
				ids = append(ids, o.ClientId)
			}
		}
	}
	slices.SortFunc(ids, func(a, b int) int {
		ka, kb := laneKey(a, workers), laneKey(b, workers)
		return cmp.Or(cmp.Compare(ka[0], kb[0]), cmp.Compare(ka[1], kb[1]), cmp.Compare(ka[2], kb[2]))
	})
	lane := make(map[int]int, len(ids))
	for i, id := range ids {
		lane[id] = i
	}
	for _, pops := range parts {
		for i := range pops {
			pops[i].ClientId = lane[pops[i].ClientId]
		}
	}
	return ids
}

// laneKey orders process p's lane: a client process by its worker (of
// workers) and then by how many unknown outcomes came before it, the side
// writer and the final reads after every client, by process.
func laneKey(p, workers int) [3]int {
	if workers > 0 && p >= 0 && p < int(history.FinalRead) {
		return [3]int{0, p % workers, p / workers}
	}
	return [3]int{1, p, 0}
}

// nameLanes labels each lane of Porcupine's visualization with its
// client's name (client, Options.client): lanes[i] is lane i's process
// (denseClients). Porcupine labels its lanes itself, with each lane's
// index (index.js; no option changes it), so each lane begins with an
// annotation, a grey box before every operation of pops, that names its
// client: "w3", "w3 (after an unknown outcome)", "harness".
func nameLanes(info *porcupine.LinearizationInfo, lanes []int, pops []porcupine.Operation, client func(history.Process) string) {
	if len(pops) == 0 {
		return
	}
	first := pops[0].Call
	for _, o := range pops {
		first = min(first, o.Call)
	}
	notes := make([]porcupine.Annotation, len(lanes))
	for i, p := range lanes {
		name := client(history.Process(p))
		notes[i] = porcupine.Annotation{ClientId: i, Start: first - 2, End: first - 1, Description: name,
			Details: "the operations of " + name + " follow in this lane", BackgroundColor: "#e8e8e8"}
	}
	info.AddAnnotations(notes)
}

// Visualization window: above vizLimit operations, Porcupine's visualization
// shows about vizWindow operations around the first failure.
var (
	vizLimit  = 1000
	vizWindow = 400
)

// failingWindow checks a window of about vizWindow operations around where
// the longest partial linearization stopped. The window starts at an ok
// append W, with the model starting at the list W read; operations invoked
// from W on are in it, and so are those invoked earlier that are still open
// when W is invoked, unless the list W read already holds their element
// (their effect is in the starting state). It returns the window's model and
// linearization info when the window fails on its own. The window's check
// is under the guard g: when the budget stops it, the description says so
// and ok is false.
func failingWindow(t *listTable, pops []porcupine.Operation, info porcupine.LinearizationInfo, timeout time.Duration, g *memGuard) (porcupine.Model, porcupine.LinearizationInfo, string, bool) {
	var none porcupine.LinearizationInfo
	partials := info.PartialLinearizations()
	if len(partials) == 0 {
		return porcupine.Model{}, none, "", false
	}
	var longest []int
	for _, l := range partials[0] {
		if len(l) > len(longest) {
			longest = l
		}
	}
	in := make([]bool, len(pops))
	for _, i := range longest {
		if i >= 0 && i < len(pops) {
			in[i] = true
		}
	}
	order := make([]int, len(pops))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pops[a].Call, pops[b].Call) })
	// Where the check got stuck: the first operation, by call, that is not
	// in the longest partial linearization (info appends may stay out).
	stuck := -1
	for pos, i := range order {
		if !in[i] && pops[i].Input.(listInput).kind != stepMaybe {
			stuck = pos
			break
		}
	}
	if stuck < 0 {
		return porcupine.Model{}, none, "", false
	}
	start := -1
	for pos := max(0, stuck-vizWindow/2); pos <= stuck; pos++ {
		if pops[order[pos]].Input.(listInput).kind == stepAppend {
			start = pos
			break
		}
	}
	if start < 0 {
		return porcupine.Model{}, none, "", false
	}
	first := pops[order[start]]
	init := first.Input.(listInput).from
	held := map[int64]bool{}
	for _, e := range t.list(init) {
		held[e] = true
	}
	end := min(len(order), stuck+vizWindow/2)
	var window []porcupine.Operation
	for pos, i := range order[:end] {
		o := pops[i]
		if pos < start && o.Return < first.Call {
			continue // over before W began: its effect, if any, is in W's read
		}
		if in := o.Input.(listInput); in.kind != stepRead && held[in.element] {
			continue
		}
		window = append(window, o)
	}
	m := t.modelFrom(init)
	s := &search{g: g}
	result, winfo := porcupine.CheckOperationsVerbose(s.model(m), window, timeout)
	if s.aborted.Load() {
		return porcupine.Model{}, none, "no visualization: checking the part around the failure exceeded the memory budget", false
	}
	if result != porcupine.Illegal {
		return porcupine.Model{}, none, "", false
	}
	desc := fmt.Sprintf("%d of the %d operations, invoked from %.3fs to %.3fs, starting from the list %s: the part where the check got stuck",
		len(window), len(pops), time.Duration(first.Call).Seconds(), time.Duration(pops[order[end-1]].Call).Seconds(), t.lists[init].describe())
	return m, winfo, desc, true
}
