package checkers

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
)

func TestDescribe(t *testing.T) {
	tab := newListTable(Options{Workers: 5})
	from, to := tab.appended(seq(5), 17)
	_, short := tab.appended([]int64{4}, 5)
	m := tab.model()
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"empty state", m.DescribeState([]any{0}), "{[]}"},
		{"long list", tab.lists[from].describe(), "[..4 elements.., 5]"},
		{"appended", tab.lists[to].describe(), "[..5 elements.., 17]"},
		{"short list", tab.lists[short].describe(), "[4, 5]"},
		{"append", m.DescribeOperation(listInput{kind: stepAppend, from: from, to: to, element: 17}, nil), "append 17 to [..4 elements.., 5]"},
		{"maybe", m.DescribeOperation(listInput{kind: stepMaybe, from: 0, to: to, element: 3, inferred: true}, nil), "maybe append 3 to [] (info, read inferred)"},
		{"read", m.DescribeOperation(listInput{kind: stepRead, from: short}, nil), "final read [4, 5]"},
		// The client by its worker, never its process number: process 7
		// of 5 workers is w3 after an unknown outcome.
		{"metadata", m.DescribeOperationMetadata(listMeta{process: 7, token: 19, known: true, event: 412}), "w3 (after an unknown outcome), token 19, event 412"},
		{"final read's metadata", m.DescribeOperationMetadata(listMeta{process: history.FinalRead, event: 900}), "harness, event 900"},
		{"Jepsen's metadata", newListTable(Options{}).model().DescribeOperationMetadata(listMeta{process: 7, event: 3}), "process 7, event 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// chain is k info appends, all invoked at once, the i-th having read
// [1..i-1]: any subset of them may have taken effect in any order. The final
// read says final.
func chain(t *testing.T, k int, final ...int64) []history.Event {
	h := newHist(t)
	for i := range k {
		h.Invoke(history.Process(i), int64(i+1))
	}
	for i := range k {
		p := history.Process(i)
		h.Acquired(p, int64(i+1)).Read(p, seq(int64(i))...).WriteSent(p).Info(p, int64(i+1))
	}
	return h.FinalRead(history.Process(k), final...).Events
}

func TestLinearizableTimeout(t *testing.T) {
	const k = 40
	// The final read holds an element nobody wrote, so the history is
	// illegal, but Porcupine can only tell after trying every subset of
	// the 40 info appends: it must time out.
	illegal := append(seq(k), 999)
	// CPU time, not wall time: a search that honours its 100 ms deadline
	// uses at most that much of each core, however loaded the machine;
	// one that ignores it runs for minutes.
	start := bound.SelfCPU()
	r := parseHist(t, pair(t, chain(t, k, illegal...))).Linearizable(Options{Timeout: 100 * time.Millisecond})
	used := bound.SelfCPU() - start
	if r.Valid != Unknown || r.Error != "" {
		t.Fatalf("got %s (%s %s), want unknown from a timeout", r.Valid, r.Message, r.Error)
	}
	if !strings.Contains(r.Message, "timed out after 100ms") || !strings.Contains(r.Message, "41 operations") || r.Ops != k+1 || r.Info != k {
		t.Errorf("message %q, ops %d, info %d: want a timeout over 41 operations", r.Message, r.Ops, r.Info)
	}
	if used > 5*time.Second {
		t.Errorf("a 100ms timeout used %s of CPU time", used)
	}

	// Not vacuous: the same shape with a consistent final read is checked
	// at once, and the same illegal history is never called valid.
	r = parseHist(t, pair(t, chain(t, k, seq(k)...))).Linearizable(Options{Timeout: 10 * time.Second})
	if r.Valid != Valid || r.Ops != k+1 {
		t.Errorf("consistent chain: got %s (%s), ops %d; want valid", r.Valid, r.Message, r.Ops)
	}
	r = parseHist(t, pair(t, chain(t, 8, append(seq(8), 999)...))).Linearizable(Options{Timeout: 10 * time.Second})
	if r.Valid != Invalid {
		t.Errorf("short illegal chain: got %s (%s), want invalid", r.Valid, r.Message)
	}
}
