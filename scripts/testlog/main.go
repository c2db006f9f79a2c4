// Command testlog reads `go test -json` on its standard input and prints
// what a plain `go test` prints (each package's ok or FAIL line, and the
// whole output of every test that failed, of a package that failed outside
// its tests, and of a panic), then the slowest tests, so that a CI log
// shows failures in full and where the time went. It exits 1 when any
// package failed, 0 otherwise.
//
//	go test -json ./... | go run ./scripts/testlog -slowest 25
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is one test's time.
type timing struct {
	name    string
	elapsed float64
}

func main() {
	slowest := flag.Int("slowest", 25, "how many of the slowest tests to list (0: none)")
	quiet := flag.Bool("quiet", false, "print only the slowest tests (of streams a run has printed already)")
	finished := flag.Bool("finished", false, "print only the packages that finished (passed, failed or skipped), one a line")
	failedTests := flag.Bool("failed", false, "print only what failed, one a line: PACKAGE TEST for a top-level test, PACKAGE - for a package that failed outside its tests (a build error, a timeout)")
	why := flag.String("reasons", "", "print only the first error lines of one failed test, named PACKAGE TEST")
	skippedFor := flag.String("skipped", "", "print only the tests skipped with a message holding this text, one a line: PACKAGE TEST: MESSAGE")
	flag.Parse()
	switch {
	case *skippedFor != "":
		printLines(skipped(os.Stdin, *skippedFor))
	case *why != "":
		pkg, test, _ := strings.Cut(*why, " ")
		printLines(testReasons(os.Stdin, pkg, test))
	case *finished:
		o, err := outcomes(os.Stdin)
		printLines(o.finished, err)
	case *failedTests:
		o, err := outcomes(os.Stdin)
		printLines(o.failed, err)
	default:
		printLog(*quiet, *slowest)
	}
}

// printLines prints lines, one a line, or err and exits 2.
func printLines(lines []string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(2)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// printLog prints what a plain go test prints, then the slowest tests
// (only them when quiet), and exits 1 when a package failed.
func printLog(quiet bool, slowest int) {
	w := io.Writer(os.Stdout)
	if quiet {
		w = &onlySlowest{w: os.Stdout}
	}
	failed, err := filter(os.Stdin, w, slowest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// filter copies a plain go test's output of events from r to w and reports
// whether any package failed.
func filter(r io.Reader, w io.Writer, slowest int) (bool, error) {
	out := map[string]*strings.Builder{} // package or package/test -> its output so far
	var times []timing
	var fails []failure
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: the go command's own words (a build error)
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			b := out[key]
			if b == nil {
				b = &strings.Builder{}
				out[key] = b
			}
			b.WriteString(e.Output)
		case "build-output": // the compiler's words (go 1.24's -json)
			fmt.Fprint(w, e.Output)
		case "pass", "skip":
			if e.Test == "" {
				fmt.Fprintf(w, "ok  \t%s\t%.1fs\n", e.Package, e.Elapsed)
			} else if e.Action == "pass" && !strings.Contains(e.Test, "/") {
				times = append(times, timing{e.Package + " " + e.Test, e.Elapsed})
			}
			delete(out, key)
		case "fail":
			if e.Test == "" {
				failed = true
				if b := out[key]; b != nil {
					fmt.Fprint(w, b.String()) // a package's own output: a panic, a timeout, a build failure
				}
				fmt.Fprintf(w, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
			} else if b := out[key]; b != nil {
				fmt.Fprint(w, b.String())
				fails = append(fails, failure{e.Package + " " + e.Test, e.Elapsed, reasons(b.String())})
			} else if !hasSub(fails, e.Package+" "+e.Test) {
				fails = append(fails, failure{e.Package + " " + e.Test, e.Elapsed, nil})
			}
			delete(out, key)
		}
	}
	if err := sc.Err(); err != nil {
		return failed, err
	}
	if slowest > 0 && len(times) > 0 {
		sort.Slice(times, func(i, j int) bool { return times[i].elapsed > times[j].elapsed })
		if q, ok := w.(*onlySlowest); ok {
			q.on = true
		}
		fmt.Fprintf(w, "the %d slowest tests:\n", min(slowest, len(times)))
		for _, t := range times[:min(slowest, len(times))] {
			fmt.Fprintf(w, "  %7.1fs  %s\n", t.elapsed, t.name)
		}
	}
	if len(fails) > 0 {
		// Last, so that a CI log cut in its middle still ends with what
		// failed and why (each test's own error lines, not its logs).
		if q, ok := w.(*onlySlowest); ok {
			q.on = true
		}
		fmt.Fprintf(w, "%d tests failed:\n", len(fails))
		for _, f := range fails {
			fmt.Fprintf(w, "  --- FAIL %s (%.1fs)\n", f.name, f.elapsed)
			for _, l := range f.reasons {
				fmt.Fprintf(w, "        %s\n", l)
			}
		}
	}
	return failed, nil
}

// failure is a test that failed, with the lines of its output that say why.
type failure struct {
	name    string
	elapsed float64
	reasons []string
}

// hasSub reports whether one of fails is a subtest of name (a parent
// whose subtests failed says nothing more of its own).
func hasSub(fails []failure, name string) bool {
	for _, f := range fails {
		if strings.HasPrefix(f.name, name+"/") {
			return true
		}
	}
	return false
}

// maxReasons and maxReasonLen bound what the closing list repeats of a
// failed test's output: its first error lines, each cut.
const (
	maxReasons   = 6
	maxReasonLen = 300
)

// reasons picks a failed test's last lines that testing printed for it
// (file_test.go:N: ..., which t.Error, t.Fatal and t.Log all print; a
// Fatal's is the last) and any panic's first line: at most maxReasons, each
// at most maxReasonLen bytes, in order.
func reasons(out string) []string {
	var rs []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		i := strings.Index(t, "_test.go:")
		if !strings.HasPrefix(t, "panic:") && (i < 0 || strings.ContainsAny(t[:i], " \t")) {
			continue
		}
		if len(t) > maxReasonLen {
			t = t[:maxReasonLen] + "..."
		}
		rs = append(rs, t)
	}
	if len(rs) > maxReasons {
		rs = rs[len(rs)-maxReasons:]
	}
	return rs
}

// onlySlowest writes nothing until the slowest tests' list (or the failed
// tests' list) begins.
type onlySlowest struct {
	w  io.Writer
	on bool
}

func (o *onlySlowest) Write(p []byte) (int, error) {
	if !o.on {
		return len(p), nil
	}
	return o.w.Write(p)
}

// outcome is what scripts/test.sh needs to run again what did not pass:
// the packages that finished, and what failed.
type outcome struct {
	finished []string // packages, sorted
	failed   []string // "PACKAGE TEST" (top-level tests) or "PACKAGE -", sorted
}

// outcomes reads go test -json events. A package that failed with no
// top-level test failing (a build error, a panic outside a test, a
// timeout) is "PACKAGE -": it cannot be run again by test name.
func outcomes(r io.Reader) (outcome, error) {
	done := map[string]bool{}
	failedPkg := map[string]bool{}
	failedTest := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Package == "" {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Test == "" {
				done[e.Package] = true
				if e.Action == "fail" {
					failedPkg[e.Package] = true
				}
			} else if e.Action == "fail" && !strings.Contains(e.Test, "/") {
				failedTest[e.Package+" "+e.Test] = true
			}
		}
	}
	var o outcome
	for p := range done {
		o.finished = append(o.finished, p)
	}
	for k := range failedTest {
		o.failed = append(o.failed, k)
	}
	for p := range failedPkg {
		named := false
		for k := range failedTest {
			named = named || strings.HasPrefix(k, p+" ")
		}
		if !named {
			o.failed = append(o.failed, p+" -")
		}
	}
	sort.Strings(o.finished)
	sort.Strings(o.failed)
	return o, sc.Err()
}

// testReasons returns the lines that say why test (top-level, its
// subtests included) of package pkg failed: reasons of its output.
func testReasons(r io.Reader, pkg, test string) ([]string, error) {
	var out strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Package != pkg || e.Action != "output" {
			continue
		}
		if e.Test == test || strings.HasPrefix(e.Test, test+"/") {
			out.WriteString(e.Output)
		}
	}
	return reasons(out.String()), sc.Err()
}

// skipped returns the tests (subtests included) that were skipped with a
// message holding word, "PACKAGE TEST: MESSAGE" (the message from word on),
// sorted, each once.
func skipped(r io.Reader, word string) ([]string, error) {
	said := map[string]string{} // package and test -> its line holding word
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			if i := strings.Index(e.Output, word); i >= 0 {
				said[key] = strings.TrimSpace(e.Output[i:])
			}
		case "skip":
			if m, ok := said[key]; ok && !seen[key] {
				seen[key] = true
				out = append(out, key+": "+m)
			}
		}
	}
	sort.Strings(out)
	return out, sc.Err()
}
