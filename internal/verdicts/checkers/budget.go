package checkers

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// A check's memory budget (Options.MemoryBudget). Porcupine's search keeps
// a cache entry, with a bitset as long as the history, for every state it
// reaches: on one long key its memory grows with the square of the
// history's length (a 1M-operation sequential register history needs
// 125 KB an operation), and Porcupine v1.3.1 bounds only its time. So a
// guard watches the process's memory while the check runs; past the budget
// every model step fails from then on, which makes Porcupine's search
// unwind at once, and the verdict is Unknown with the reason. A search cut
// short that way ends "illegal", which means nothing: it is never reported
// as Invalid.

// DefaultMemoryBudget is the memory budget a check gets unless told
// otherwise: a quarter of the machine's memory (MemTotal in /proc/meminfo,
// or the cgroup's memory limit when that is lower), or 4 GiB when neither
// can be read. It is read once.
func DefaultMemoryBudget() uint64 { return defaultBudget() }

// MemoryBudget is the budget a setting asks for (--check-memory: nil the
// default, DefaultMemoryBudget; 0 no bound).
func MemoryBudget(set *uint64) uint64 {
	if set == nil {
		return DefaultMemoryBudget()
	}
	return *set
}

var defaultBudget = sync.OnceValue(func() uint64 {
	total := memTotal()
	if l := cgroupLimit(); l > 0 && (total == 0 || l < total) {
		total = l
	}
	if total == 0 {
		return 4 << 30
	}
	return total / 4
})

// memTotal is /proc/meminfo's MemTotal in bytes (0: unknown).
func memTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil || kb > math.MaxUint64>>10 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupLimit is the memory limit of the process's cgroup in bytes (cgroup
// v2's memory.max, else v1's memory.limit_in_bytes; 0: none or unknown).
func cgroupLimit() uint64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n >= 1<<62 { // "max", or v1's "no limit"
			return 0
		}
		return n
	}
	return 0
}

// FormatBytes writes n bytes with a binary unit and one decimal: "512 B",
// "1.5 KiB", "6.0 GiB".
func FormatBytes(n uint64) string {
	if n < 1<<10 {
		return strconv.FormatUint(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(n)/(1<<10), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
}

// How often a guard measures the process's memory: every memInterval, and
// every memIntervalNear once the measure is past 3/4 of its limit.
const (
	memInterval     = 50 * time.Millisecond
	memIntervalNear = 5 * time.Millisecond
)

// memReserve is the part of a budget a guard keeps for what the check
// allocates between its last measure and the search's end, and for what
// the Go runtime does not count (the binary's own pages): 1/16 of the
// budget, at most 256 MiB.
func memReserve(budget uint64) uint64 { return min(budget/16, 256<<20) }

// memGuard enforces one check's memory budget. A nil *memGuard is no
// budget: it never trips, and its methods do nothing.
type memGuard struct {
	budget uint64
	limit  uint64        // the budget less memReserve: past it the guard trips
	sample func() uint64 // the process's memory in use, in bytes
	// tripAfter, when positive, trips the guard at that many guarded
	// steps (tests); steps counts them.
	tripAfter int64
	steps     atomic.Int64

	over atomic.Bool // the budget was exceeded: every guarded step fails
	peak atomic.Uint64

	done    chan struct{}
	stopped sync.WaitGroup
	limited bool // the guard lowered the runtime's memory limit
}

// startGuard starts watching the process's memory for a check with opts,
// and returns the guard (nil when opts has no budget); stop it with stop.
//
// Every memInterval (memIntervalNear near the limit) it measures the memory
// the Go runtime holds and does not release to the system (what a memory
// limit counts, close to the process's resident size), and keeps the peak.
// A measure over the guard's limit, the budget less memReserve, trips the
// guard for good: the search stops before the process exceeds the budget,
// unless it allocates more than the reserve in one interval. While the
// guard runs, the runtime's soft memory limit (debug.SetMemoryLimit) is
// the guard's limit (or lower), so that the collector frees garbage before
// the measure gets there: what is over it is the check's. Only the first
// measure, over the limit already, is taken again after a forced collection
// that returns free memory to the system (the garbage of what ran before
// the check). stop restores the limit. The memory measured is the whole
// process's: checks that run at once share it.
func startGuard(opts Options) *memGuard {
	if opts.MemoryBudget == 0 {
		return nil
	}
	b := opts.MemoryBudget
	g := &memGuard{budget: b, limit: b - memReserve(b), sample: opts.memSample, tripAfter: opts.tripAfter, done: make(chan struct{})}
	if g.sample == nil {
		g.sample = newInUse()
	}
	if g.sample() > g.limit {
		debug.FreeOSMemory()
	}
	// The runtime's limit only when the measure is under it: over it, the
	// collector would run without end.
	if g.measure(); !g.over.Load() {
		g.limited = true
		limits.add(g.limit)
	}
	g.stopped.Add(1)
	go g.watch()
	return g
}

// watch measures the memory until stop.
func (g *memGuard) watch() {
	defer g.stopped.Done()
	t := time.NewTimer(memInterval)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
			if m := g.measure(); m > g.limit/4*3 {
				t.Reset(memIntervalNear)
			} else {
				t.Reset(memInterval)
			}
		}
	}
}

// measure takes a measure, keeps the peak, and trips the guard when the
// measure is over its limit. It returns the measure.
func (g *memGuard) measure() uint64 {
	m := g.note(g.sample())
	if m > g.limit {
		g.trip()
	}
	return m
}

// note records a measure in the peak, and returns it.
func (g *memGuard) note(m uint64) uint64 {
	for {
		p := g.peak.Load()
		if m <= p || g.peak.CompareAndSwap(p, m) {
			return m
		}
	}
}

// trip makes every guarded step fail from now on.
func (g *memGuard) trip() { g.over.Store(true) }

// tripped reports whether the budget was exceeded.
func (g *memGuard) tripped() bool { return g != nil && g.over.Load() }

// stop stops the watchdog, takes a last measure for the peak, and restores
// the runtime's memory limit. The guard still answers tripped and
// reason.
func (g *memGuard) stop() {
	if g == nil {
		return
	}
	close(g.done)
	g.stopped.Wait()
	g.note(g.sample())
	if g.limited {
		limits.remove(g.limit)
	}
}

// reason says why a check stopped short: "memory budget 6.0 GiB exceeded
// (peak 5.7 GiB) after checking N of M operations" (the check needed more
// than its budget: the peak measured is usually below it, as the guard
// stops the search before).
func (g *memGuard) reason(checked, of int) string {
	return fmt.Sprintf("memory budget %s exceeded (peak %s) after checking %d of %d operations",
		FormatBytes(g.budget), FormatBytes(g.peak.Load()), checked, of)
}

// newInUse returns a measure of the memory the Go runtime holds and has
// not released to the system: all it mapped (/memory/classes/total) less
// what it released (/memory/classes/heap/released), in bytes.
func newInUse() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	var mu sync.Mutex
	return func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		metrics.Read(s)
		total, released := s[0].Value.Uint64(), s[1].Value.Uint64()
		if released > total {
			return 0
		}
		return total - released
	}
}

// memLimits lowers the runtime's soft memory limit to the smallest budget
// of the guards that run, and restores the limit it found when the last one
// stops. (A limit set by someone else meanwhile is overwritten.)
type memLimits struct {
	mu      sync.Mutex
	budgets []uint64
	saved   int64
}

var limits memLimits

func (l *memLimits) add(budget uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.budgets) == 0 {
		l.saved = debug.SetMemoryLimit(-1)
	}
	l.budgets = append(l.budgets, budget)
	l.apply()
}

func (l *memLimits) remove(budget uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.budgets, budget); i >= 0 {
		l.budgets = slices.Delete(l.budgets, i, i+1)
	}
	l.apply()
}

// LowerMemoryLimit holds the runtime's soft memory limit at or under limit
// until the returned release is called (once; later calls do nothing),
// together with the checks' memory guards: the smallest of them wins, and
// the last release puts back the limit set before the first. It is for
// work beside the checks whose garbage would otherwise grow its heap to
// twice what is live (a report of a streamed history).
func LowerMemoryLimit(limit uint64) (release func()) {
	limits.add(limit)
	var once sync.Once
	return func() { once.Do(func() { limits.remove(limit) }) }
}

// apply sets the limit: the smallest budget, or the saved limit if it is
// lower or no guard runs.
func (l *memLimits) apply() {
	limit := l.saved
	for _, b := range l.budgets {
		limit = min(limit, int64(min(b, math.MaxInt64)))
	}
	debug.SetMemoryLimit(limit)
}

// search is one Porcupine search under a guard. Its model (see model)
// refuses every step once the guard has tripped, or once stop is set, and
// records why and how far the search got.
type search struct {
	g *memGuard // nil: no budget
	// stop, when not nil, cuts the search short once set (another key
	// failed).
	stop *atomic.Bool
	// pos is an operation's position in the search's history, from its
	// input (nil: progress is not recorded).
	pos func(input any) int

	// aborted is set when a step was refused because the guard had
	// tripped, cut when one was because stop was set: then the search's
	// Illegal means nothing. Porcupine may still be stepping after it
	// returned on a timeout, hence atomics.
	aborted, cut atomic.Bool
	// reached is 1 + the furthest position at which a step succeeded.
	reached atomic.Int64
}

// model returns m with its Step wrapped as search says. m must define Step,
// not StepContext. Progress (reached) is recorded only under a budget.
func (s *search) model(m porcupine.Model) porcupine.Model {
	if s.g == nil {
		s.pos = nil
	}
	step := m.Step
	m.StepContext = nil
	m.Step = func(state, input, output any) (bool, any) {
		if s.stop != nil && s.stop.Load() {
			s.cut.Store(true)
			return false, state
		}
		if g := s.g; g != nil {
			if g.tripAfter > 0 && g.steps.Add(1) >= g.tripAfter {
				g.trip()
			}
			if g.over.Load() {
				s.aborted.Store(true)
				return false, state
			}
		}
		ok, next := step(state, input, output)
		if ok && s.pos != nil {
			if p := int64(s.pos(input)) + 1; p > s.reached.Load() {
				s.reached.Store(p)
			}
		}
		return ok, next
	}
	return m
}
