package checkers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// The register and KV checkers share the validation: an ok operation of a
// process that overlaps its next one on the same key is unknown.
func TestKeyedAssumptions(t *testing.T) {
	ops := []RegisterOp{wr(0, 0, 10, 1), rd(0, 5, 12, RegisterInt(1))}
	for _, o := range []*RegisterOp{&ops[0], &ops[1]} {
		o.Key = "k"
	}
	res := CheckRegister(ops, Options{})
	if res.Valid != Unknown || !strings.Contains(res.Error, "two operations outstanding at once") {
		t.Errorf("register: %s %q %q", res.Valid, res.Message, res.Error)
	}
	kv := []KVOp{{Process: 1, Key: "x", F: KVPut, Type: history.Ok, Call: 0, Return: 9, Value: "a"},
		{Process: 1, Key: "x", F: KVGet, Type: history.Ok, Call: 3, Return: 11, Value: "a"}}
	if r := CheckKV(kv, Options{}); r.Valid != Unknown || !strings.Contains(r.Error, "two operations outstanding at once") {
		t.Errorf("kv: %s %q", r.Valid, r.Error)
	}
	// The same on two keys is fine: Porcupine checks keys apart.
	ops[1].Key = "j"
	if res := CheckRegister(ops, Options{}); res.Valid == Unknown && strings.Contains(res.Error, "outstanding") {
		t.Errorf("two keys: %s %q", res.Valid, res.Error)
	}
	one := spans{n: 1, at: func(int) span { return span{process: 1, call: 5, ret: 3, returned: true} }, what: func(int) string { return "x" }}
	if err := checkSpans(one); !errors.Is(err, ErrAssumption) || !strings.Contains(err.Error(), "x completes at 3ns, before its invocation at 5ns") {
		t.Errorf("checkSpans: %v", err)
	}
}

// checkSpans orders each process's (and key's) operations by invocation,
// whatever their order in the history.
func TestCheckSpansOrdersLanes(t *testing.T) {
	check := func(ss []span) error {
		return checkSpans(spans{n: len(ss), at: func(i int) span { return ss[i] }, what: func(i int) string { return fmt.Sprintf("op %d", i) }})
	}
	fine := []span{
		{process: 1, key: "a", call: 20, ret: 30, returned: true},
		{process: 2, key: "a", call: 0, ret: 100, returned: true},
		{process: 1, key: "a", call: 0, ret: 10, returned: true},
		{process: 1, key: "b", call: 5, ret: 25, returned: true}, // another key: its own lane
		{process: 1, key: "a", call: 40},                         // never returned, last
	}
	if err := check(fine); err != nil {
		t.Errorf("no overlap: %v", err)
	}
	overlap := append(slices.Clone(fine), span{process: 1, key: "a", call: 25, ret: 35, returned: true})
	err := check(overlap)
	if !errors.Is(err, ErrAssumption) || !strings.Contains(err.Error(), "process 1 has two operations outstanding at once: op 0 (until 30ns) and op 5 (from 25ns)") {
		t.Errorf("overlap: %v", err)
	}
}
