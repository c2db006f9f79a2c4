package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Ctrl-C or SIGTERM before the cluster is up ends the run with no verdict
// (exit 2, "interrupted ... during set-up"), not as a harness failure whose
// message says so twice (issue: exit 255, "harness failure: interrupted
// during set-up: harness failure: ...").
func TestInterruptDuringSetUpIsNoHarnessFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code, err := cmdRun(ctx, []string{"--target", "redis", "--time-limit", "5s", "--results", t.TempDir(), "--quiet"}, &out, &errb)
	if code != exitUnknown || !errors.Is(err, errInterrupted) {
		t.Fatalf("exit %d, %v; want %d and an interruption", code, err, exitUnknown)
	}
	if msg := err.Error(); strings.Contains(msg, "harness failure") || !strings.Contains(msg, "during set-up") {
		t.Errorf("message %q: want the set-up named, and no harness failure", msg)
	}
}

// A run whose results could not be written prints its verdict and says
// what was not written: an invalid one still exits 1 (a lost update found
// is never hidden behind a harness failure), any other one 255.
func TestNotWrittenKeepsTheVerdict(t *testing.T) {
	target, err := BuiltinTarget("redis")
	if err != nil {
		t.Fatal(err)
	}
	cfg := harness.Config{Target: target, Workload: lockappend.Workload{}, Spec: spec.Spec{Nemesis: "pause-holder", Seed: 1}}
	for _, c := range []struct {
		v     checkers.Validity
		final []int64
		code  int
		err   bool
	}{{checkers.Invalid, []int64{}, exitInvalid, false}, {checkers.Valid, []int64{1}, 0, true}} {
		rec := history.NewMemoryRecorder()
		rec.Record(0, history.Invoke, la.FAppend, la.Invoke{Element: 1})
		rec.Record(0, history.Ok, la.FAppend, la.Completion{Element: 1, Token: 1, Read: []int64{}})
		rec.Record(harness.FinalReadProcess, history.Invoke, la.FFinalRead, nil)
		rec.Record(harness.FinalReadProcess, history.Ok, la.FFinalRead, la.ReadValue{Value: c.final})
		res := &store.Results{Result: lockappend.Workload{}.Check(rec.Events(), checkers.Options{Timeout: 10 * time.Second})}
		if res.Valid() != c.v {
			t.Fatalf("the history checks %s, want %s", res.Valid(), c.v)
		}
		out := &harness.Outcome{Run: &store.Run{Dir: "/results/x/1"}, Results: res, NotWritten: errors.New("no space left on device")}
		var b bytes.Buffer
		code, err := runs.NotWritten(&b, cfg, out, fmt.Errorf("%w: %w", harness.ErrNotWritten, out.NotWritten))
		if code != c.code || (err != nil) != c.err {
			t.Errorf("%s: exit %d, %v; want %d", c.v, code, err, c.code)
		}
		if s := b.String(); !strings.Contains(s, strings.ToUpper(c.v.String())) || !strings.Contains(s, "NOT WRITTEN") || !strings.Contains(s, "no space left") {
			t.Errorf("%s: output %q", c.v, s)
		}
	}
}
