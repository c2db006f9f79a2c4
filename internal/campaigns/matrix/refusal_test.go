package matrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/targets"
)

// A cell refused before it starts (Job.Refusal: a client program whose
// client.json declares no tokens, in a token cell) is recorded refused
// without a run, as one refused at the workers' setup was; a matrix of
// refused cells alone exits 254, and asks for no engine.
func TestRefusedCellNotRun(t *testing.T) {
	refusal := targets.ErrBadConfig // Run must not touch the Config
	jobs := []Job{{MatrixCell: trends.MatrixCell{Target: "redis", Fencing: "token", Nemesis: "pause-holder"}, Refusal: refusal}}
	var log bytes.Buffer
	sum := trends.Matrix{}
	nop := func(string, ...any) {}
	if err := Run(context.Background(), jobs, t.TempDir(), &sum, Progress{Stage: nop, Done: func() {}, Log: &log},
		func(context.Context) (runtime.Engine, error) {
			t.Error("a refused cell asked for an engine")
			return nil, errors.New("no engine")
		}); err != nil {
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

// A cell whose engine cannot be had (the Docker Engine unreachable) is the
// cell's harness failure, recorded as an error with the engine's reason,
// and the matrix goes on to the next cell, which asks again.
func TestEngineFailureIsTheCellsError(t *testing.T) {
	jobs := []Job{
		{MatrixCell: trends.MatrixCell{Target: "redis", Fencing: "none", Nemesis: "none"}},
		{MatrixCell: trends.MatrixCell{Target: "redis", Fencing: "token", Nemesis: "none"}},
	}
	var log bytes.Buffer
	sum := trends.Matrix{}
	nop := func(string, ...any) {}
	asked := 0
	engine := func(context.Context) (runtime.Engine, error) {
		asked++
		return nil, fmt.Errorf("%w: docker engine unreachable", harness.ErrHarness)
	}
	if err := Run(context.Background(), jobs, t.TempDir(), &sum, Progress{Stage: nop, Done: func() {}, Log: &log}, engine); err != nil {
		t.Fatal(err)
	}
	if asked != 2 {
		t.Errorf("engine asked %d times, want once a cell", asked)
	}
	for _, c := range sum.Cells {
		if c.Verdict != "error" || !strings.Contains(c.Error, "docker engine unreachable") {
			t.Errorf("cell %+v, want an error naming the engine", c)
		}
	}
	if sum.ExitCode != ExitHarness {
		t.Errorf("exit %d, want %d", sum.ExitCode, ExitHarness)
	}
}
