package cli

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
)

// evilText is a value a stored or remote file may hold: a title-setting
// and a line-erasing escape, a carriage return, a line that GitHub
// Actions runs as a workflow command, a bidi override, and more bytes
// than a value is shown with.
var evilText = "x\x1b]0;owned\a\r\x1b[2K\n::error::forged\u202e" + strings.Repeat("y", 5000)

// What rerun prints of test.json's client_cmd and client_image reaches
// the terminal through safetext (issue 48, item 4); trends' lines are
// matrix's (TestPrintTrendsFiltered).
func TestPrintedStoredTextIsFiltered(t *testing.T) {
	got := runs.ClientRecorded(spec.Spec{WorkerKnobs: spec.WorkerKnobs{}, ClientCmd: evilText, ClientImage: evilText})
	if err := safetext.Check(got); err != nil {
		t.Errorf("rerun's client command: %v", err)
	}
	if strings.Contains(got, strings.Repeat("y", safetext.MaxMessage)) {
		t.Errorf("rerun's client command is printed uncut (%d bytes)", len(got))
	}

}
