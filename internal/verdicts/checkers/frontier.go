package checkers

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// The frontier search: a linearizability check of one register key whose
// memory grows with how many operations may take effect at once, not with
// the history's length. Porcupine's search keeps, for every state it
// reaches, a bitset as long as the key's history: a long key with few
// processes (a two-process register log of a million operations is almost
// sequential) needs hundreds of gigabytes there, and here a few kilobytes.
//
// It goes through the key's events in time order, keeping the frontier:
// every configuration the history so far can be in, each the register's
// value and which of the operations that may still take effect ("slots")
// already have. An operation in flight takes a slot at its call; at its
// return, every configuration must have linearized it: each is extended by
// linearizing operations of open slots, one legal step at a time, until
// that one is linearized (just-in-time linearization: an operation is
// placed only when a return forces it, which loses no order, as a later
// place stays open to it until then). The history is linearizable exactly
// when the frontier never empties; the first return at which it does is
// the first point no order explains.
//
// An info write or cas may take effect at any time after its call, or
// never: it keeps its slot while it can still matter. It stops mattering
// once no operation can still need the value it writes (need, below): then
// it is dropped, which loses no order (infoNeeds says why). A
// configuration that applied a subset of the info operations another, with
// the same value and the same ok operations linearized, applied is
// dropped: the other can do all it can.
//
// Its precondition is a narrow history: at most frontierMaxWidth slots in
// use at once, and at most frontierMaxConfigs configurations in one
// extension. A key that breaks it is left to Porcupine, with the reason.
// Values written need not be unique, and cas is a step like any other.

const (
	// frontierMinOps is the length from which a key is checked by the
	// frontier search first: below it Porcupine is fast and its
	// visualization can be drawn.
	frontierMinOps = 10_000
	// frontierMaxWidth bounds the slots in use at once: operations in
	// flight, and info operations that may still matter.
	frontierMaxWidth = 24
	// frontierMaxConfigs bounds the configurations one return's extension
	// may reach.
	frontierMaxConfigs = 1 << 16
	// frontierBaseVisits and frontierVisitsPerOp bound the configurations
	// all extensions reach together, up to the k-th operation: base +
	// perOp*k. A two-process history reaches a few an operation.
	frontierBaseVisits  = 1 << 22
	frontierVisitsPerOp = 64
	// frontierCheckEvery is how many operations go by between two looks
	// at the time limit, the memory budget and the other keys.
	frontierCheckEvery = 1 << 12
)

// MethodFrontier and MethodPorcupine name what judged a key.
const (
	MethodFrontier  = "frontier search"
	MethodPorcupine = "Porcupine"
)

// frontierResult is what the frontier search found on a key.
type frontierResult struct {
	// result is Ok or Illegal when the search decided, Unknown when the
	// time limit or the memory budget (memory) stopped it, "" when another
	// key failed first (cut) or the precondition did not hold (why).
	result porcupine.CheckResult
	why    string
	memory bool
	cut    bool
	// fail is the operation (an index in the check's ops) at whose return
	// no order explains the history: Illegal only.
	fail int32
	// reached is how many of the key's operations were gone through;
	// width the most slots in use at once.
	reached int
	width   int
}

// fconf is a configuration: the register's value, and which slots'
// operations took effect (ok ones: linearized; info ones: applied).
type fconf struct {
	v    RegisterValue
	mask uint32
}

// fslot is an operation that may take effect.
type fslot struct {
	op   int32 // in the check's ops
	info bool
	kind regKind
	want RegisterValue
	next RegisterValue
	ret  int64 // an ok operation's return
	need int64 // an info operation's: past it, it is dropped
}

// step applies the slot's operation to v: the new value, and whether it is
// legal. An info cas whose old value is not v is not applied: it would
// change nothing, and not applying it keeps it available.
func (s *fslot) step(v RegisterValue) (RegisterValue, bool) {
	switch s.kind {
	case regRead:
		return v, v == s.want
	case regWrite:
		return s.next, true
	default: // regCAS, regMaybeCAS
		return s.next, v == s.want
	}
}

// frontier is one key's search.
type frontier struct {
	slots    [frontierMaxWidth]fslot
	used     uint32 // slots in use
	infos    uint32 // of them, info operations
	confs    []fconf
	next     []fconf
	stack    []fconf
	seen     []fconf // small extensions: linear search
	seenMap  map[fconf]struct{}
	width    int
	overflow bool // an extension went past frontierMaxConfigs, or visits past maxVisits
	// visits counts the configurations reached in all extensions so far;
	// past maxVisits the search gives up (a history whose frontier stays
	// wide is Porcupine's: time spent here would be taken from it).
	visits, maxVisits int
}

// frontierRegister checks one key's operations (idx, in ops; maybe marks
// the info ones) by the frontier search, until deadline (zero: none),
// within the guard's budget, cut short once stop is set.
func frontierRegister(ops []RegisterOp, idx []int32, maybe []bool, deadline time.Time, g *memGuard, stop *atomic.Bool) frontierResult {
	byCall := func(a, b int32) int { return cmp.Compare(ops[a].Call, ops[b].Call) }
	order := idx
	if !slices.IsSortedFunc(order, byCall) {
		order = slices.Clone(idx)
		slices.SortStableFunc(order, byCall)
	}
	need := infoNeeds(ops, order, maybe)
	f := &frontier{confs: []fconf{{}}}
	var res frontierResult
	// closeUntil returns, in time order, the operations in flight that
	// return before t (all of them for MaxInt64); it reports false when
	// the search ended.
	closeUntil := func(t int64) bool {
		for {
			b, ret := -1, int64(math.MaxInt64)
			for m := f.used &^ f.infos; m != 0; m &= m - 1 {
				j := bits.TrailingZeros32(m)
				if r := f.slots[j].ret; r < t && (b < 0 || r < ret) {
					b, ret = j, r
				}
			}
			if b < 0 {
				return true
			}
			f.retire(ret)
			op := f.slots[b].op
			if !f.returns(b) {
				switch {
				case f.overflow && f.visits > f.maxVisits:
					res.why = fmt.Sprintf("by the return at %d, its extensions had reached %d configurations, more than %d plus %d an operation", ret, f.visits, frontierBaseVisits, frontierVisitsPerOp)
				case f.overflow:
					res.why = fmt.Sprintf("the operations that could take effect before the return at %d reach more than %d configurations", ret, frontierMaxConfigs)
				default:
					res.result, res.fail = porcupine.Illegal, op
				}
				return false
			}
		}
	}
	for k, i := range order {
		f.maxVisits = frontierBaseVisits + frontierVisitsPerOp*k
		if k%frontierCheckEvery == 0 {
			switch {
			case stop != nil && stop.Load():
				res.cut = true
			case g.tripped():
				res.result, res.memory = porcupine.Unknown, true
			case !deadline.IsZero() && time.Now().After(deadline):
				res.result = porcupine.Unknown
			}
			if res.cut || res.result != "" {
				res.reached, res.width = k, f.width
				return res
			}
		}
		o := &ops[i]
		if !closeUntil(o.Call) {
			res.reached, res.width = k, f.width
			return res
		}
		f.retire(o.Call)
		s := fslot{op: i, info: maybe[i], ret: o.Return}
		switch o.F {
		case RegisterRead:
			s.kind, s.want = regRead, o.Value
		case RegisterWrite:
			s.kind, s.next = regWrite, o.Value
		default:
			s.kind, s.want, s.next = regCAS, o.Old, o.Value
		}
		if s.info {
			s.need = need[o.Value]
			if s.need < o.Call {
				continue // nothing can ever need what it writes
			}
		}
		if f.used == 1<<frontierMaxWidth-1 {
			res.why = fmt.Sprintf("more than %d operations could take effect at once at %d (operations in flight, and info operations whose value may still be read)", frontierMaxWidth, o.Call)
			res.reached, res.width = k, f.width
			return res
		}
		j := bits.TrailingZeros32(^f.used)
		f.slots[j] = s
		f.used |= 1 << j
		if s.info {
			f.infos |= 1 << j
		}
		f.width = max(f.width, bits.OnesCount32(f.used))
	}
	res.reached = len(order)
	f.maxVisits = frontierBaseVisits + frontierVisitsPerOp*len(order)
	if closeUntil(math.MaxInt64) {
		res.result = porcupine.Ok
	}
	res.width = f.width
	return res
}

// retire drops the info operations that nothing after t can need.
func (f *frontier) retire(t int64) {
	var drop uint32
	for m := f.infos; m != 0; m &= m - 1 {
		j := bits.TrailingZeros32(m)
		if f.slots[j].need < t {
			drop |= 1 << j
		}
	}
	if drop == 0 {
		return
	}
	for i := range f.confs {
		f.confs[i].mask &^= drop
	}
	f.used &^= drop
	f.infos &^= drop
	f.confs = f.prune(f.confs)
}

// returns makes every configuration linearize slot b's operation, which
// returns now, and frees the slot. It reports whether any configuration
// could (false also when the extension overflowed).
func (f *frontier) returns(b int) bool {
	bit := uint32(1) << b
	f.next = f.next[:0]
	f.stack = f.stack[:0]
	f.seen = f.seen[:0]
	if len(f.seenMap) > 0 {
		f.seenMap = nil
	}
	for _, c := range f.confs {
		if c.mask&bit != 0 {
			f.next = append(f.next, fconf{c.v, c.mask &^ bit})
		} else if f.visit(c) {
			f.stack = append(f.stack, c)
		}
	}
	for len(f.stack) > 0 {
		c := f.stack[len(f.stack)-1]
		f.stack = f.stack[:len(f.stack)-1]
		open := f.used &^ c.mask
		for m := open; m != 0; m &= m - 1 {
			j := bits.TrailingZeros32(m)
			if f.infos&(1<<j) != 0 && f.twin(j, open) {
				continue
			}
			v, ok := f.slots[j].step(c.v)
			if !ok {
				continue
			}
			d := fconf{v, c.mask | 1<<j}
			switch {
			case j == b:
				f.next = append(f.next, fconf{d.v, d.mask &^ bit})
			case f.visit(d):
				f.stack = append(f.stack, d)
			}
			if f.overflow {
				return false
			}
		}
	}
	if f.overflow {
		return false
	}
	f.used &^= bit
	f.confs, f.next = f.prune(f.next), f.confs
	return len(f.confs) > 0
}

// twin reports whether an open slot below info slot j holds an identical
// info operation (same function and values). Identical info operations
// are alike in every way that matters (their values are needed as long),
// so applying the lowest open one first loses no order, and keeps the
// configurations from counting which of them were applied.
func (f *frontier) twin(j int, open uint32) bool {
	s := &f.slots[j]
	for m := open & f.infos & (1<<j - 1); m != 0; m &= m - 1 {
		t := &f.slots[bits.TrailingZeros32(m)]
		if t.kind == s.kind && t.want == s.want && t.next == s.next {
			return true
		}
	}
	return false
}

// visit records c as reached in this extension; it reports whether it is
// new.
func (f *frontier) visit(c fconf) bool {
	f.visits++
	if f.visits > f.maxVisits {
		f.overflow = true
	}
	if f.seenMap == nil {
		if slices.Contains(f.seen, c) {
			return false
		}
		f.seen = append(f.seen, c)
		if len(f.seen) > 64 {
			f.seenMap = make(map[fconf]struct{}, 256)
			for _, s := range f.seen {
				f.seenMap[s] = struct{}{}
			}
		}
		return true
	}
	if _, ok := f.seenMap[c]; ok {
		return false
	}
	f.seenMap[c] = struct{}{}
	if len(f.seenMap) > frontierMaxConfigs {
		f.overflow = true
	}
	return true
}

// prune sorts cs, drops duplicates, and drops each configuration that
// another with the same value and the same ok operations linearized
// dominates: one that applied a subset of its info operations.
func (f *frontier) prune(cs []fconf) []fconf {
	if len(cs) <= 1 {
		return cs
	}
	infos := f.infos
	slices.SortFunc(cs, func(a, b fconf) int {
		return cmp.Or(cmp.Compare(b2i(a.v.Present), b2i(b.v.Present)), cmp.Compare(a.v.Int, b.v.Int),
			cmp.Compare(a.mask&^infos, b.mask&^infos), cmp.Compare(bits.OnesCount32(a.mask&infos), bits.OnesCount32(b.mask&infos)), cmp.Compare(a.mask, b.mask))
	})
	out := cs[:0]
	group := 0 // where the current group (same value, same ok operations) starts in out
	for _, c := range cs {
		if len(out) > group {
			if g := out[group]; g.v != c.v || g.mask&^infos != c.mask&^infos {
				group = len(out)
			}
		}
		// Within a group, configurations come by how many info operations
		// they applied: a dominating one comes first.
		dominated := false
		for _, d := range out[group:] {
			if d.mask&infos&^(c.mask&infos) == 0 {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, c)
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// infoNeeds returns, for the value each info operation of the key writes,
// the time past which no operation can need it (math.MaxInt64: never).
//
// An ok read of v or an ok cas from v needs v until its return; an info cas
// from v to u needs v as long as u is needed (it may take effect until
// then); a cycle of info cas needs its values for ever. Dropping an info
// operation i that writes v once that time has passed loses no order: take
// any order that applies i later, at a point p. Until the next write, the
// value there is v, or what info cas from v wrote; an ok read or cas of one
// of those values would return after p, past the time its value is needed
// for, so there is none: only info cas and writes. Moving i and those info
// cas to the end of the order (where an info operation may always go, to no
// effect) leaves every ok operation's value as it was. Repeating this for
// each operation applied past its time gives an order that the search,
// which drops them, explores.
func infoNeeds(ops []RegisterOp, order []int32, maybe []bool) map[RegisterValue]int64 {
	need := map[RegisterValue]int64{}
	for _, i := range order {
		if maybe[i] {
			need[ops[i].Value] = math.MinInt64
		}
	}
	if len(need) == 0 {
		return need
	}
	edges := map[RegisterValue][]RegisterValue{} // info cas: old -> new
	for _, i := range order {
		o := &ops[i]
		var v RegisterValue
		switch {
		case maybe[i]:
			if o.F == RegisterCAS {
				edges[o.Old] = append(edges[o.Old], o.Value)
			}
			continue
		case o.F == RegisterRead:
			v = o.Value
		case o.F == RegisterCAS:
			v = o.Old
		default:
			continue
		}
		if n, ok := need[v]; ok {
			need[v] = max(n, o.Return)
		}
	}
	if len(edges) == 0 {
		return need
	}
	if len(edges) > 4096 {
		// Too many to follow: every info operation may matter to the end.
		for v := range need {
			need[v] = math.MaxInt64
		}
		return need
	}
	const (
		onPath = 1
		done   = 2
	)
	mark := map[RegisterValue]uint8{}
	var visit func(v RegisterValue) int64
	visit = func(v RegisterValue) int64 {
		switch mark[v] {
		case onPath:
			return math.MaxInt64 // a cycle
		case done:
			return need[v]
		}
		mark[v] = onPath
		n, ok := need[v]
		if !ok {
			n = math.MinInt64
		}
		for _, u := range edges[v] {
			n = max(n, visit(u))
		}
		mark[v] = done
		if ok {
			need[v] = n
		}
		return n
	}
	for v := range need {
		visit(v)
	}
	return need
}
