package matrix

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/trends"
	"github.com/fencecheck/fencecheck/targets"
)

// A cell refused before it starts (Job.Refusal: a client program whose
// client.json declares no tokens, in a token cell) is recorded refused
// without a run, as one refused at the workers' setup was; a matrix of
// refused cells alone exits 254.
func TestRefusedCellNotRun(t *testing.T) {
	refusal := targets.ErrBadConfig // Run must not touch the Config
	jobs := []Job{{MatrixCell: trends.MatrixCell{Target: "redis", Fencing: "token", Nemesis: "pause-holder"}, Refusal: refusal}}
	var log bytes.Buffer
	sum := trends.Matrix{}
	nop := func(string, ...any) {}
	if err := Run(context.Background(), jobs, t.TempDir(), &sum, Progress{Stage: nop, Done: func() {}, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if len(sum.Cells) != 1 || sum.Cells[0].Verdict != trends.Refused || sum.Cells[0].Error != refusal.Error() || sum.Cells[0].RunDir != "" {
		t.Errorf("cells %+v, want one refused without a run", sum.Cells)
	}
	if sum.ExitCode != ExitBadArgs {
		t.Errorf("exit %d, want %d", sum.ExitCode, ExitBadArgs)
	}
	if !strings.Contains(log.String(), "[1/1] refused") {
		t.Errorf("log %q", log.String())
	}
}
