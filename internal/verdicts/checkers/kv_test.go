package checkers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Hand-written key-value operations on key "k" unless kon says otherwise.
func kget(p int, call, ret int64, v string) KVOp {
	return KVOp{Process: p, Key: "k", F: KVGet, Type: history.Ok, Call: call, Return: ret, Value: v}
}

func kput(p int, call, ret int64, v string) KVOp {
	return KVOp{Process: p, Key: "k", F: KVPut, Type: history.Ok, Call: call, Return: ret, Value: v}
}

func kapp(p int, call, ret int64, v string) KVOp {
	return KVOp{Process: p, Key: "k", F: KVAppend, Type: history.Ok, Call: call, Return: ret, Value: v}
}

func kas(t history.Type, o KVOp) KVOp { o.Type = t; return o }

func kon(key string, ops ...KVOp) []KVOp {
	for i := range ops {
		ops[i].Key = key
	}
	return ops
}

func TestCheckKV(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ops     []KVOp
		want    Validity
		failing string
	}{
		{"legal", []KVOp{kget(0, 0, 5, ""), kapp(0, 6, 10, "a"), kapp(1, 11, 20, "b"), kget(2, 21, 30, "ab"), kput(0, 31, 40, "x"), kget(1, 41, 50, "x")}, Valid, ""},
		{"concurrent appends in either order", []KVOp{kapp(0, 0, 10, "a"), kapp(1, 5, 15, "b"), kget(2, 20, 30, "ba")}, Valid, ""},
		{"stale get", []KVOp{kapp(0, 0, 10, "a"), kapp(1, 11, 20, "b"), kget(2, 21, 30, "a")}, Invalid, "k"},
		{"lost append", []KVOp{kapp(0, 0, 10, "a"), kapp(1, 0, 10, "b"), kget(2, 21, 30, "b")}, Invalid, "k"},
		{"info append that took effect", []KVOp{kapp(0, 0, 10, "a"), kas(history.Info, kapp(1, 11, 20, "b")), kget(2, 30, 40, "ab")}, Valid, ""},
		{"info append that did not", []KVOp{kapp(0, 0, 10, "a"), kas(history.Info, kapp(1, 11, 20, "b")), kget(2, 30, 40, "a")}, Valid, ""},
		{"info append undone", []KVOp{kapp(0, 0, 10, "a"), kas(history.Info, kapp(1, 11, 20, "b")), kget(2, 30, 40, "ab"), kget(2, 50, 60, "a")}, Invalid, "k"},
		{"failed put left out", []KVOp{kas(history.Fail, kput(0, 0, 10, "x")), kget(1, 11, 20, "")}, Valid, ""},
		{"info get left out", []KVOp{kapp(0, 0, 10, "a"), kas(history.Info, kget(1, 11, 20, "zzz"))}, Valid, ""},
		{"one key fails", append(kon("a", kapp(0, 0, 10, "x"), kget(1, 11, 20, "x")), kon("b", kget(2, 0, 10, "x"))...), Invalid, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckKV(tc.ops, Options{Timeout: 10 * time.Second})
			if r.Valid != tc.want || r.Error != "" {
				t.Fatalf("got %s (%s %s), want %s", r.Valid, r.Message, r.Error, tc.want)
			}
			if tc.want == Invalid && r.FailingKey != tc.failing {
				t.Errorf("failing key %q, want %q", r.FailingKey, tc.failing)
			}
			if r.Model != ModelKV || r.Ops != len(tc.ops) {
				t.Errorf("figures: %+v", r)
			}
		})
	}
}

func TestCheckKVUnknown(t *testing.T) {
	if r := CheckKV(nil, Options{}); r.Valid != Unknown {
		t.Errorf("empty history: %s", r.Valid)
	}
	if r := CheckKV([]KVOp{{Type: history.Ok}}, Options{}); r.Valid != Unknown || !strings.Contains(r.Error, "unknown function") {
		t.Errorf("bad function: %s %q", r.Valid, r.Error)
	}
}

func TestKVVisualization(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.html")
	r := CheckKV([]KVOp{kapp(0, 0, 10, "a"), kapp(1, 11, 20, "b"), kget(2, 21, 30, "a")}, Options{VisualizationPath: path})
	if r.Valid != Invalid || r.Visualization != "kv.html" {
		t.Fatalf("%s, visualization %q (%s)", r.Valid, r.Visualization, r.Error)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `append(\"k\", \"b\")`) {
		t.Errorf("the visualization does not describe the operations")
	}
}
