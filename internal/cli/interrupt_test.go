package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
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
