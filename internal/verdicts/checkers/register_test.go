package checkers

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
)

// randomRegister returns a small random history on one or two keys: the
// operations of three processes, overlapping a lot, with values from a
// small range (nil included), some info writes and cas that took effect
// (maybe late) or not, and some results perturbed so that about half the
// histories are not linearizable.
func randomRegister(rng *rand.Rand) []RegisterOp {
	vals := []RegisterValue{{}, RegisterInt(0), RegisterInt(1), RegisterInt(2)}
	val := func() RegisterValue { return vals[rng.IntN(len(vals))] }
	keys := 1 + rng.IntN(2)
	var out []RegisterOp
	for k := range keys {
		key := string(rune('a' + k))
		n := 4 + rng.IntN(9)
		var ops []genOp
		clock := make([]int64, 3)
		procs := []int{0, 1, 2}
		next := 3
		for range n {
			p := rng.IntN(3)
			call := clock[p] + rng.Int64N(3)
			at := call + rng.Int64N(4)
			ret := at + rng.Int64N(4)
			o := genOp{RegisterOp: RegisterOp{Process: procs[p], Key: key, Type: history.Ok, Call: call, Return: ret}, at: at}
			switch rng.IntN(3) {
			case 0:
				o.F = RegisterRead
			case 1:
				o.F, o.Value = RegisterWrite, val()
			default:
				o.F, o.Old, o.Value = RegisterCAS, val(), val()
			}
			if o.F != RegisterRead && rng.IntN(4) == 0 {
				o.Type = history.Info
				if o.effect = rng.IntN(2) == 0; o.effect {
					o.at = call + rng.Int64N(30)
				}
				procs[p] = next
				next++
			}
			clock[p] = ret + 1
			ops = append(ops, o)
		}
		sortByAt(ops)
		var state RegisterValue
		for i := range ops {
			o := &ops[i]
			if o.Type == history.Info && !o.effect {
				continue
			}
			switch o.F {
			case RegisterRead:
				o.Value = state
			case RegisterWrite:
				state = o.Value
			default:
				switch {
				case state == o.Old:
					state = o.Value
				case o.Type == history.Ok:
					o.Type = history.Fail
				}
			}
		}
		for _, o := range ops {
			if o.Type == history.Ok && o.F == RegisterRead && rng.IntN(6) == 0 {
				o.Value = val() // perhaps a stale or impossible read
			}
			if o.Type == history.Fail && rng.IntN(6) == 0 {
				o.Type = history.Ok // a cas that claims to have succeeded
			}
			out = append(out, o.RegisterOp)
		}
	}
	return out
}

// bruteLinearizable decides from first principles, by exhaustive search,
// whether ops are linearizable, key by key: every ok operation is placed in
// an order that respects real time (one that returned before another was
// called comes first) and is legal where it is placed; an info write or cas
// may be placed anywhere after the operations that returned before its
// call, or nowhere; failed operations and info reads are not placed. Small
// histories only: the search remembers (placed, value) pairs, so it is
// exponential in the operations of a key.
func bruteLinearizable(ops []RegisterOp) bool {
	byKey := map[string][]RegisterOp{}
	for _, o := range ops {
		if o.Type == history.Ok || (o.Type == history.Info && o.F != RegisterRead) {
			byKey[o.Key] = append(byKey[o.Key], o)
		}
	}
	for _, kops := range byKey {
		if len(kops) > 64 {
			panic("bruteLinearizable: more than 64 operations on a key")
		}
		type config struct {
			placed uint64
			v      RegisterValue
		}
		failed := map[config]bool{}
		var search func(placed uint64, v RegisterValue) bool
		search = func(placed uint64, v RegisterValue) bool {
			done := true
			for i, o := range kops {
				if placed&(1<<i) == 0 && o.Type == history.Ok {
					done = false
				}
			}
			if done {
				return true
			}
			if failed[config{placed, v}] {
				return false
			}
			for i, o := range kops {
				if placed&(1<<i) != 0 {
					continue
				}
				first := true // nothing unplaced returned before o's call
				for j, p := range kops {
					if j != i && placed&(1<<j) == 0 && p.Type == history.Ok && p.Return < o.Call {
						first = false
					}
				}
				if !first {
					continue
				}
				next, legal := v, true
				switch o.F {
				case RegisterRead:
					legal = v == o.Value
				case RegisterWrite:
					next = o.Value
				case RegisterCAS:
					if v == o.Old {
						next = o.Value
					} else {
						legal = o.Type == history.Info
					}
				}
				if legal && search(placed|1<<i, next) {
					return true
				}
			}
			failed[config{placed, v}] = true
			return false
		}
		if !search(0, RegisterValue{}) {
			return false
		}
	}
	return true
}

// CheckRegister agrees with the exhaustive search on many small random
// histories.
func TestCheckRegisterRandom(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 3000
	}
	rng := rand.New(rand.NewPCG(7, 7))
	count := map[Validity]int{}
	for i := range n {
		ops := randomRegister(rng)
		got := CheckRegister(ops, Options{})
		if got.Valid == Unknown && strings.HasPrefix(got.Message, "cannot tell: none of the") {
			continue
		}
		want := Invalid
		if bruteLinearizable(ops) {
			want = Valid
		}
		count[want]++
		if got.Valid != want {
			t.Fatalf("history %d: got %s (%s), the exhaustive search says %s\n%s", i, got.Valid, got.Message, want, dumpRegister(ops))
		}
	}
	t.Logf("%d valid, %d invalid", count[Valid], count[Invalid])
	if count[Valid] < n/5 || count[Invalid] < n/5 {
		t.Errorf("unbalanced: %d valid, %d invalid", count[Valid], count[Invalid])
	}
}

// Hand-written register operations: process p, the interval [call, ret].
func rd(p int, call, ret int64, v RegisterValue) RegisterOp {
	return RegisterOp{Process: p, F: RegisterRead, Type: history.Ok, Call: call, Return: ret, Value: v}
}

func wr(p int, call, ret int64, v int64) RegisterOp {
	return RegisterOp{Process: p, F: RegisterWrite, Type: history.Ok, Call: call, Return: ret, Value: RegisterInt(v)}
}

func cas(p int, call, ret int64, old, new int64) RegisterOp {
	return RegisterOp{Process: p, F: RegisterCAS, Type: history.Ok, Call: call, Return: ret, Old: RegisterInt(old), Value: RegisterInt(new)}
}

// as returns o completed with type t (an info keeps its Return, which
// means nothing).
func as(t history.Type, o RegisterOp) RegisterOp { o.Type = t; return o }

// on returns ops on key.
func on(key string, ops ...RegisterOp) []RegisterOp {
	for i := range ops {
		ops[i].Key = key
	}
	return ops
}

var (
	nilv  = RegisterValue{}
	one   = RegisterInt(1)
	two   = RegisterInt(2)
	three = RegisterInt(3)
)

func TestCheckRegister(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ops     []RegisterOp
		want    Validity
		failing string // the failing key, when invalid
	}{
		{"legal", []RegisterOp{wr(0, 0, 10, 1), rd(1, 11, 20, one), cas(2, 21, 30, 1, 2), rd(0, 31, 40, two)}, Valid, ""},
		{"initially nil", []RegisterOp{rd(0, 0, 10, nilv), wr(1, 11, 20, 3), rd(0, 21, 30, three)}, Valid, ""},
		{"concurrent writes in either order", []RegisterOp{wr(0, 0, 10, 1), wr(1, 5, 20, 2), rd(2, 15, 25, one)}, Valid, ""},
		{"stale read", []RegisterOp{wr(0, 0, 10, 1), wr(1, 11, 20, 2), rd(2, 21, 30, one)}, Invalid, ""},
		{"lost write", []RegisterOp{wr(0, 0, 10, 1), rd(1, 20, 30, nilv)}, Invalid, ""},
		{"ok cas from a value it did not find", []RegisterOp{wr(0, 0, 10, 1), cas(1, 11, 20, 3, 2)}, Invalid, ""},
		{"info write that took effect", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, wr(1, 11, 20, 2)), rd(2, 30, 40, two)}, Valid, ""},
		{"info write that did not", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, wr(1, 11, 20, 2)), rd(2, 30, 40, one)}, Valid, ""},
		{"info write that took effect late", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, wr(1, 11, 20, 2)), rd(2, 30, 40, one), rd(2, 50, 60, two)}, Valid, ""},
		{"info write undone", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, wr(1, 11, 20, 2)), rd(2, 30, 40, two), rd(2, 50, 60, one)}, Invalid, ""},
		{"info write seen before its call", []RegisterOp{wr(0, 0, 10, 1), rd(2, 11, 20, two), as(history.Info, wr(1, 21, 30, 2))}, Invalid, ""},
		{"never completed write", []RegisterOp{wr(0, 0, 10, 1), {Process: 1, F: RegisterWrite, Type: history.Info, Call: 11, Value: two}, rd(2, 30, 40, two)}, Valid, ""},
		{"info cas after an info write", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, wr(1, 11, 20, 2)), as(history.Info, cas(2, 21, 30, 2, 3)), rd(3, 40, 50, three)}, Valid, ""},
		{"info cas from a value never there", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, cas(2, 21, 30, 2, 3)), rd(3, 40, 50, three)}, Invalid, ""},
		{"info cas used once", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, cas(1, 11, 20, 1, 2)), rd(2, 30, 40, two), wr(0, 41, 50, 1), rd(2, 60, 70, two)}, Invalid, ""},
		{"failed cas left out", []RegisterOp{wr(0, 0, 10, 1), as(history.Fail, cas(1, 11, 20, 1, 2)), rd(2, 21, 30, one)}, Valid, ""},
		{"failed cas has no effect", []RegisterOp{wr(0, 0, 10, 1), as(history.Fail, cas(1, 11, 20, 1, 2)), rd(2, 21, 30, two)}, Invalid, ""},
		{"failed write has no effect", []RegisterOp{wr(0, 0, 10, 1), as(history.Fail, wr(1, 11, 20, 2)), rd(2, 21, 30, two)}, Invalid, ""},
		{"info read left out", []RegisterOp{wr(0, 0, 10, 1), as(history.Info, rd(1, 11, 20, three))}, Valid, ""},
		{"keys are independent", append(on("a", wr(0, 0, 10, 1), rd(1, 11, 20, one)), on("b", wr(2, 0, 10, 2), rd(3, 11, 20, two))...), Valid, ""},
		{"one key fails", append(on("a", wr(0, 0, 10, 1), rd(1, 11, 20, one)), on("b", rd(3, 11, 20, one))...), Invalid, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckRegister(tc.ops, Options{Timeout: 10 * time.Second})
			if r.Valid != tc.want || r.Error != "" {
				t.Fatalf("got %s (%s %s), want %s\n%s", r.Valid, r.Message, r.Error, tc.want, dumpRegister(tc.ops))
			}
			if tc.want == Invalid && (r.FailingKey != tc.failing || r.FailingKeys != 1) {
				t.Errorf("failing key %q (%d failing), want %q", r.FailingKey, r.FailingKeys, tc.failing)
			}
			if r.Model != ModelCASRegister || r.Ops != len(tc.ops) || r.Checked+r.Dropped != r.Ops {
				t.Errorf("figures: %+v", r)
			}
			if brute := bruteLinearizable(tc.ops); brute != (tc.want == Valid) {
				t.Errorf("the exhaustive search says linearizable: %t", brute)
			}
		})
	}
}

func TestCheckRegisterCounts(t *testing.T) {
	ops := []RegisterOp{
		wr(0, 0, 10, 1),
		as(history.Info, wr(1, 11, 20, 2)),
		as(history.Info, rd(2, 11, 20, two)),
		as(history.Fail, cas(3, 11, 20, 5, 6)),
		rd(0, 30, 40, one),
	}
	r := CheckRegister(ops, Options{})
	if r.Valid != Valid || r.Ops != 5 || r.Checked != 3 || r.Info != 1 || r.Dropped != 2 || r.Keys != 1 || r.KeysChecked != 1 {
		t.Errorf("%+v", r)
	}
	if want := "linearizable: 3 operations on 1 key (1 of them with an unknown outcome; 2 failed operations and reads with an unknown outcome left out)"; r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}
}

// Histories that show nothing, or cannot be checked, are Unknown.
func TestCheckRegisterUnknown(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		ops       []RegisterOp
	}{
		{"empty", "the history has no operations", nil},
		{"nothing ok", "none of the 2 operations completed ok", []RegisterOp{as(history.Fail, cas(0, 0, 10, 1, 2)), as(history.Info, wr(1, 0, 10, 1))}},
		{"unknown function", "operation 1: unknown function 0", []RegisterOp{wr(0, 0, 10, 1), {Type: history.Ok}}},
		{"unknown type", `operation 0: type "invoke"`, []RegisterOp{as(history.Invoke, wr(0, 0, 10, 1))}},
		{"return before call", "operation 0: returns at 5, before its call at 10", []RegisterOp{wr(0, 10, 5, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckRegister(tc.ops, Options{})
			if r.Valid != Unknown || !strings.Contains(r.Message+r.Error, tc.msg) {
				t.Errorf("got %s (%q, %q), want unknown with %q", r.Valid, r.Message, r.Error, tc.msg)
			}
		})
	}
}

// A check that runs out of time is Unknown, never Valid, and says how many
// keys it checked: here 20 easy keys and one whose refutation takes
// minutes (a stale read at the end of 1000 operations with 2% of the
// writes and cas info: more than 100 s on one core).
func TestCheckRegisterTimeout(t *testing.T) {
	hard := staleRead(genRegister(genSpec{seed: 6, keys: 1, opsPerKey: 1000, concurrency: 10, values: 5, info: 0.02}), "k0000", 1.01)
	for i := range hard {
		hard[i].Key = "hard"
	}
	ops := append(genRegister(genSpec{seed: 3, keys: 20, opsPerKey: 200, concurrency: 5, values: 5, info: 0.01}), hard...)
	limit := 1500 * time.Millisecond
	start := bound.SelfCPU()
	r := CheckRegister(ops, Options{Timeout: limit})
	used := bound.SelfCPU() - start
	t.Logf("%s in %s: %s", r.Valid, r.Elapsed, r.Message)
	if r.Valid != Unknown || r.Keys != 21 || r.KeysChecked != 20 {
		t.Fatalf("%s, %d of %d keys checked: %s", r.Valid, r.KeysChecked, r.Keys, r.Message)
	}
	if want := "timed out after 1.5s with 20 of 21 keys checked to the end, none failing; 1 not finished"; r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}
	// Stopped at its limit, not after the minutes the hard key needs.
	// In CPU time, which load does not stretch: the keys are searched on
	// at most every core for the limit, and the easy ones checked at once;
	// a search that ignored the deadline would burn minutes of it.
	if most := limit*time.Duration(runtime.NumCPU()) + 10*time.Second; used > most {
		t.Errorf("used %s of CPU time with a limit of %s (want at most %s)", used, limit, most)
	}
}

func TestRegisterVisualization(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "viz.html")
	ops := append(on("good", wr(0, 0, 10, 1), rd(1, 11, 20, one)), on("bad", wr(2, 0, 10, 1), wr(3, 11, 20, 2), rd(2, 21, 30, one))...)
	r := CheckRegister(ops, Options{VisualizationPath: path})
	if r.Valid != Invalid || r.Visualization != "viz.html" || r.Error != "" {
		t.Fatalf("%s, visualization %q, error %q", r.Valid, r.Visualization, r.Error)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Only the failing key is drawn.
	for _, want := range []string{`key \"bad\"`, "write(2)", "read() -\\u003e 1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the visualization lacks %s", want)
		}
	}
	if strings.Contains(string(b), `key \"good\"`) {
		t.Errorf("the visualization draws the linearizable key too")
	}
	os.Remove(path)
	if r := CheckRegister(ops[:2], Options{VisualizationPath: path}); r.Valid != Valid || r.Visualization != "" {
		t.Errorf("valid history: %s, visualization %q", r.Valid, r.Visualization)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a visualization was written for a linearizable history")
	}
}

// Porcupine's visualization of a run's history names each client by its
// worker, never by its process number: each lane starts with a box naming
// its client, a worker's processes in adjacent lanes, and each operation's
// details name its client. Process 2 of 2 workers is w1 again, after an
// unknown outcome.
func TestVisualizationNamesClients(t *testing.T) {
	path := filepath.Join(t.TempDir(), "viz.html")
	ops := on("bad", wr(0, 0, 10, 1), wr(2, 11, 20, 2), rd(1, 21, 30, one))
	if r := CheckRegister(ops, Options{VisualizationPath: path, Workers: 2}); r.Valid != Invalid || r.Visualization == "" {
		t.Fatalf("%s, visualization %q, error %q", r.Valid, r.Visualization, r.Error)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lanes := map[string]string{}
	for _, m := range regexp.MustCompile(`"ClientId":([0-9]+),"Tag":"","Start":-?[0-9]+,"End":-?[0-9]+,"Description":"([^"]*)"`).FindAllStringSubmatch(string(b), -1) {
		lanes[m[1]] = m[2]
	}
	if want := map[string]string{"0": "w1", "1": "w1 (after an unknown outcome)", "2": "w2"}; !maps.Equal(lanes, want) {
		t.Errorf("lanes named %v, want %v", lanes, want)
	}
	for _, want := range []string{`key \"bad\", w1 (after an unknown outcome), operation 1`, `key \"bad\", w2, operation 2`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the visualization lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`process [0-9]+`).Find(b); m != nil {
		t.Errorf("the visualization names a client %q", m)
	}
}

func TestKeyedResultJSON(t *testing.T) {
	r := CheckRegister([]RegisterOp{wr(0, 0, 10, 1), rd(1, 11, 20, two)}, Options{})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"valid":false`, `"model":"cas-register"`, `"ops":2`, `"keys":1`, `"keys_checked":1`, `"failing_keys":1`, `"failing_key":""`, `"elapsed_ns":`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}
