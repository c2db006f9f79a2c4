package jepsen

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// The fuzz targets' seeds run under plain go test; make fuzz runs each for
// a minute.

// seedLines adds the first lines of a history of testdata/jepsen, and a
// few hostile ones.
func seedLines(f *testing.F, file string, n int, extra ...string) {
	fh, err := os.Open(filepath.Join("..", "..", "..", "..", "testdata", "jepsen", file))
	if err != nil {
		f.Fatal(err)
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() && len(lines) < n {
		lines = append(lines, sc.Text())
		f.Add(sc.Text())
	}
	f.Add(strings.Join(lines, "\n"))
	for _, e := range extra {
		f.Add(e)
	}
}

// FuzzParseEDN: the EDN reader never panics, bounds its nesting, and what
// it reads writes back (String) as EDN that reads to the same values.
func FuzzParseEDN(f *testing.F) {
	for _, s := range []string{
		`nil -12 +3 0 :timed-out :a/b "x 0 1 y" "tab\there \"q\" \\ \u00e9"`,
		`[3 0] [] [[1] nil] {:a 1,,, :b [1,2]} ; a comment`,
		`{:process 0, :type :invoke, :f :get, :key "9", :value nil}`,
		`[1 2`, `{:a 1 :b}`, `{:a 1 :a 2}`, `"abc`, `"a\qb"`, `"\u12"`, `1.5`, `12N`, `#{1}`, `(1 2)`, `: 1`, `]`,
		strings.Repeat("[", 100), strings.Repeat("{", 70), "\"\x00\x7f\xff\"", `"\ud800"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		vs, err := parseEDN(line, 0)
		if err != nil {
			var ee *ednError
			if !errors.As(err, &ee) || ee.col < 1 || ee.col > len(line)+1 {
				t.Fatalf("error %v (%T): want an ednError within the line", err, err)
			}
			return
		}
		var b strings.Builder
		for _, v := range vs {
			if depth(v) > maxDepth {
				t.Fatalf("a value nested %d deep", depth(v))
			}
			b.WriteString(v.String())
			b.WriteByte(' ')
		}
		again, err := parseEDN(b.String(), 0)
		if err != nil {
			t.Fatalf("%q read as %q, which does not read: %v", line, b.String(), err)
		}
		if len(again) != len(vs) {
			t.Fatalf("%q: %d values, written back %d", line, len(vs), len(again))
		}
		for i := range vs {
			if again[i].String() != vs[i].String() {
				t.Fatalf("%q: value %d is %s, written back %s", line, i, vs[i], again[i])
			}
		}
		for _, v := range vs {
			if s := v.short(); len(s) > 8*maxShown {
				t.Fatalf("short() of %d bytes", len(s))
			}
		}
	})
}

// depth is how deeply v's vectors and maps nest.
func depth(v ednValue) int {
	d := 0
	for _, x := range v.list {
		d = max(d, depth(x))
	}
	if v.kind == ednVector || v.kind == ednMap {
		d++
	}
	return d
}

// checkParsed checks what a history parser returned on input: a
// *ParseError naming the file and a line of it, or operations each called
// on a line of it (and returned on a later one, if at all).
func checkParsed(t *testing.T, input string, calls func() ([]int64, []int64, error)) {
	t.Helper()
	call, ret, err := calls()
	lines := strings.Count(input, "\n") + 1
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) || pe.File != "h" || pe.Line < 0 || pe.Line > lines+1 || !strings.HasPrefix(err.Error(), "h:") {
			t.Fatalf("error %v (%T): want a ParseError of h, line 0 to %d", err, err, lines+1)
		}
		if len(err.Error()) > 2048 {
			t.Fatalf("an error message of %d bytes", len(err.Error()))
		}
		return
	}
	for i := range call {
		if call[i] < 1 || call[i] > int64(lines) || (ret[i] != 0 && (ret[i] <= call[i] || ret[i] > int64(lines))) {
			t.Fatalf("operation %d called on line %d, returned on line %d, of %d lines", i, call[i], ret[i], lines)
		}
	}
}

// FuzzParseKV: the EDN operation map parser never panics; it returns
// operations timed by the lines of the input, or a ParseError naming one.
func FuzzParseKV(f *testing.F) {
	seedLines(f, "jepsen-kv/c01-bad.txt", 12,
		`{:process 0, :type :invoke, :f :put, :key "k", :value "v"}`+"\n"+`{:process 0, :type :ok, :f :put, :key "j", :value "v"}`,
		`{:process :nemesis, :type :info, :f :start, :value nil}`,
		`{:process 2, :type :invoke, :f :put, :key 7, :value "a\"b"}`+"\n"+`{:process 2, :type :info, :f :put, :key 7, :value "a\"b", :error :timeout}`,
		"{:process "+strings.Repeat("[", 80)+"\n")
	f.Fuzz(func(t *testing.T, input string) {
		checkParsed(t, input, func() ([]int64, []int64, error) {
			ops, err := ParseKV(strings.NewReader(input), "h")
			var call, ret []int64
			for _, o := range ops {
				call, ret = append(call, o.Call), append(ret, o.Return)
				if o.Type == history.Invoke {
					t.Fatalf("operation %+v still an invocation", o)
				}
			}
			return call, ret, err
		})
	})
}

// FuzzParseRegisterLog: the jepsen.util log parser never panics; it
// returns operations timed by the lines of the input, or a ParseError
// naming one.
func FuzzParseRegisterLog(f *testing.F) {
	seedLines(f, "jepsen-etcd/etcd_000.log", 12,
		"INFO  jepsen.util - :nemesis\t:info\t:start\t{\"n1\" #{\"n2\"}}",
		"INFO  jepsen.util - 1\t:invoke\t:write\t3\nINFO  jepsen.util - 1\t:ok\t:write\t4",
		"INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:fail\t:read\t:timed-out",
		"INFO  jepsen.util - 2\t:invoke\t:cas\t[3 4]\n\tat jepsen.util$timeout.invoke(util.clj:10)\nINFO  jepsen.util - 2\t:fail\t:cas\t[3 4]",
		"x jepsen.util -",
		"INFO  jepsen.util - 1\t:invoke\t:cas\t"+strings.Repeat("[", 80))
	f.Fuzz(func(t *testing.T, input string) {
		checkParsed(t, input, func() ([]int64, []int64, error) {
			ops, err := ParseRegisterLog(strings.NewReader(input), "h")
			var call, ret []int64
			for _, o := range ops {
				call, ret = append(call, o.Call), append(ret, o.Return)
				if o.Key != "" {
					t.Fatalf("operation %+v on a key", o)
				}
			}
			return call, ret, err
		})
	})
}
