package checkers

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
)

// laOp is a generated lock-append critical section: it read a list and
// appended its element, taking effect at at (if it did).
type laGenOp struct {
	process       int
	element       int64
	call, at, ret int64
	typ           history.Type
	effect        bool
	read          []int64
}

// randomLockAppend builds a small lock-append history of 3 processes: each
// runs sections one after another, each taking effect at a random point
// between its call and its return (reading the list as it is there), ok,
// info (half of those take effect, maybe long after the info) or fail (no
// effect); then a final read. Half the histories have one ok section's read
// list replaced by another list the history saw, which may or may not
// leave them linearizable: the exhaustive search decides.
func randomLockAppend(rng *rand.Rand) ([]history.Event, []laGenOp, []int64) {
	n := 4 + rng.IntN(5)
	clock := []int64{rng.Int64N(5), rng.Int64N(5), rng.Int64N(5)}
	procs := []int{0, 1, 2}
	next := 3
	var ops []laGenOp
	for i := range n {
		p := i % 3
		call := clock[p] + rng.Int64N(10)
		at := call + 1 + rng.Int64N(20)
		ret := at + 1 + rng.Int64N(20)
		o := laGenOp{process: procs[p], element: int64(i + 1), call: call, at: at, ret: ret, typ: history.Ok, effect: true}
		switch r := rng.IntN(10); {
		case r < 2:
			o.typ = history.Info
			o.effect = rng.IntN(2) == 0
			if o.effect {
				o.at = call + 1 + rng.Int64N(200)
			}
			procs[p] = next
			next++
		case r < 3:
			o.typ, o.effect = history.Fail, false
		}
		clock[p] = ret
		ops = append(ops, o)
	}
	order := slices.Clone(ops)
	slices.SortStableFunc(order, func(a, b laGenOp) int { return cmp.Compare(a.at, b.at) })
	state := []int64{}
	var seen [][]int64
	reads := map[int64][]int64{}
	for _, o := range order {
		reads[o.element] = slices.Clone(state)
		seen = append(seen, slices.Clone(state))
		if o.effect {
			state = append(state, o.element)
		}
	}
	for i := range ops {
		ops[i].read = reads[ops[i].element]
	}
	if rng.IntN(2) == 0 {
		var oks []int
		for i, o := range ops {
			if o.typ == history.Ok {
				oks = append(oks, i)
			}
		}
		if len(oks) > 0 {
			i := oks[rng.IntN(len(oks))]
			ops[i].read = slices.Clone(seen[rng.IntN(len(seen))])
		}
	}
	var end int64
	for _, o := range ops {
		end = max(end, o.ret, o.at)
	}
	type ev struct {
		t int64
		e history.Event
	}
	var evs []ev
	add := func(t int64, p int, typ history.Type, f string, v any) {
		evs = append(evs, ev{t, history.Event{Time: t, Process: history.Process(p), Type: typ, F: f, Value: mustJSON(v)}})
	}
	for _, o := range ops {
		add(o.call, o.process, history.Invoke, lockappend.FAppend, lockappend.Invoke{Element: o.element})
		c := lockappend.Completion{Element: o.element}
		switch o.typ {
		case history.Ok:
			c.Read = o.read
		case history.Info:
			c.Read, c.Reason = o.read, "write-unknown"
		default:
			c.Reason = lockappend.ReasonNotAcquired
		}
		add(o.ret, o.process, o.typ, lockappend.FAppend, c)
	}
	add(end+1, 1_000_000, history.Invoke, lockappend.FFinalRead, nil)
	add(end+2, 1_000_000, history.Ok, lockappend.FFinalRead, lockappend.ReadValue{Value: state})
	slices.SortStableFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	out := make([]history.Event, len(evs))
	for i, e := range evs {
		out[i] = e.e
		out[i].Index = i
	}
	return out, ops, state
}

// bruteLockAppend decides by exhaustive search whether the sections and the
// final read are linearizable on the append-list model: every ok section
// and the final read are placed in an order that respects real time, each
// legal where it is placed (a section only on the list it read, which then
// gains its element; the final read only on its list); an info section may
// be placed anywhere after the operations that returned before its call,
// or nowhere; fail sections are not placed.
func bruteLockAppend(ops []laGenOp, final []int64, finalCall int64) bool {
	var xs []laGenOp
	for _, o := range ops {
		if o.typ != history.Fail {
			xs = append(xs, o)
		}
	}
	// The final read is placed like an ok section of no element.
	xs = append(xs, laGenOp{element: 0, call: finalCall, ret: finalCall + 1, typ: history.Ok, read: final})
	failed := map[string]bool{}
	var search func(placed uint64, state []int64) bool
	search = func(placed uint64, state []int64) bool {
		done := true
		for i, o := range xs {
			if placed&(1<<i) == 0 && o.typ == history.Ok {
				done = false
			}
		}
		if done {
			return true
		}
		key := fmt.Sprint(placed, state)
		if failed[key] {
			return false
		}
		for i, o := range xs {
			if placed&(1<<i) != 0 {
				continue
			}
			first := true
			for j, p := range xs {
				if j != i && placed&(1<<j) == 0 && p.typ == history.Ok && p.ret < o.call {
					first = false
				}
			}
			if !first || !slices.Equal(state, o.read) {
				continue
			}
			next := state
			if o.element != 0 {
				next = append(slices.Clone(state), o.element)
			}
			if search(placed|1<<i, next) {
				return true
			}
		}
		failed[key] = true
		return false
	}
	return search(0, []int64{})
}

// The append-list model agrees with the exhaustive search on many small
// random histories.
func TestLockAppendOracle(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 1500
	}
	rng := rand.New(rand.NewPCG(11, 11))
	count := map[Validity]int{}
	for i := range n {
		events, ops, final := randomLockAppend(rng)
		got := parseHist(t, pair(t, events)).Linearizable(Options{})
		want := Invalid
		if bruteLockAppend(ops, final, events[len(events)-2].Time) {
			want = Valid
		}
		count[want]++
		if got.Valid != want {
			var b strings.Builder
			for _, o := range ops {
				fmt.Fprintf(&b, "p%d e%d %s [%d,%d] at %d effect %t read %v\n", o.process, o.element, o.typ, o.call, o.ret, o.at, o.effect, o.read)
			}
			t.Fatalf("history %d: got %s (%s), the exhaustive search says %s; final %v\n%s", i, got.Valid, got.Message, want, final, b.String())
		}
	}
	t.Logf("%d valid, %d invalid", count[Valid], count[Invalid])
	if count[Valid] < n/5 || count[Invalid] < n/5 {
		t.Errorf("unbalanced: %d valid, %d invalid", count[Valid], count[Invalid])
	}
}

func mustJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
