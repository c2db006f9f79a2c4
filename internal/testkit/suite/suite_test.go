package suite

import (
	"fmt"
	"strings"
	"testing"
)

// Under make test a test-all test is skipped, with a message that starts
// with SkipWord and names what it needs; under make test-all it runs.
func TestAll(t *testing.T) {
	t.Setenv(Env, "")
	ran := t.Run("skipped", func(t *testing.T) {
		All(t, "the Kubernetes image")
		t.Error("not skipped under make test")
	})
	if !ran {
		t.Fatal("the subtest failed")
	}
	t.Setenv(Env, "1")
	ranWhole := false
	t.Run("runs", func(t *testing.T) {
		All(t, "the Kubernetes image")
		ranWhole = true
	})
	if !ranWhole {
		t.Error("skipped under make test-all")
	}
}

// The message says where the test runs.
func TestSkipMessage(t *testing.T) {
	t.Setenv(Env, "")
	var rec recorder
	func() {
		defer func() { recover() }()
		All(&rec, "every zoo client")
	}()
	if !strings.HasPrefix(rec.msg, SkipWord) || !strings.Contains(rec.msg, "every zoo client") || !strings.Contains(rec.msg, Env+"=1") {
		t.Errorf("skip message %q", rec.msg)
	}
}

// recorder is a testing.TB whose Skipf records its message and stops.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic("skipped")
}
