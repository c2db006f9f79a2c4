package main

import (
	"strings"
	"testing"
)

// A failing test's whole output is printed, a passing one's is not; each
// package gets its ok or FAIL line; the slowest top-level tests are listed;
// a line that is no event (a build error) passes through.
func TestFilter(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: quiet\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":3.5}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    b_test.go:7: the write took forever\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB/sub","Elapsed":1}`,
		`{"Action":"fail","Package":"p","Test":"TestB","Elapsed":9.25}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":12}`,
		`{"Action":"pass","Package":"q","Test":"TestC","Elapsed":0.5}`,
		`{"Action":"pass","Package":"q","Elapsed":1}`,
		`# r: undefined: x`,
		`{"ImportPath":"s","Action":"build-output","Output":"s/a.go:3:1: syntax error\n"}`,
	}, "\n")
	var out strings.Builder
	failed, err := filter(strings.NewReader(in), &out, 5)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	got := out.String()
	for _, want := range []string{"the write took forever", "FAIL\tp\t12.0s", "ok  \tq\t1.0s", "# r: undefined: x", "s/a.go:3:1: syntax error", "      3.5s  p TestA\n      0.5s  q TestC"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet") {
		t.Errorf("a passing test's output printed:\n%s", got)
	}
	if failed, _ := filter(strings.NewReader(`{"Action":"pass","Package":"q","Elapsed":1}`), &out, 0); failed {
		t.Error("a passing package reported as failed")
	}
	var quiet strings.Builder
	filter(strings.NewReader(in), &onlySlowest{w: &quiet}, 1)
	want := "the 1 slowest tests:\n      3.5s  p TestA\n" +
		"1 tests failed:\n  --- FAIL p TestB/sub (1.0s)\n        b_test.go:7: the write took forever\n"
	if quiet.String() != want {
		t.Errorf("quiet output %q", quiet.String())
	}
}

// What test.sh runs again: the packages that finished, the top-level
// tests that failed, and a package that failed outside its tests.
func TestOutcomes(t *testing.T) {
	in := `{"Action":"start","Package":"p/a"}
{"Action":"run","Package":"p/a","Test":"TestX"}
{"Action":"run","Package":"p/a","Test":"TestX/sub"}
{"Action":"fail","Package":"p/a","Test":"TestX/sub"}
{"Action":"fail","Package":"p/a","Test":"TestX"}
{"Action":"pass","Package":"p/a","Test":"TestY"}
{"Action":"fail","Package":"p/a"}
{"Action":"start","Package":"p/b"}
{"Action":"fail","Package":"p/b"}
{"Action":"start","Package":"p/c"}
{"Action":"pass","Package":"p/c","Test":"TestZ"}
{"Action":"skip","Package":"p/d"}
not json
`
	o, err := outcomes(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(o.finished, ","), "p/a,p/b,p/d"; got != want {
		t.Errorf("finished %s, want %s (p/c never ended: killed)", got, want)
	}
	if got, want := strings.Join(o.failed, ","), "p/a TestX,p/b -"; got != want {
		t.Errorf("failed %s, want %s", got, want)
	}
	rs, err := testReasons(strings.NewReader(`{"Action":"output","Package":"p/a","Test":"TestX/sub","Output":"    x_test.go:12: boom\n"}
{"Action":"output","Package":"p/a","Test":"TestXY","Output":"    x_test.go:13: not this one\n"}
{"Action":"output","Package":"p/b","Test":"TestX","Output":"    x_test.go:14: nor this\n"}
`), "p/a", "TestX")
	if err != nil || strings.Join(rs, "|") != "x_test.go:12: boom" {
		t.Errorf("reasons %q (%v), want the subtest's error only", rs, err)
	}
}

// -skipped lists the tests skipped with a message holding its word, and
// not the tests skipped for another reason nor those that only said it.
func TestSkipped(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"p","Test":"TestK","Output":"    k_test.go:28: make test-all: needs the Kubernetes image\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestK","Elapsed":0}`,
		`{"Action":"output","Package":"p","Test":"TestC/kazoo","Output":"    c_test.go:69: make test-all: needs the image of kazoo\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestC/kazoo","Elapsed":0}`,
		`{"Action":"output","Package":"p","Test":"TestS","Output":"    s_test.go:3: skipped under -short\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestS","Elapsed":0}`,
		`{"Action":"output","Package":"q","Test":"TestL","Output":"    l_test.go:3: logs make test-all: but passes\n"}`,
		`{"Action":"pass","Package":"q","Test":"TestL","Elapsed":1}`,
	}, "\n")
	got, err := skipped(strings.NewReader(in), "make test-all:")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p TestC/kazoo: make test-all: needs the image of kazoo", "p TestK: make test-all: needs the Kubernetes image"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("skipped = %q, want %q", got, want)
	}
}
