package zoo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/testkit/zootest"
)

// zooResults writes a results directory as matrix --client-dir leaves it.
var zooResults = zootest.Results

// toStdout runs Write with opt and returns what it wrote to stdout: the
// page, when neither Out nor Publish is given.
func toStdout(opt Options) (string, error) {
	var stdout bytes.Buffer
	_, err := Write(opt, &stdout)
	return stdout.String(), err
}

// The zoo's page sums each client's cells over their seeds, names the
// client as the program named itself, says "no token" for a refused
// fencing mode, and links one invalid run's report, relative to the page.
func TestZooPage(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cur := map[string]string{"client-dir": "examples/clients/curator"}
	cells := []trends.MatrixCell{
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "builtin"}, Verdict: "invalid", Lost: 3, Acknowledged: 90, Run: "zk-builtin/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: cur, Verdict: "invalid", Lost: 2, Acknowledged: 88, FirstLostS: f(10), Run: "zk-curator/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: cur, Verdict: "invalid", Lost: 35, Acknowledged: 95, FirstLostS: f(20), Run: "zk-curator/2"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: cur, Verdict: "valid", Acknowledged: 80, Run: "zk-curator/3"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "valid", Acknowledged: 80, FenceRejections: 3, Run: "zk-curator-token/1"},
		{Target: "redlock", Nemesis: "pause-holder", Fencing: "token", Axes: map[string]string{"client-dir": "examples/clients/go-redsync"}, Verdict: "error",
			Error: "worker w1: setup: bad configuration: the client program's leases carry no fencing token (init_ok: \"tokens\": false)"},
		// A hostile cell: its run is outside the results directory.
		{Target: "redlock", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "examples/clients/go-redsync"}, Verdict: "invalid", Lost: 1, Acknowledged: 9, Run: "../../etc"},
		// Not a zoo cell: no client axis.
		{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Verdict: "invalid", Run: "etcd/1"},
	}
	dir := zooResults(t, cells, map[string]string{"examples/clients/curator": "Curator 5.4.0 InterProcessMutex"})
	out := filepath.Join(t.TempDir(), "docs", "zoo.md")
	os.MkdirAll(filepath.Dir(out), 0o755)
	if wrote, err := Write(Options{Results: []string{dir}, Out: out}, nil); err != nil || wrote != out {
		t.Fatalf("wrote %q: %v", wrote, err)
	}
	b, _ := os.ReadFile(out)
	page := string(b)
	rel, _ := filepath.Rel(filepath.Dir(out), filepath.Join(dir, "zk-curator", "1", "report.html"))
	for _, want := range []string{
		"fencecheck matrix --client-dir builtin,examples/clients/curator",
		"2026-12-03 09:00 UTC",
		"| built-in recipe (zookeeper) | zookeeper 3.8.0 | `pause-holder` | none | 1 of 1 invalid | 3 of 90 | 0 | none |",
		"| Curator 5.4.0 InterProcessMutex | zookeeper 3.8.0 | `pause-holder` | none | 2 of 3 invalid | 37 of 263 | 0 | 15.0 s (2 of 3 runs) |",
		"| Curator 5.4.0 InterProcessMutex | zookeeper 3.8.0 | `pause-holder` | token | 0 of 1 invalid | 0 of 80 | 3 | none |",
		"| go-redsync | redlock | `pause-holder` | token | no token (refused) | – | 0 | – |",
		"- Curator 5.4.0 InterProcessMutex, `pause-holder`, fencing none: [report](" + filepath.ToSlash(rel) + ")",
		// What the faults test, for those on the page only.
		"What the columns count and test: ",
		"- Under `pause-holder`, the holder's whole container",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "- Under `partition-client`") {
		t.Errorf("page says what partition-client tests, with no partition-client row:\n%s", page)
	}
	if strings.Contains(page, "etc/report.html") || strings.Contains(page, "| etcd |") {
		t.Errorf("page links outside the results, or lists a cell with no client:\n%s", page)
	}

	// Without a client axis, or without a matrix: bad input.
	plain := zooResults(t, cells[len(cells)-1:], nil)
	if _, err := toStdout(Options{Results: []string{plain}}); !errors.Is(err, cmdline.ErrUsage) || !strings.Contains(err.Error(), "no cell has a --client-dir axis") {
		t.Errorf("zoo of a matrix without clients: %v", err)
	}
	if _, err := toStdout(Options{Results: []string{t.TempDir()}}); !errors.Is(err, cmdline.ErrUsage) {
		t.Errorf("zoo of a directory without matrix.json: %v", err)
	}
}

// Given two matrices, a client directory's rows come from the last that
// ran it (a client re-run after a fix), the others' from the first, and the
// page names both matrices and the clients each supplied.
func TestZooPageSupersedes(t *testing.T) {
	cur := map[string]string{"client-dir": "examples/clients/curator"}
	kaz := map[string]string{"client-dir": "examples/clients/kazoo"}
	first := zooResults(t, []trends.MatrixCell{
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "invalid", Acknowledged: 50, Run: "cur/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: kaz, Verdict: "valid", Acknowledged: 70, FenceRejections: 2, Run: "kaz/1"},
	}, map[string]string{"examples/clients/curator": "Curator", "examples/clients/kazoo": "kazoo"})
	second := zooResults(t, []trends.MatrixCell{
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "valid", Acknowledged: 60, FenceRejections: 4, Run: "cur/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "token", Axes: cur, Verdict: "valid", Acknowledged: 61, FenceRejections: 1, Run: "cur/2"},
	}, map[string]string{"examples/clients/curator": "Curator"})
	page, err := toStdout(Options{Results: []string{first, second}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"a client's rows come from the last matrix that ran it",
		"From the matrix run of 2026-12-03 09:00 UTC (kazoo):",
		"From the matrix run of 2026-12-03 09:00 UTC (Curator):",
		"| Curator | zookeeper 3.8.0 | `pause-holder` | token | 0 of 2 invalid | 0 of 121 | 5 | none |",
		"| kazoo | zookeeper 3.8.0 | `pause-holder` | token | 0 of 1 invalid | 0 of 70 | 2 | none |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "0 of 50") || strings.Contains(page, "1 of 1 invalid") {
		t.Errorf("the first matrix's Curator cell is still on the page:\n%s", page)
	}
}

// livePipes counts the pipes of a Markdown line that a table would split
// on: those not escaped by an odd number of backslashes.
func livePipes(line string) int {
	n, bs := 0, 0
	for _, r := range line {
		switch {
		case r == '\\':
			bs++
			continue
		case r == '|' && bs%2 == 0:
			n++
		}
		bs = 0
	}
	return n
}

var (
	// A link: a ] not escaped (an even number of backslashes before it),
	// then (.
	linkRE = regexp.MustCompile(`(?:^|[^\\])(?:\\\\)*\]\(([^)]*)\)`)
	// A link's destination that is a relative path, no URL.
	safeLinkRE = regexp.MustCompile(`^[A-Za-z0-9._~/%-]+$`)
	// What opens a block at the start of a list item's text.
	blockStartRE = regexp.MustCompile(`^([#>+*=\-~` + "`" + `]|[ \t]|[0-9]+[.)]( |$))`)
)

// zooPageLines checks the shape of every line of a zoo page: a table row
// has the header's 9 live pipes, the matrix's command is one line of an
// indented code block, no line starts a block of its own (a heading, raw
// HTML, a list, a quote), no HTML tag, control character or link other
// than a report's (a relative path of safe characters) is anywhere, and
// the page is small (max bytes).
func zooPageLines(t *testing.T, page string, max int) {
	t.Helper()
	if len(page) > max {
		t.Errorf("page of %d bytes, want at most %d", len(page), max)
	}
	if strings.ContainsAny(page, "\r\x00\x1b\u2028\u2029\u202e") {
		t.Errorf("page has a control character: %q", safetext.Clip(page, 2000))
	}
	for i, l := range strings.Split(page, "\n") {
		if strings.Contains(l, "<") && !strings.HasPrefix(l, "    fencecheck matrix ") {
			t.Errorf("line %d: raw HTML outside the code block: %q", i+1, safetext.Clip(l, 300))
		}
		switch {
		case l == "", i == 0 && l == "# The lock-client zoo", l == "|---|---|---|---|---|---|---|---|":
		case strings.HasPrefix(l, "| "):
			if n := livePipes(l); n != 9 {
				t.Errorf("line %d: %d live pipes, want 9: %q", i+1, n, safetext.Clip(l, 300))
			}
		case l == "    fencecheck matrix", strings.HasPrefix(l, "    fencecheck matrix "), strings.HasPrefix(l, "Generated by `fencecheck zoo`"),
			strings.HasPrefix(l, "From the matrix run of "), strings.HasPrefix(l, "Each row is one lock client"),
			strings.HasPrefix(l, "What the columns count and test: "),
			strings.HasPrefix(l, "One invalid run of each client"), l == "- none: no run was invalid.":
		case strings.HasPrefix(l, "- "):
			if blockStartRE.MatchString(l[2:]) {
				t.Errorf("line %d: a list item that starts a block: %q", i+1, safetext.Clip(l, 300))
			}
		default:
			t.Errorf("line %d: not a line the zoo writes: %q", i+1, safetext.Clip(l, 300))
		}
		for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
			if !safeLinkRE.MatchString(m[1]) || !strings.HasSuffix(l, "[report]("+m[1]+")") {
				t.Errorf("line %d: a link to %q", i+1, safetext.Clip(m[1], 300))
			}
		}
	}
}

// Names, versions, faults, arguments and run paths in a matrix.json and
// its runs' test.json come from whoever wrote the results directory: the
// page cuts each name, escapes Markdown and HTML (no live pipe, tag, link
// or heading), keeps the matrix's command on one line, and links a report
// only by a percent-encoded relative path.
func TestZooPageHostileNames(t *testing.T) {
	huge := strings.Repeat("A", 600<<10) // under the test.json bound, far over a name's
	hostile := map[string]string{
		"c/huge":   huge,
		"c/html":   `<img src=x onerror=alert(1)><script>alert(1)</script>`,
		"c/link":   `[x](javascript:alert(1)) <javascript:alert(2)> ![i](http://evil/i.png)`,
		"c/pipe":   `a\|b`,
		"c/lines":  "one\n# Heading\n<script>x</script>\n| a | b |\r\n",
		"c/block":  "- - -",
		"c/number": "1. item",
		"c/code":   "``` `x` ~~~",
		"c/amp":    "&lt;script&gt; &#124; *em* _u_ ~~s~~",
	}
	var cells []trends.MatrixCell
	n := 0
	for dir := range hostile {
		n++
		cells = append(cells, trends.MatrixCell{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none",
			Axes: map[string]string{"client-dir": dir}, Verdict: "invalid", Lost: 1, Acknowledged: 2, Run: fmt.Sprintf("r%d/1", n)})
	}
	cells = append(cells,
		// A run path that makes a link of its own, and one that is a URL
		// with a scheme once made relative to the page.
		trends.MatrixCell{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "c/run1"},
			Verdict: "invalid", Run: "x) [y](javascript:alert(1)) (z/1"},
		trends.MatrixCell{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Axes: map[string]string{"client-dir": "c/run2"},
			Verdict: "invalid", Run: "javascript:alert(1)/1"},
		// A fault, a fencing mode, a version and a client directory that
		// break out of their cells and code spans.
		trends.MatrixCell{Target: "etcd<b>", Version: "3.6|x\n# v", Nemesis: "pause`|`x\n<i>", Fencing: "none\\|y",
			Axes: map[string]string{"client-dir": "c/x|<b>y</b>\n\\|"}, Verdict: "valid"},
	)
	dir := zooResults(t, cells, hostile)
	// A matrix whose recorded command breaks out of its code block.
	b, err := trends.Matrix{Started: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC), Cells: cells, TotalCells: len(cells),
		Args: []string{"--client-dir", "c/x\n<script>alert(1)</script>\n# Owned\n| a | b |\n|---|---|", "--name", strings.Repeat("n", 1<<20)}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, trends.MatrixFile), b, 0o644)
	out := filepath.Join(dir, "zoo.md")
	if _, err := Write(Options{Results: []string{dir}, Out: out}, nil); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(out)
	zooPageLines(t, string(page), 64<<10)
	for _, want := range []string{
		"| " + strings.Repeat("A", 100), // the huge name, cut
		"| a\\\\&#124;b |",              // a\|b: a backslash, then a pipe that is text
		"javascript%3Aalert%281%29/1/report.html",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// The rows of --recheck runs get the belief table: each run's record
// (results.json's "belief") summed, the longest window over the runs and
// the median of their windows, the windows that ended in the careful
// holder's recheck, the longest window counted from when its holder ran
// again (a record written before that figure: its windows, each whole but
// for one with a resume), and a library that cannot be asked as unknown. A
// record that no run writes (a negative window) is not counted; a row of
// runs without --recheck has no line there.
func TestZooBeliefTable(t *testing.T) {
	rue := map[string]string{"client-dir": "examples/clients/go-rueidislock"}
	kaz := map[string]string{"client-dir": "examples/clients/kazoo"}
	cells := []trends.MatrixCell{
		{Target: "redis", Resource: "postgres", Nemesis: "partition-client:both", Fencing: "none", Axes: rue, Verdict: "invalid", Lost: 2, Acknowledged: 30, Run: "rue/1"},
		{Target: "redis", Resource: "postgres", Nemesis: "partition-client:both", Fencing: "none", Axes: rue, Verdict: "invalid", Lost: 1, Acknowledged: 31, Run: "rue/2"},
		{Target: "redis", Resource: "postgres", Nemesis: "partition-client:both", Fencing: "none", Axes: rue, Verdict: "valid", Acknowledged: 33, Run: "rue/3"},
		{Target: "zookeeper", Resource: "postgres", Nemesis: "pause-holder", Fencing: "none", Axes: kaz, Verdict: "unknown", Acknowledged: 20, Run: "kaz/1"},
		{Target: "zookeeper", Nemesis: "pause-holder", Fencing: "none", Axes: kaz, Verdict: "invalid", Lost: 1, Acknowledged: 20, Run: "kaz/2"},
	}
	dir := zooResults(t, cells, map[string]string{"examples/clients/go-rueidislock": "rueidislock v1.0.80", "examples/clients/kazoo": "kazoo 2.8.0 Lock"})
	write := func(run string, recheck bool, results string) {
		target, version, name := "redis", "7.0.15", "rueidislock v1.0.80"
		if strings.HasPrefix(run, "kaz/") {
			target, version, name = "zookeeper", "3.8.0", "kazoo 2.8.0 Lock"
		}
		ti := map[string]any{"target": target, "target_version": version, "client_name": name, "recheck": recheck}
		b, _ := json.Marshal(ti)
		os.WriteFile(filepath.Join(dir, run, "test.json"), b, 0o644)
		if results != "" {
			os.WriteFile(filepath.Join(dir, run, "results.json"), []byte(results), 0o644)
		}
	}
	write("rue/1", true, `{"valid":false,"belief":{"grants":10,"answers":300,"stale":2,"rechecked":1,"max_ns":283000000,"median_ns":200000000,
		"windows":[{"window_ns":283000000,"recheck":true,"resumed_ns":5000000000,"own_ns":40000000},{"window_ns":117000000}],"tolerance_ns":100000000,"workers":3}}`)
	write("rue/2", true, `{"valid":false,"belief":{"grants":12,"answers":320,"stale":1,"rechecked":1,"max_ns":192000000,"median_ns":192000000,"paused":1,"own_max_ns":60000000,
		"windows":[{"window_ns":192000000,"recheck":true,"resumed_ns":9000000000,"own_ns":60000000}],"tolerance_ns":100000000,"workers":3}}`)
	// Hostile: a window longer than the record's own longest.
	write("rue/3", true, `{"valid":true,"belief":{"grants":9,"answers":1,"stale":1,"max_ns":5,"windows":[{"window_ns":999999999999}]}}`)
	write("kaz/1", true, `{"valid":null,"belief":{"grants":4,"answers":40,"stale":0,"max_ns":0,"median_ns":0,"tolerance_ns":100000000,"unknown":"a holder's lock library cannot say","workers":3}}`)
	write("kaz/2", false, `{"valid":false}`)
	page, err := toStdout(Options{Results: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| rueidislock v1.0.80 | redis 7.0.15, resource postgres | `partition-client:both` | none (careful holder) | 2 of 3 invalid | 3 of 94 | 0 | none |",
		"## What the libraries believe",
		"| rueidislock v1.0.80 | redis 7.0.15, resource postgres | `partition-client:both` | 2 | 620 | 3 of 22 handovers | 283 ms | 192 ms | 117 ms | 2 |",
		"| kazoo 2.8.0 Lock | zookeeper 3.8.0, resource postgres | `pause-holder` | 1 (1 unknown: the library cannot be asked) | 0 | – | – | – | – | – |",
		"| kazoo 2.8.0 Lock | zookeeper 3.8.0 | `pause-holder` | none | 1 of 1 invalid |",
		`The rows whose fencing says "careful holder"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if n := strings.Count(page, "| kazoo 2.8.0 Lock | zookeeper 3.8.0 | `pause-holder` |"); n != 1 {
		t.Errorf("the row without --recheck is on the page %d times, want once (the main table only):\n%s", n, page)
	}
	// A matrix without --recheck, given first, keeps its rows of the same
	// client: the careful holder's matrix supersedes only its own kind.
	plain := zooResults(t, []trends.MatrixCell{{Target: "redis", Nemesis: "pause-holder", Fencing: "none", Axes: rue, Verdict: "invalid", Lost: 1, Acknowledged: 10, Run: "r/1"}},
		map[string]string{"examples/clients/go-rueidislock": "rueidislock v1.0.80"})
	both, err := toStdout(Options{Results: []string{plain, dir}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| rueidislock v1.0.80 | redis 3.8.0 | `pause-holder` | none | 1 of 1 invalid |", "| 2 | 620 | 3 of 22 handovers | 283 ms | 192 ms | 117 ms | 2 |"} {
		if !strings.Contains(both, want) {
			t.Errorf("zoo of a matrix without --recheck and one with: the page lacks %q:\n%s", want, both)
		}
	}
	// A published copy keeps what the belief table reads.
	pub := filepath.Join(t.TempDir(), "zoo")
	if _, err := Write(Options{Results: []string{dir}, Publish: pub}, nil); err != nil {
		t.Fatalf("zoo --publish: %v", err)
	}
	again, err := zooPage([]string{filepath.Join(pub, filepath.Base(dir))}, "")
	if want := "| 2 | 620 | 3 of 22 handovers | 283 ms | 192 ms | 117 ms | 2 |"; err != nil || !strings.Contains(again, want) {
		t.Errorf("zoo of the published copy (%v) lacks %q:\n%s", err, want, again)
	}
}

// A run checked again after its matrix (fencecheck check, by a fencecheck
// whose checkers changed) counts with its results.json's verdict; a run
// without a readable results.json keeps the matrix's.
func TestZooVerdictCheckedAgain(t *testing.T) {
	kaz := map[string]string{"client-dir": "examples/clients/kazoo"}
	cells := []trends.MatrixCell{
		{Target: "zookeeper", Nemesis: "clock-skew:client", Fencing: "none", Axes: kaz, Verdict: "invalid", Acknowledged: 20, Run: "kaz/1"},
		{Target: "zookeeper", Nemesis: "clock-skew:client", Fencing: "none", Axes: kaz, Verdict: "invalid", Acknowledged: 20, Run: "kaz/2"},
	}
	dir := zooResults(t, cells, map[string]string{"examples/clients/kazoo": "kazoo 2.8.0 Lock"})
	os.WriteFile(filepath.Join(dir, "kaz/1", "results.json"), []byte(`{"valid":true}`), 0o644)
	page, err := toStdout(Options{Results: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "| `clock-skew:client` | none | 1 of 2 invalid |"; !strings.Contains(page, want) {
		t.Errorf("page lacks %q:\n%s", want, page)
	}
}

// A matrix of one client (--client-dir naming one directory) has no client
// axis: its cells are that client's, from the matrix's own arguments.
func TestZooOneClientMatrix(t *testing.T) {
	cells := []trends.MatrixCell{{Target: "etcd", Nemesis: "pause-holder", Fencing: "none", Verdict: "invalid", Lost: 3, Acknowledged: 40, Run: "t/1"}}
	dir := zooResults(t, cells, nil)
	b, err := trends.Matrix{Started: time.Date(2026, 12, 6, 23, 26, 0, 0, time.UTC), Args: []string{"--recheck", "--client-dir", "examples/clients/tooz-etcd3gw"}, Cells: cells}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, trends.MatrixFile), b, 0o644)
	page, err := toStdout(Options{Results: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "| `pause-holder` | none | 1 of 1 invalid | 3 of 40 |"; !strings.Contains(page, want) {
		t.Errorf("page lacks %q:\n%s", want, page)
	}
	// Two directories in one value: the matrix had the axis, and these
	// cells lack it.
	b, _ = trends.Matrix{Args: []string{"--client-dir", "a,b"}, Cells: cells}.Encode()
	os.WriteFile(filepath.Join(dir, trends.MatrixFile), b, 0o644)
	if _, err := toStdout(Options{Results: []string{dir}}); err == nil {
		t.Errorf("a matrix of two clients whose cells lack the axis made a page")
	}
}
