package jepsen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// testdata is the directory of the Jepsen histories kept in the
// repository (testdata/jepsen at its root; see the README there).
func testdata(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "testdata", "jepsen")
	if _, err := os.Stat(filepath.Join(dir, "jepsen-etcd")); err != nil {
		t.Fatalf("the Jepsen histories are missing: %v", err)
	}
	return dir
}

func TestEDN(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`nil`, `nil`},
		{`-12 +3 0`, `-12 3 0`},
		{`:timed-out :a/b`, `:timed-out :a/b`},
		{`"x 0 1 y" "tab\there \"q\" \\ \u00e9"`, `"x 0 1 y" "tab\there \"q\" \\ é"`},
		{`[3 0] [] [[1] nil]`, `[3 0] [] [[1] nil]`},
		{`{:process 0, :type :invoke, :f :get, :key "9", :value nil}`, `{:process 0, :type :invoke, :f :get, :key "9", :value nil}`},
		{`{:a 1,,, :b [1,2]} ; a comment`, `{:a 1, :b [1 2]}`},
	} {
		vs, err := parseEDN(tc.in, 0)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		var out []string
		for _, v := range vs {
			out = append(out, v.String())
		}
		if got := strings.Join(out, " "); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`[1 2`, `column 1: a vector is not closed by ']'`},
		{`{:a 1 :b}`, `column 1: a map with an odd number of forms`},
		{`{:a 1 :a 2}`, `duplicate map key :a`},
		{`"abc`, `column 1: string not closed`},
		{`"a\qb"`, `column 3: unknown escape \q`},
		{`"\u12"`, `\u wants 4 hex digits`},
		{`1.5`, `column 1: "1.5": want an integer`},
		{`12N`, `want an integer`},
		{`99999999999999999999`, `want an integer`},
		{`true`, `unsupported "true"`},
		{`#{1}`, `unsupported "#"`},
		{`(1 2)`, `unsupported "("`},
		{`: 1`, `empty keyword`},
		{`]`, `column 1: unexpected ']'`},
	} {
		_, err := parseEDN(tc.in, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseRegisterLog(t *testing.T) {
	log := strings.Join([]string{
		"2015-01-01 INFO  jepsen.core - Running test",                     // 1: other output
		"INFO  jepsen.util - 0\t:invoke\t:read\tnil",                      // 2
		"INFO  jepsen.util - 1   :invoke :write  3",                       // 3: spaces, not tabs
		"INFO  jepsen.util - :nemesis\t:info\t:start\t{\"n1\" #{\"n2\"}}", // 4: skipped, unread
		"INFO  jepsen.util - 0\t:ok\t:read\tnil",                          // 5
		"INFO  jepsen.util - 2\t:invoke\t:cas\t[3 4]",                     // 6
		"\tat jepsen.util$timeout.invoke(util.clj:10)",                    // 7: a stack trace
		"INFO  jepsen.util - 1\t:info\t:write\t:timed-out",                // 8
		"INFO  jepsen.util - 0\t:invoke\t:read\tnil",                      // 9
		"INFO  jepsen.util - 0\t:fail\t:read\t:timed-out",                 // 10
		"INFO  jepsen.util - 2\t:fail\t:cas\t[3 4]",                       // 11
		"INFO  jepsen.util - 3\t:invoke\t:read\tnil",                      // 12
		"INFO  jepsen.util - 3\t:ok\t:read\t3\r",                          // 13: CRLF
		"INFO  jepsen.util - 4\t:invoke\t:cas\t[3 1]",                     // 14: never completes
	}, "\n")
	ops, err := ParseRegisterLog(strings.NewReader(log), "t.log")
	if err != nil {
		t.Fatal(err)
	}
	read, write, cas := checkers.RegisterRead, checkers.RegisterWrite, checkers.RegisterCAS
	i := checkers.RegisterInt
	want := []checkers.RegisterOp{
		{Process: 0, F: read, Type: history.Ok, Call: 2, Return: 5},
		{Process: 1, F: write, Type: history.Info, Call: 3, Return: 8, Value: i(3)},
		{Process: 2, F: cas, Type: history.Fail, Call: 6, Return: 11, Old: i(3), Value: i(4)},
		{Process: 0, F: read, Type: history.Info, Call: 9, Return: 10},
		{Process: 3, F: read, Type: history.Ok, Call: 12, Return: 13, Value: i(3)},
		{Process: 4, F: cas, Type: history.Info, Call: 14, Old: i(3), Value: i(1)},
	}
	if len(ops) != len(want) {
		t.Fatalf("%d operations, want %d: %+v", len(ops), len(want), ops)
	}
	for k := range want {
		if ops[k] != want[k] {
			t.Errorf("operation %d: %+v, want %+v", k, ops[k], want[k])
		}
	}
}

func TestParseKV(t *testing.T) {
	hist := strings.Join([]string{
		`{:process 0, :type :invoke, :f :append, :key "4", :value "x 0 1 y"}`,
		``,
		`; a comment`,
		`{:process 1, :type :invoke, :f :get, :key "4", :value nil, :time 12}`,
		`{:process :nemesis, :type :info, :f :start, :value nil}`,
		`{:process 0, :type :ok, :f :append, :key "4", :value "x 0 1 y"}`,
		`{:process 1, :type :ok, :f :get, :key "4", :value nil}`,
		`{:process 2, :type :invoke, :f :put, :key 7, :value "a\"b"}`,
		`{:process 2, :type :info, :f :put, :key 7, :value "a\"b", :error :timeout}`,
		`{:process 3, :type :invoke, :f :get, :key "4", :value nil}`,
		`{:process 3, :type :ok, :f :get, :key "4", :value "x 0 1 y"}`,
	}, "\n")
	ops, err := ParseKV(strings.NewReader(hist), "t.edn")
	if err != nil {
		t.Fatal(err)
	}
	want := []checkers.KVOp{
		{Process: 0, Key: "4", F: checkers.KVAppend, Type: history.Ok, Call: 1, Return: 6, Value: "x 0 1 y"},
		{Process: 1, Key: "4", F: checkers.KVGet, Type: history.Ok, Call: 4, Return: 7, Value: ""},
		{Process: 2, Key: "7", F: checkers.KVPut, Type: history.Info, Call: 8, Return: 9, Value: `a"b`},
		{Process: 3, Key: "4", F: checkers.KVGet, Type: history.Ok, Call: 10, Return: 11, Value: "x 0 1 y"},
	}
	if len(ops) != len(want) {
		t.Fatalf("%d operations, want %d: %+v", len(ops), len(want), ops)
	}
	for k := range want {
		if ops[k] != want[k] {
			t.Errorf("operation %d: %+v, want %+v", k, ops[k], want[k])
		}
	}
}

// Every malformed line is an error naming the file and the line.
func TestMalformed(t *testing.T) {
	const (
		inv = "INFO  jepsen.util - 1\t:invoke\t:write\t3"
		ok  = "INFO  jepsen.util - 1\t:ok\t:write\t3"
	)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"too few fields", "INFO  jepsen.util - 1\t:invoke\t:read", "h:1: jepsen.util line with 3 fields, want 4 or 5"},
		{"nothing after the logger", "x\nINFO  jepsen.util -", "h:2: jepsen.util line with no fields"},
		{"bad value", "INFO  jepsen.util - 1\t:invoke\t:cas\t[3 x]", `h:1: jepsen.util line: column 39: unsupported "x"`},
		{"cas of one value", "INFO  jepsen.util - 1\t:invoke\t:cas\t3", "h:1: :cas of 3: want [old new], two integers"},
		{"write of nil", "INFO  jepsen.util - 1\t:invoke\t:write\tnil", "h:1: :write of nil: want an integer"},
		{"read of a vector", "INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\t[1]", "h:2: :read returned [1]"},
		{"unknown type", "INFO  jepsen.util - 1\t:begin\t:read\tnil", "h:1: type :begin: want :invoke, :ok, :fail or :info"},
		{"unknown function", "INFO  jepsen.util - 1\t:invoke\t:delete\tnil", "h:1: function :delete: want :read, :write, :cas"},
		{"bad process", "INFO  jepsen.util - -1\t:invoke\t:read\tnil", "h:1: process -1: want a number >= 0 or :nemesis"},
		{"two outstanding", inv + "\n" + inv, "h:2: process 1 invokes :write while its :write of line 1 is outstanding"},
		{"completion without invocation", "\n" + ok, "h:2: process 1 completes :write (:ok) with nothing outstanding"},
		{"completion of another function", inv + "\nINFO  jepsen.util - 1\t:ok\t:cas\t[3 4]", "h:2: process 1 completes :cas, but it invoked :write on line 1"},
		{"ok of another value", inv + "\nINFO  jepsen.util - 1\t:ok\t:write\t4", "h:2: :ok :write 4, but line 1 invoked it with 3"},
	} {
		t.Run("log/"+tc.name, func(t *testing.T) {
			_, err := ParseRegisterLog(strings.NewReader(tc.in), "h")
			checkErr(t, err, tc.want)
		})
	}
	const kinv = `{:process 0, :type :invoke, :f :put, :key "k", :value "v"}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not a map", "\n[1 2]", "h:2: want one operation map"},
		{"log line", "INFO  jepsen.util - 1\t:invoke\t:write\t3", "h:1: want one operation map"},
		{"two maps", kinv + " {}", "h:1: want one operation map"},
		{"syntax", `{:process 0, :type :invoke, :f :put, :key "k", :value "v}`, "h:1: column 55: string not closed"},
		{"no type", `{:process 0, :f :put, :key "k", :value "v"}`, "h:1: operation map without :type"},
		{"no key", `{:process 0, :type :invoke, :f :put, :value "v"}`, "h:1: operation map without :key"},
		{"vector key", `{:process 0, :type :invoke, :f :put, :key [1], :value "v"}`, "h:1: :key [1]: want a string or an integer"},
		{"put of an integer", `{:process 0, :type :invoke, :f :put, :key "k", :value 3}`, "h:1: :put of 3: want a string"},
		{"get returned an integer", `{:process 0, :type :invoke, :f :get, :key "k", :value nil}` + "\n" + `{:process 0, :type :ok, :f :get, :key "k", :value 3}`, "h:2: :get returned 3"},
		{"unknown function", `{:process 0, :type :invoke, :f :cas, :key "k", :value [1 2]}`, "h:1: function :cas: want :get, :put, :append"},
		{"other key", kinv + "\n" + `{:process 0, :type :ok, :f :put, :key "j", :value "v"}`, `h:2: process 0 completes :put on key "j", but it invoked it on key "k" on line 1`},
		{"two outstanding", kinv + "\n" + kinv, "h:2: process 0 invokes :put while its :put of line 1 is outstanding"},
	} {
		t.Run("edn/"+tc.name, func(t *testing.T) {
			_, err := ParseKV(strings.NewReader(tc.in), "h")
			checkErr(t, err, tc.want)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *ParseError", err, err)
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestReadMissingFile(t *testing.T) {
	if _, err := ReadKV(filepath.Join(t.TempDir(), "none.edn")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want not found", err)
	}
}

// Every Jepsen history of testdata/jepsen reads, with one operation for each
// invocation, timed by line numbers.
func TestTestdata(t *testing.T) {
	dir := testdata(t)
	etcd, _ := filepath.Glob(filepath.Join(dir, "jepsen-etcd", "etcd_*.log"))
	kv, _ := filepath.Glob(filepath.Join(dir, "jepsen-kv", "c*.txt"))
	if len(etcd) != 103 || len(kv) != 6 {
		t.Fatalf("%d etcd and %d kv histories, want 103 and 6", len(etcd), len(kv))
	}
	invocations := func(path string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), ":invoke")
	}
	for _, path := range etcd {
		ops, err := ReadRegisterLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := invocations(path); len(ops) != n {
			t.Errorf("%s: %d operations, want %d", path, len(ops), n)
		}
		for _, o := range ops {
			if o.Key != "" || o.Call < 1 || (o.Type != history.Info && o.Return <= o.Call) {
				t.Fatalf("%s: %+v", path, o)
			}
		}
	}
	for _, path := range kv {
		ops, err := ReadKV(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := invocations(path); len(ops) != n {
			t.Errorf("%s: %d operations, want %d", path, len(ops), n)
		}
	}
	// etcd_000.log in detail: its first line is an invocation of process
	// 0 completed on line 7; 16 writes and cas timed out.
	ops, _ := ReadRegisterLog(filepath.Join(dir, "jepsen-etcd", "etcd_000.log"))
	if o := ops[0]; o.Process != 0 || o.F != checkers.RegisterRead || o.Type != history.Ok || o.Call != 1 || o.Return != 7 || o.Value.Present {
		t.Errorf("first operation %+v", o)
	}
	info := 0
	for _, o := range ops {
		if o.Type == history.Info {
			info++
		}
	}
	if info != 16 {
		t.Errorf("%d info operations, want 16", info)
	}
}
