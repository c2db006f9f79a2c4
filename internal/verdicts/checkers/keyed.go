package checkers

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// KeyedResult is the verdict of a linearizability check on a model
// partitioned by key (CheckRegister, CheckKV): a history is linearizable if
// and only if each key's sub-history is, so each key is checked on its own,
// several at a time.
//
// Valid is Valid only when every key was checked to the end and found
// linearizable and some operation completed ok; a timeout or the memory
// budget (Options.MemoryBudget) gives Unknown, and one failing key gives
// Invalid even when others were not checked.
type KeyedResult struct {
	Verdict
	// Model names the model: "cas-register" or "kv".
	Model string `json:"model"`
	// Ops is the number of operations given. Checked is how many of them
	// went to Porcupine; Info is how many of those had an unknown outcome
	// (maybe, at any time after their call: "returning at infinity").
	// Dropped counts the ones left out because they say nothing: failed
	// operations (they certainly did not happen) and reads with an unknown
	// outcome.
	Ops     int `json:"ops"`
	Checked int `json:"checked"`
	Info    int `json:"info"`
	Dropped int `json:"dropped"`
	// Keys is the number of keys (partitions) with an operation to check;
	// KeysChecked how many of them were checked to the end, one way or the
	// other. The first failing key found stops the check, so an invalid
	// history may have keys not checked.
	Keys        int `json:"keys"`
	KeysChecked int `json:"keys_checked"`
	// FailingKeys is how many keys were found not linearizable (usually
	// one, as the check stops there), and FailingKey the first of them in
	// (byte-wise) key order; both are meaningful only when Valid is
	// Invalid.
	FailingKeys int    `json:"failing_keys"`
	FailingKey  string `json:"failing_key"`
	// Elapsed is how long the whole check took, visualization included.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Visualization is the base name of Porcupine's visualization of the
	// failing keys, when one was asked for and written.
	Visualization string `json:"visualization,omitempty"`
	// Method says what judged the keys when some key was long enough for
	// the frontier search (a register key of frontierMinOps operations or
	// more): MethodFrontier, MethodPorcupine, or both with how many keys
	// each, and why the frontier search left a key to Porcupine. Empty:
	// Porcupine judged every key.
	Method string `json:"method,omitempty"`

	oks int // operations that completed ok
}

// keyedCheck is one partitioned check, prepared by CheckRegister or CheckKV.
type keyedCheck struct {
	model porcupine.Model // a model of one key; its Partition is unused
	keys  []string        // in byte-wise order
	// build returns key p's operations for Porcupine. With meta, each
	// carries metadata for the visualization.
	build func(p int, meta bool) []porcupine.Operation
	// size is how many operations key p has; pos is an operation's
	// position among its key's, from its Porcupine input.
	size func(p int) int
	pos  func(input any) int
	// guard is the check's memory budget (nil: none).
	guard *memGuard
	// frontier, when set, checks key p by the frontier search, which is
	// tried first on keys of frontierMinOps operations or more; describe
	// names an operation it found failing.
	frontier func(p int, deadline time.Time, stop *atomic.Bool) frontierResult
	describe func(op int32) string
}

// keyOutcome is what checking one key found.
type keyOutcome struct {
	// result is Porcupine's: Ok, Illegal or Unknown (timed out, or stopped
	// by the memory budget); "" when the key was not checked to the end
	// because another key failed first.
	result porcupine.CheckResult
	took   time.Duration
	// memory: the key was not checked, or not to the end, because the
	// memory budget was exceeded; reached is how many of its operations
	// (in order) its search got to.
	memory  bool
	reached int
	// frontier: the frontier search judged the key (or was stopped by
	// the time limit or the budget); fallback says why it left the key to
	// Porcupine, and failAt where it found the key failing.
	frontier bool
	fallback string
	failAt   string
}

// run checks every key, several at a time in key order, within
// opts.Timeout in all and the memory budget, and fills res's verdict and
// key figures. There are at least four workers even on fewer cores, so that
// one key whose search explodes does not hold up every other one (Go's
// scheduler shares the cores between them).
//
// As in Porcupine, the first key found failing stops the check: keys not
// started are left out, and keys being checked are cut short (their model
// steps fail from then on, which makes Porcupine's search unwind at once;
// the result of a key cut short is discarded). So FailingKey is the first
// failing key found, not necessarily the first in key order.
//
// The memory budget (c.guard) stops the check the same way, but its keys
// end Unknown, like keys past the time limit: a key whose search was cut
// short by the budget is never reported failing. Keys checked to the end
// before keep their verdict, so one failing key still makes the history
// Invalid; otherwise the result is Unknown, saying why.
func (c *keyedCheck) run(res *KeyedResult, opts Options, start time.Time) {
	n := len(c.keys)
	res.Keys = n
	var deadline time.Time
	if opts.Timeout > 0 {
		deadline = start.Add(opts.Timeout)
	}
	k := c.count(res, c.searchKeys(deadline))
	res.Method = k.method()
	switch {
	case len(k.failing) > 0:
		res.Valid = Invalid
		res.FailingKeys = len(k.failing)
		res.FailingKey = c.keys[k.failing[0]]
		res.Message = failingMessage(res, k)
		if opts.VisualizationPath != "" {
			c.visualize(res, k, opts, deadline)
		}
	case k.memory > 0:
		res.Valid = Unknown
		res.Message = c.guard.reason(k.checked, res.Checked)
		if n > 1 {
			res.Message += fmt.Sprintf("; %d of %s checked to the end, none failing; %d not finished", res.KeysChecked, plural(n, "key"), k.unfinished)
		}
	case k.unfinished > 0:
		res.Valid = Unknown
		res.Message = fmt.Sprintf("timed out after %s with %d of %s checked to the end, none failing; %d not finished",
			opts.Timeout, res.KeysChecked, plural(n, "key"), k.unfinished)
	default:
		res.Valid = Valid
		res.Message = fmt.Sprintf("linearizable: %s on %s", plural(res.Checked, "operation"), plural(n, "key"))
		var notes []string
		if res.Info > 0 {
			notes = append(notes, fmt.Sprintf("%d of them with an unknown outcome", res.Info))
		}
		if res.Dropped > 0 {
			notes = append(notes, fmt.Sprintf("%d failed operations and reads with an unknown outcome left out", res.Dropped))
		}
		if len(notes) > 0 {
			res.Message += " (" + strings.Join(notes, "; ") + ")"
		}
	}
}

// searchKeys checks every key, several at a time, until one fails (see run),
// and returns each key's outcome.
func (c *keyedCheck) searchKeys(deadline time.Time) []keyOutcome {
	n := len(c.keys)
	out := make([]keyOutcome, n)
	var next atomic.Int64
	var stop atomic.Bool // a key failed
	var wg sync.WaitGroup
	for range min(max(runtime.GOMAXPROCS(0), 4), n) {
		wg.Go(func() {
			for {
				p := int(next.Add(1) - 1)
				if p >= n || stop.Load() {
					return
				}
				out[p] = c.searchKey(p, deadline, &stop)
			}
		})
	}
	wg.Wait()
	return out
}

// searchKey checks key p in what is left of the time limit; a failure
// sets stop, which cuts the other keys' searches short.
func (c *keyedCheck) searchKey(p int, deadline time.Time, stop *atomic.Bool) keyOutcome {
	if c.guard.tripped() {
		return keyOutcome{result: porcupine.Unknown, memory: true}
	}
	var limit time.Duration
	if !deadline.IsZero() {
		if limit = time.Until(deadline); limit <= 0 {
			return keyOutcome{result: porcupine.Unknown}
		}
	}
	var fallback string
	if c.frontier != nil && c.size(p) >= frontierMinOps {
		t := time.Now()
		f := c.frontier(p, deadline, stop)
		o := keyOutcome{result: f.result, took: time.Since(t), memory: f.memory, reached: f.reached, frontier: true}
		switch {
		case f.cut:
			return keyOutcome{frontier: true}
		case f.result == porcupine.Illegal:
			o.failAt = c.describe(f.fail)
			stop.Store(true)
			return o
		case f.result != "":
			return o
		}
		fallback = f.why
		if !deadline.IsZero() {
			if limit = time.Until(deadline); limit <= 0 {
				return keyOutcome{result: porcupine.Unknown, fallback: fallback}
			}
		}
	}
	// The search's steps fail once another key failed (cut) or the budget
	// is exceeded (aborted): then an Illegal result means nothing.
	s := &search{g: c.guard, stop: stop, pos: c.pos}
	t := time.Now()
	r := porcupine.CheckOperationsTimeout(s.model(c.model), c.build(p, false), limit)
	o := keyOutcome{took: time.Since(t), reached: int(s.reached.Load()), fallback: fallback}
	switch {
	case r != porcupine.Ok && s.aborted.Load():
		r, o.memory = porcupine.Unknown, true
	case r == porcupine.Illegal && s.cut.Load():
		r = ""
	case r == porcupine.Illegal:
		stop.Store(true)
	}
	o.result = r
	return o
}

// keyCounts is what the keys' outcomes add up to.
type keyCounts struct {
	// failing are the failing keys' positions.
	failing []int
	// unfinished counts the keys not checked to the end, memory those of
	// them the budget stopped.
	unfinished, memory int
	// slowest is the longest a failing key's search took.
	slowest time.Duration
	// checked counts the operations of keys checked to the end, or as far
	// as the budget let them.
	checked int
	// frontier counts the keys the frontier search judged (or was stopped
	// on), porcupine the others that Porcupine got to; fallbacks the keys
	// the frontier search left to Porcupine, fallback the first such key's
	// reason (in key order). failAt is where the frontier search found the
	// first failing key failing ("" when Porcupine judged it).
	frontier, porcupine, fallbacks int
	fallback                       string
	failAt                         string
	// byFrontier marks the keys the frontier search judged.
	byFrontier []bool
}

// count adds up the keys' outcomes, counting the keys checked to the end
// in res.
func (c *keyedCheck) count(res *KeyedResult, out []keyOutcome) keyCounts {
	var k keyCounts
	k.byFrontier = make([]bool, len(out))
	for p, o := range out {
		switch {
		case o.frontier && o.result != "":
			k.frontier++
			k.byFrontier[p] = true
		case o.result != "":
			k.porcupine++
		}
		if o.fallback != "" {
			if k.fallbacks == 0 {
				k.fallback = fmt.Sprintf("the frontier search left key %q to Porcupine: %s", c.keys[p], o.fallback)
			}
			k.fallbacks++
		}
		switch o.result {
		case porcupine.Ok:
			res.KeysChecked++
			k.checked += c.size(p)
		case porcupine.Illegal:
			res.KeysChecked++
			if len(k.failing) == 0 {
				k.failAt = o.failAt
			}
			k.failing = append(k.failing, p)
			k.slowest = max(k.slowest, o.took)
			k.checked += c.size(p)
		case porcupine.Unknown:
			k.unfinished++
			if o.memory {
				k.memory++
				k.checked += o.reached
			}
		}
	}
	return k
}

// method is KeyedResult.Method: "" when no key went to the frontier
// search.
func (k keyCounts) method() string {
	var m string
	switch {
	case k.frontier == 0 && k.fallbacks == 0:
		return ""
	case k.frontier == 0:
		m = MethodPorcupine
	case k.porcupine == 0:
		m = MethodFrontier
	default:
		m = fmt.Sprintf("%s on %s, %s on %d", MethodFrontier, plural(k.frontier, "key"), MethodPorcupine, k.porcupine)
	}
	if k.fallbacks > 0 {
		m += " (" + k.fallback
		if k.fallbacks > 1 {
			m += fmt.Sprintf("; and %s more", plural(k.fallbacks-1, "key"))
		}
		m += ")"
	}
	return m
}

// failingMessage says which key failed, and how far the check got.
func failingMessage(res *KeyedResult, k keyCounts) string {
	n := res.Keys
	m := "not linearizable: no order of the operations"
	if n > 1 || res.FailingKey != "" {
		m += fmt.Sprintf(" on key %q", res.FailingKey)
	}
	m += " explains what they returned"
	if len(k.failing) > 1 {
		m += fmt.Sprintf(" (nor on %s)", plural(len(k.failing)-1, "other key"))
	}
	if k.failAt != "" {
		m += "; none explains the operations up to the return of " + k.failAt
	}
	if n > 1 {
		m += fmt.Sprintf("; %d of %s checked", res.KeysChecked, plural(n, "key"))
		if k.unfinished > k.memory {
			m += fmt.Sprintf(", %d timed out", k.unfinished-k.memory)
		}
		if k.memory > 0 {
			m += fmt.Sprintf(", %d stopped by the memory budget", k.memory)
		}
		if res.KeysChecked+k.unfinished < n {
			m += ", checking stopped at the first failing key"
		}
	}
	return m
}

// visualize checks the failing keys again, recording what Porcupine needs
// to draw them, and writes the visualization of those keys alone. The
// replay gets what is left of the time limit, but at least twice what the
// slowest failing key took the first time. Keys the frontier search judged
// are not replayed: they are too long for Porcupine.
func (c *keyedCheck) visualize(res *KeyedResult, k keyCounts, opts Options, deadline time.Time) {
	slowest := k.slowest
	var failing []int
	for _, p := range k.failing {
		if !k.byFrontier[p] {
			failing = append(failing, p)
		}
	}
	if len(failing) == 0 {
		p := k.failing[0]
		res.Error = fmt.Sprintf("checkers: visualization not written: the frontier search judged key %q, whose %s are too many for Porcupine to replay", c.keys[p], plural(c.size(p), "operation"))
		return
	}
	var all []porcupine.Operation
	parts := make([][]porcupine.Operation, len(failing))
	for i, p := range failing {
		parts[i] = c.build(p, true)
	}
	lanes := denseClients(opts.Workers, parts...)
	for _, part := range parts {
		all = append(all, part...)
	}
	s := &search{g: c.guard}
	m := s.model(c.model)
	// The history given is the parts concatenated, so the parts are its
	// partition.
	m.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	var limit time.Duration
	if !deadline.IsZero() {
		limit = max(time.Until(deadline), 2*slowest+100*time.Millisecond)
	}
	r, info := porcupine.CheckOperationsVerbose(m, all, limit)
	if s.aborted.Load() {
		res.Error = "checkers: visualization not written: replaying the failing keys exceeded the memory budget"
		return
	}
	if r != porcupine.Illegal {
		res.Error = fmt.Sprintf("checkers: visualization not written: replaying the failing keys gave %s", r)
		return
	}
	nameLanes(&info, lanes, all, opts.client)
	if err := porcupine.VisualizePath(m, info, opts.VisualizationPath); err != nil {
		res.Error = fmt.Errorf("checkers: writing the visualization: %w", err).Error()
		return
	}
	res.Visualization = opts.visualizationName()
}

// groupByKey returns the distinct keys of the ops that keep selects, in
// byte-wise order, and for each key the indices of its ops, in order.
func groupByKey(n int, key func(i int) string, keep []bool) (keys []string, parts [][]int32) {
	ids := map[string]int32{}
	of := make([]int32, n)
	var count []int32
	for i := range n {
		if !keep[i] {
			continue
		}
		k := key(i)
		id, ok := ids[k]
		if !ok {
			id = int32(len(keys))
			ids[k] = id
			keys = append(keys, k)
			count = append(count, 0)
		}
		of[i] = id
		count[id]++
	}
	order := make([]int32, len(keys)) // order[rank] = id
	for id := range order {
		order[id] = int32(id)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(keys[a], keys[b]) })
	rank := make([]int32, len(keys))
	sorted := make([]string, len(keys))
	for r, id := range order {
		rank[id] = int32(r)
		sorted[r] = keys[id]
	}
	// One backing array for every part.
	all := make([]int32, 0, n)
	parts = make([][]int32, len(keys))
	for r, id := range order {
		parts[r] = all[len(all) : len(all) : len(all)+int(count[id])]
		all = all[:len(all)+int(count[id])]
	}
	for i := range n {
		if keep[i] {
			r := rank[of[i]]
			parts[r] = append(parts[r], int32(i))
		}
	}
	return sorted, parts
}

// classify says how a check treats an operation of type t: checked as it
// is (Ok), checked as "maybe, returning at infinity" (Info), or dropped.
// Reads with an unknown outcome are dropped: a read has no effect, so one
// whose result is unknown tells nothing. Failed operations certainly did
// not happen and are dropped too.
func classify(t history.Type, read bool) (keep, maybe bool, err error) {
	switch t {
	case history.Ok:
		return true, false, nil
	case history.Info:
		return !read, !read, nil
	case history.Fail:
		return false, false, nil
	}
	return false, false, fmt.Errorf("type %q: want ok, fail or info", t)
}

// opView is what tally needs to know of an operation.
type opView struct {
	t         history.Type
	read      bool // a read or get: no effect
	known     bool // the function is one the model knows
	fn        uint8
	process   int
	key       string
	call, ret int64
}

// tally classifies n operations (see classify), counts them into res, and
// returns which ones to check and which of those are maybe. An operation
// that cannot be checked makes res Unknown with the error, which tally also
// returns.
func tally(res *KeyedResult, n int, view func(i int) opView) (keep, maybe []bool, err error) {
	keep = make([]bool, n)
	maybe = make([]bool, n)
	for i := range n {
		o := view(i)
		var k, m bool
		switch {
		case !o.known:
			err = fmt.Errorf("unknown function %d", o.fn)
		case o.t == history.Ok && o.ret < o.call:
			err = fmt.Errorf("returns at %d, before its call at %d", o.ret, o.call)
		default:
			k, m, err = classify(o.t, o.read)
		}
		if err != nil {
			err = fmt.Errorf("checkers: %w: operation %d: %w", ErrBadHistory, i, err)
			res.Verdict = unknown(err)
			return nil, nil, err
		}
		keep[i], maybe[i] = k, m
		switch {
		case o.t == history.Ok:
			res.oks++
		case !k:
			res.Dropped++
		case m:
			res.Info++
		}
	}
	ss := spans{
		n: n,
		at: func(i int) span {
			// Only an ok operation's return time is known to be its own
			// (an imported fail or info may carry none).
			o := view(i)
			return span{process: o.process, key: o.key, call: o.call, ret: o.ret, returned: o.t == history.Ok}
		},
		what: func(i int) string { return fmt.Sprintf("operation %d on key %q", i, view(i).key) },
	}
	if err := checkSpans(ss); err != nil {
		res.Verdict = assumptionBroken(err)
		return nil, nil, err
	}
	res.Checked = n - res.Dropped
	return keep, maybe, nil
}

// observed sets res.Keys and reports whether the history has anything to
// check. A history in which no operation completed ok observed nothing and
// shows nothing: then res is Unknown and final.
func (res *KeyedResult) observed(keys int, start time.Time) bool {
	res.Keys = keys
	if res.oks > 0 {
		return true
	}
	res.Valid = Unknown
	if res.Ops == 0 {
		res.Message = "cannot tell: the history has no operations"
	} else {
		res.Message = fmt.Sprintf("cannot tell: none of the %d operations completed ok", res.Ops)
	}
	res.Elapsed = time.Since(start)
	return false
}

// plural returns "1 key", "2 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
