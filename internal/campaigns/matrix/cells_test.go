package matrix

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// --cell's list: numbers as matrix --list prints them, sorted and each
// once; a matrix.json's "cells 1,3" reads back as the same selection.
func TestParseCells(t *testing.T) {
	sh, err := ParseCells([]string{"3, 1", "3", "0"})
	if err != nil || !slices.Equal(sh.Cells, []int{0, 1, 3}) || sh.String() != "cells 0,1,3" || !sh.Partial() {
		t.Fatalf("ParseCells: %+v %q %v", sh, sh.String(), err)
	}
	for i, want := range []bool{true, true, false, true, false} {
		if sh.Has(i) != want {
			t.Errorf("Has(%d) = %v", i, !want)
		}
	}
	if back, err := shardOfMatrix(sh.String()); err != nil || !slices.Equal(back.Cells, sh.Cells) {
		t.Errorf("shardOfMatrix(%q): %+v %v", sh.String(), back, err)
	}
	for _, bad := range [][]string{{""}, {"-1"}, {"x"}, {"1,,2"}, {"1000000"}, {manyCells(1001)}} {
		if _, err := ParseCells(bad); !errors.Is(err, errUsage) {
			t.Errorf("%.40q: %v, want a usage error", bad, err)
		}
	}
	// Written by hand: out of order, repeated, a space.
	for _, bad := range []string{"cells 3,1", "cells 1,1", "cells 1, 3", "cells ", "cells 1\n"} {
		if _, err := shardOfMatrix(bad); err == nil {
			t.Errorf("shardOfMatrix(%q) took it", bad)
		}
	}
	if got := withoutShard([]string{"--cell", "3", "--target", "etcd", "-cell=1,2"}); !slices.Equal(got, []string{"--target", "etcd"}) {
		t.Errorf("withoutShard: %v", got)
	}
}

// A night's results and a re-run of its failing cell (matrix --cell 1)
// merge into the night with that cell's newest run, said in Duplicates;
// the re-run alone leaves the other cells not run. A chosen cell the
// matrix does not have is refused.
func TestMergeChosenCells(t *testing.T) {
	a := writeShard(t, "1/2", 4, cell(0, "none", "invalid"), cell(2, "cas", "valid"))
	b := writeShard(t, "2/2", 4, cell(1, "token", "invalid"), cell(3, "token", "valid"))
	night := filepath.Join(t.TempDir(), "night")
	if m, err := Merge(night, []string{a, b}, io.Discard); err != nil || m.ExitCode != ExitInvalid {
		t.Fatalf("night: exit %d, %v", m.ExitCode, err)
	}
	again := cell(1, "token", "valid")
	again.Run = "etcd-token/" + stampN(40)
	rerun := writeShard(t, "cells 1", 4, again)
	m, err := Merge(filepath.Join(t.TempDir(), "out"), []string{rerun, night}, io.Discard)
	if err != nil || m.ExitCode != ExitValid || m.Cells[1].Run != again.Run {
		t.Fatalf("night with cell 1 re-run: exit %d, cell 1 %+v, %v", m.ExitCode, m.Cells[1], err)
	}
	if len(m.Duplicates) != 1 || m.Duplicates[0].Cell != 1 || m.Duplicates[0].Kept.Shard != rerun || len(m.Duplicates[0].Dropped) != 1 {
		t.Fatalf("duplicates: %+v", m.Duplicates)
	}
	// Run with other arguments (--strict): merged, and said.
	strict := filepath.Join(t.TempDir(), "strict")
	if err := os.MkdirAll(filepath.Join(strict, again.Run), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(strict, trends.Matrix{Args: []string{"--target", "etcd", "--strict", "--cell", "1"}, Strict: true, Cells: []trends.MatrixCell{again}, TotalCells: 4, Shard: "cells 1"}); err != nil {
		t.Fatal(err)
	}
	var warned strings.Builder
	if _, err := Merge(filepath.Join(t.TempDir(), "o"), []string{night, strict}, &warned); err != nil || !strings.Contains(warned.String(), "ran with other arguments") || !strings.Contains(warned.String(), "--strict") {
		t.Errorf("a cell re-run with --strict over a night without: %v, told %q", err, warned.String())
	}
	alone, err := Merge(filepath.Join(t.TempDir(), "alone"), []string{rerun}, io.Discard)
	if err != nil || alone.ExitCode != ExitUnknown || alone.Cells[0].Verdict != "not run" || alone.Cells[1].Verdict != "valid" {
		t.Fatalf("the re-run alone: exit %d, %+v, %v", alone.ExitCode, alone.Cells, err)
	}
	beyond := writeShard(t, "cells 1,7", 4, again)
	if _, err := Merge(t.TempDir(), []string{beyond}, io.Discard); !errors.Is(err, errUsage) {
		t.Fatalf("cells 1,7 of a matrix of 4: %v", err)
	}
	notListed := writeShard(t, "cells 1,2", 4, again)
	if _, err := Merge(t.TempDir(), []string{notListed}, io.Discard); !errors.Is(err, errUsage) {
		t.Fatalf("cells 1,2 listing cell 1 only: %v", err)
	}
}

// manyCells is "0,1,...,n-1".
func manyCells(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}
