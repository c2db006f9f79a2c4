package lockappend

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// recordedHistory reads the history of a run recorded in
// internal/cli/testdata/runs (real docker runs, kept for the golden tests).
func recordedHistory(t *testing.T, run string) []history.Event {
	t.Helper()
	events, err := history.ReadFile(filepath.Join("../../../cli/testdata/runs", run, "history.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// The terminal summary of a fenced run names every checker that ran,
// overlap included, and lists its refused writes: the first few, one a
// line, each with its worker, element and token and when it was refused,
// as the history recorded them.
func TestSummaryListsCheckersAndRefusedWrites(t *testing.T) {
	refused := regexp.MustCompile(`(?m)^ {19}(w\d+)'s write of element (\d+) \(token (\d+)\) refused at ([0-9.]+)s$`)
	for _, run := range []string{"zookeeper-token-pause-holder-kill-leader", "etcd-token-pause-holder", "etcd-token-partition-leader-kept"} {
		events := recordedHistory(t, run)
		r := Check(events, checkers.Options{})
		var b strings.Builder
		Workload{}.Summary(&b, &store.Results{Workload: "lock-append", Result: &r}, 5)
		out := b.String()
		line := regexp.MustCompile(`(?m)^  checkers .*$`).FindString(out)
		for _, name := range []string{checkers.NameLinearizable, checkers.NameLostUpdates, checkers.NameTokenMonotonic, checkers.NameOverlap, checkers.NameStats} {
			if !strings.Contains(line, name+" ") {
				t.Errorf("%s: the checkers line %q leaves out %s", run, line, name)
			}
		}
		// The fenced fails, from the history itself.
		ops, err := history.Pair(events)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, o := range ops {
			if o.F != la.FAppend || o.Type() != history.Fail {
				continue
			}
			var c la.Completion
			if json.Unmarshal(o.Complete.Value, &c) != nil || c.Reason != la.ReasonFenced {
				continue
			}
			want = append(want, fmt.Sprintf("%s %d %d %.2f", o.Process.Worker(5), c.Element, c.Token, time.Duration(o.Complete.Time).Seconds()))
		}
		if len(want) != r.FenceRejections {
			t.Fatalf("%s: %d fenced fails in the history, %d fence rejections", run, len(want), r.FenceRejections)
		}
		got := refused.FindAllStringSubmatch(out, -1)
		if len(got) != min(len(want), 3) {
			t.Fatalf("%s: %d refused writes listed, want %d (of %d):\n%s", run, len(got), min(len(want), 3), len(want), out)
		}
		for i, m := range got {
			if s := strings.Join(m[1:], " "); s != want[i] {
				t.Errorf("%s: refused write %d is %q, the history's %q", run, i, s, want[i])
			}
			if tok, _ := strconv.ParseInt(m[3], 10, 64); tok == 0 {
				t.Errorf("%s: refused write %d without its token", run, i)
			}
		}
		if more := len(want) - len(got); more > 0 && !strings.Contains(out, fmt.Sprintf("... %d more in the report", more)) {
			t.Errorf("%s: does not say %d more refused writes:\n%s", run, more, out)
		}
		t.Logf("%s:\n%s", run, out)
	}
}

// Past three refused writes, the summary says how many more there are.
func TestSummarySaysMoreRefusedWrites(t *testing.T) {
	var r Result
	r.FenceRejections = 7
	for i := range 5 {
		r.Checkers.Stats.Rejected = append(r.Checkers.Stats.Rejected, checkers.FenceRejection{Process: history.Process(i), Element: int64(10 + i), Token: int64(100 + i), At: int64(i+1) * int64(time.Second)})
	}
	var b strings.Builder
	Workload{}.Summary(&b, &store.Results{Workload: "lock-append", Result: &r}, 5)
	out := b.String()
	for _, want := range []string{"w1's write of element 10 (token 100) refused at 1.00s\n", "w3's write of element 12 (token 102) refused at 3.00s\n", "... 4 more in the report\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "element 13") {
		t.Errorf("summary lists a fourth refused write:\n%s", out)
	}
}
