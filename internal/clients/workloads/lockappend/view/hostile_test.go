package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// measure runs fn and returns the CPU time it took and how much it
// allocated.
func measure(fn func()) (time.Duration, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := cpuTime()
	fn()
	took := cpuTime() - start
	runtime.ReadMemStats(&after)
	return took, after.TotalAlloc - before.TotalAlloc
}

// cpuTime is the CPU time (user and system) this process has used so far
// (the package's tests run one at a time). The bounds on writing a report
// are in CPU time, not wall time: a step gone quadratic takes minutes of
// it however idle or loaded the machine, while the wall clock measures the
// machine's other work too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A run whose history holds a 50 MB string in a fault's parameters (it
// once gave a 2.25 GB report.html, each history string being copied some
// 43 times): report.html, written from the history on disk, stays under
// 2 MB, shows the start of the string and how much was cut, in bounded
// time and memory.
func TestReportHostileFaultParam(t *testing.T) {
	ev, res := synthetic(300, 5)
	huge := "P" + strings.Repeat("x", 50<<20)
	ev = withFaultParam(t, ev, "note", huge)
	res = resultsOf(t, res, ev)
	run, err := store.NewRun(t.TempDir(), "hostile", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	writeHistory(t, run.Path(store.HistoryFile), ev)
	ev = nil
	var werr error
	took, alloc := measure(func() { werr = report.Write(run, testInfo("none", 5), res, View) })
	if werr != nil {
		t.Fatal(werr)
	}
	b, err := os.ReadFile(run.Path(store.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report.html %s in %s of CPU time, %d MB allocated (reading the 50 MB line included)", humanSize(int64(len(b))), took.Round(time.Millisecond), alloc>>20)
	if len(b) > 2<<20 {
		t.Errorf("report.html is %s, want under 2 MB", humanSize(int64(len(b))))
	}
	// The parameter's start, and how much more there was.
	m := regexp.MustCompile(`note=P(x+)… \((\d+) bytes more\)`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("the report does not show the parameter cut")
	}
	if more, _ := strconv.Atoi(m[2]); len(m[1]) > report.MaxText || 1+len(m[1])+more != len(huge) {
		t.Errorf("shown %d bytes and %s more of %d", 1+len(m[1]), m[2], len(huge))
	}
	// Reading the history alone takes a few hundred MB (the line, its
	// decoded event, the fault's copy); rendering must not add GBs.
	if alloc > 1<<30 {
		t.Errorf("%d MB allocated, want under 1 GB", alloc>>20)
	}
	if took > time.Minute {
		t.Errorf("writing the report took %s of CPU time", took)
	}
}

// Whatever the history, the test.json or the results hold, the page stays
// bounded: huge strings anywhere, a fault on 100,000 nodes, thousands of
// faults with the longest parameters allowed, absurd concurrency.
func TestReportHostileInput(t *testing.T) {
	ev, res := synthetic(300, 5)
	big := strings.Repeat("y", 20<<20)
	manyNodes := func() []history.Event {
		out := append([]history.Event(nil), ev...)
		nodes := make([]string, 100_000)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("node-%d-%s", i, strings.Repeat("z", 100))
		}
		for i, e := range out {
			if e.Process == history.Nemesis {
				var f history.FaultValue
				e.Decode(&f)
				f.Nodes = nodes
				out[i].Value, _ = json.Marshal(f)
			}
		}
		return out
	}
	manyFaults := func() []history.Event {
		out := append([]history.Event(nil), ev...)
		last := out[len(out)-1].Time
		params := map[string]string{}
		for k := range 2 * report.MaxItems {
			params[fmt.Sprintf("p%02d-%s", k, strings.Repeat("k", report.MaxName))] = strings.Repeat("v", 256)
		}
		for i := range 2000 {
			f := history.FaultValue{Fault: fmt.Sprintf("f%d", i), Nodes: []string{fmt.Sprintf("n%d", i)}, Figures: history.FiguresOf(params)}
			v, _ := json.Marshal(f)
			at := last + int64(i)*int64(time.Millisecond)
			out = append(out, history.Event{Index: len(out), Time: at, Process: history.Nemesis, Type: history.Info, F: history.FStart, Value: v},
				history.Event{Index: len(out) + 1, Time: at + 1, Process: history.Nemesis, Type: history.Info, F: history.FStop, Value: v})
		}
		return out
	}
	longF := func() []history.Event {
		out := append([]history.Event(nil), ev...)
		for i, e := range out {
			if e.Process == 2 && e.F == lockappend.FAppend {
				out[i].F = big // its invocation and its completion
			}
		}
		return out
	}
	longError := func() []history.Event {
		out := append([]history.Event(nil), ev...)
		for i, e := range out {
			if e.Type == history.Ok && e.F == lockappend.FAppend {
				var c lockappend.Completion
				e.Decode(&c)
				out[i].Type = history.Fail
				c.Error = big
				out[i].Value, _ = json.Marshal(c)
				break
			}
		}
		return out
	}
	for _, c := range []struct {
		name   string
		events func() []history.Event
		test   func(store.TestInfo) store.TestInfo
		res    func(*store.Results) *store.Results
	}{
		{name: "a fault on 100,000 nodes", events: manyNodes},
		{name: "2000 faults with 64 parameters each", events: manyFaults},
		{name: "a 20 MB function", events: longF},
		{name: "a 20 MB error", events: longError},
		{name: "a 20 MB configuration", test: func(ti store.TestInfo) store.TestInfo {
			ti.Target, ti.Nemesis, ti.Concurrency = big, big, 1_000_000_000
			ti.Servers = make([]store.NodeInfo, 100_000)
			return ti
		}},
		{name: "20 MB checker messages", res: func(r *store.Results) *store.Results {
			la := *laResult(r)
			la.Checkers.Linearizable.Message, la.Checkers.TokenMonotonic.Error, la.Error = big, big, big
			r.Result = &la
			r.Note = big
			return r
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			events := ev
			if c.events != nil {
				events = c.events()
			}
			test := testInfo("none", 5)
			if c.test != nil {
				test = c.test(test)
			}
			r := resultsOf(t, res, events)
			if c.res != nil {
				r = c.res(r)
			}
			var buf bytes.Buffer
			var err error
			took, alloc := measure(func() { err = report.Render(&buf, report.Input{Test: test, Results: r, Events: events, View: View}) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s in %s of CPU time, %d MB allocated", humanSize(int64(buf.Len())), took.Round(time.Millisecond), alloc>>20)
			if buf.Len() > report.MaxReport {
				t.Errorf("the report is %s, want at most %s", humanSize(int64(buf.Len())), humanSize(report.MaxReport))
			}
			if alloc > 1<<30 {
				t.Errorf("%d MB allocated, want under 1 GB", alloc>>20)
			}
			if took > time.Minute {
				t.Errorf("rendering took %s of CPU time", took)
			}
		})
	}
}
