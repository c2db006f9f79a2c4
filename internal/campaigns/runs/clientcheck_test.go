package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/clients/worker"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
)

func probeLine(t *testing.T, s clientproto.Step) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return worker.StepPrefix + string(b)
}

// A step whose report is longer than the old reader's 16 MiB line limit
// (issue: a release error of megabytes of '<', escaped by JSON to six
// times that) is read, and its failure counted; a report cut short, or one
// step that does not decode, is a harness failure, never a pass of the
// steps that were read (issue: such a client passed client-check, "4
// checks passed").
func TestParseProbe(t *testing.T) {
	// The test's memory goes back to the system at its end: later tests
	// measure their child processes' peak RSS, which starts from this
	// process's own.
	defer debug.FreeOSMemory()
	ok := func(name string) clientproto.Step { return clientproto.Step{Name: name, OK: true} }
	huge := clientproto.Step{Name: "release", OK: false, Detail: strings.Repeat("<", 3<<20)} // 18 MiB escaped
	lines := []string{probeLine(t, ok("init")), "time=... level=INFO msg=started", probeLine(t, ok("acquire")),
		probeLine(t, huge), probeLine(t, ok("handover"))}
	out := strings.Join(lines, "\n") + "\n" + worker.EndPrefix + "4\n"
	steps, logs, err := parseProbe(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 4 || steps[2].OK || steps[2].Name != "release" || len(logs) != 1 {
		t.Fatalf("read %d steps (%v), %d log lines: want 4 with release failed, 1 log line", len(steps), steps, len(logs))
	}

	for _, c := range []struct {
		name, out, want string
	}{
		{"no end line", strings.Join(lines[:3], "\n") + "\n", "without its end line"},
		{"a step left out", strings.Join(lines[:3], "\n") + "\n" + worker.EndPrefix + "4\n", "reported 4 steps, 2 were read"},
		{"a step that does not decode", lines[0] + "\n" + worker.StepPrefix + `{"name":"acq` + "\n" + worker.EndPrefix + "2\n", "does not decode"},
		{"two end lines", lines[0] + "\n" + worker.EndPrefix + "1\n" + worker.EndPrefix + "1\n", "second end line"},
		{"nothing", "", "without its end line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseProbe(c.out)
			if !errors.Is(err, errProbeReport) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("parseProbe: %v, want errProbeReport with %q", err, c.want)
			}
		})
	}
}

// A step's detail is cut to clientproto.MaxDetail, so the probe's lines
// stay short whatever the program answers.
func TestProbeStepsAreShort(t *testing.T) {
	defer debug.FreeOSMemory()
	s := clientproto.Step{Name: "release", Detail: strings.Repeat("<", 3<<20)}
	s = clientproto.ClipStep(s)
	if len(s.Detail) > clientproto.MaxDetail+64 || !strings.Contains(s.Detail, fmt.Sprintf("(%d bytes more)", 3<<20-clientproto.MaxDetail)) {
		t.Errorf("detail of %d bytes: %q", len(s.Detail), s.Detail[len(s.Detail)-40:])
	}
}
