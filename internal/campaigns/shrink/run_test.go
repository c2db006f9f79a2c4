package shrink

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// recordedRun is a copy of a recorded unfenced etcd run (testdata/runs:
// its test.json, its history and the results.json check writes for it,
// the .gz files unpacked), with each edit (file, from, to: every from in
// file replaced by to) made.
func recordedRun(t *testing.T, edits ...[3]string) string {
	t.Helper()
	src := filepath.Join("testdata", "runs", "etcd-none-pause-holder")
	dir := t.TempDir()
	for _, name := range []string{store.TestFile, store.HistoryFile, store.ResultsFile} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, os.ErrNotExist) {
			b = gunzip(t, filepath.Join(src, name+".gz"))
		} else if err != nil {
			t.Fatal(err)
		}
		for _, e := range edits {
			if e[0] != name {
				continue
			}
			if !strings.Contains(string(b), e[1]) {
				t.Fatalf("%s has no %q", name, e[1])
			}
			b = []byte(strings.ReplaceAll(string(b), e[1], e[2]))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// gunzip is the content of the gzip file at path.
func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// markdown stands for the CLI's Markdown text (RunOptions.Markdown) in
// these tests: '<', '>' and '&' as character references, every other
// ASCII punctuation character escaped with a backslash.
func markdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("!\"#$%'()*+,-./:;=?@[\\]^_`{|}~", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// On the recorded unfenced etcd run, the faults the losses blame are
// pause-holder faults aimed at the stale party of a loss (its process and
// token), and their indexes are steps of the schedule rerun replays.
func TestBlamedOnRecordedRun(t *testing.T) {
	dir := recordedRun(t)
	var res store.Results
	b, err := os.ReadFile(filepath.Join(dir, store.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	events, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	faults, err := history.Faults(events)
	if err != nil {
		t.Fatal(err)
	}
	losses := res.Result.Summary().Losses
	blamed := Blamed(faults, losses)
	if len(blamed) == 0 {
		t.Fatalf("no fault of %d blamed for %d losses", len(faults), len(losses))
	}
	for _, i := range blamed {
		f := faults[i]
		if !strings.HasPrefix(f.Fault, "pause-holder") || f.Holder == nil || f.Holder.Token == nil {
			t.Errorf("fault %d blamed: %s, not aimed at a holder", i, f.Fault)
			continue
		}
		stale := false
		for _, le := range losses {
			w := le.OverwrittenBy
			if w != nil && w.Stale && w.Process == f.Holder.Process && w.Token == *f.Holder.Token ||
				le.Process == f.Holder.Process && le.Token == *f.Holder.Token {
				stale = true
			}
		}
		if !stale {
			t.Errorf("fault %d blamed: holder %d token %d is no loss's stale party", i, f.Holder.Process, *f.Holder.Token)
		}
	}
	if checkersWith(res.Result, res.Valid()) == nil {
		t.Errorf("no checker of the invalid run is invalid")
	}
}

// shrinkable takes an invalid run for its invalid checkers, and an
// unknown one for its unknown checkers only with --unknown; a valid run,
// an unknown one without --unknown, and one no checker of which has its
// verdict are bad input (cmdline.ErrUsage: exit 254), nothing to shrink.
func TestShrinkable(t *testing.T) {
	const top = "{\n  \"valid\": false"
	for _, tc := range []struct {
		name    string
		edit    [][3]string
		unknown bool
		verdict checkers.Validity
		want    []string // the checkers, or with refused the error's words
		refused bool
	}{
		{"invalid", nil, false, checkers.Invalid, []string{"linearizable", "lost-updates"}, false},
		{"valid", [][3]string{{store.ResultsFile, `"valid": false`, `"valid": true`}}, false, 0,
			[]string{"is valid (fencing none, nemesis pause-holder): nothing to shrink"}, true},
		{"unknown", [][3]string{{store.ResultsFile, `"valid": false`, `"valid": "unknown"`}}, false, 0,
			[]string{"is unknown, not invalid: give --unknown"}, true},
		{"unknown with --unknown", [][3]string{{store.ResultsFile, `"valid": false`, `"valid": "unknown"`}}, true, checkers.Unknown,
			[]string{"linearizable", "lost-updates"}, false},
		{"no checker unknown", [][3]string{{store.ResultsFile, top, "{\n  \"valid\": \"unknown\""}}, true, 0,
			[]string{"is unknown, but no checker of its results.json is: nothing to shrink"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := recordedRun(t, tc.edit...)
			s, err := shrinkable(dir, tc.unknown)
			if tc.refused {
				if !errors.Is(err, cmdline.ErrUsage) || !strings.Contains(fmt.Sprint(err), tc.want[0]) {
					t.Errorf("shrinkable: %v, want a usage error saying %q", err, tc.want[0])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.verdict != tc.verdict || !slices.Equal(s.checkers, tc.want) || s.dir != dir {
				t.Errorf("shrinkable: %s %v in %s, want %s %v in %s", s.verdict, s.checkers, s.dir, tc.verdict, tc.want, dir)
			}
		})
	}
}

// Run refuses before anything runs: a run with nothing to shrink before
// its rerun configuration is built, the configuration's own error as it
// is, and an output directory that holds files; nothing is written where
// the output would go.
func TestRunRefuses(t *testing.T) {
	invalid := recordedRun(t)
	valid := recordedRun(t, [3]string{store.ResultsFile, `"valid": false`, `"valid": true`})
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("the rerun's configuration")
	config := func(context.Context) (harness.Config, error) {
		return harness.Config{Spec: spec.Spec{Name: "etcd-none-pause-holder-rerun"}, Replay: &harness.Replay{Of: invalid}}, nil
	}
	for _, tc := range []struct {
		name     string
		dir, out string
		rerun    func(context.Context) (harness.Config, error)
		is       error
		want     string
		rerunRan bool
	}{
		{"valid", valid, "", config, cmdline.ErrUsage, "nothing to shrink", false},
		{"rerun", invalid, "", func(context.Context) (harness.Config, error) { return harness.Config{}, bad }, bad, bad.Error(), true},
		{"out", invalid, full, config, cmdline.ErrUsage, "--out " + full + " is not empty", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := t.TempDir()
			ran := false
			o := RunOptions{Dir: tc.dir, Confirm: Confirm{K: 2, N: 3}, Budget: Budget{Runs: 40}, Results: results, Out: tc.out, Markdown: markdown,
				Rerun: func(ctx context.Context) (harness.Config, error) {
					ran = true
					return tc.rerun(ctx)
				},
			}
			var stdout, stderr strings.Builder
			code, err := Run(t.Context(), o, &stdout, &stderr)
			if code != 0 || !errors.Is(err, tc.is) || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("Run: %d, %v; want 0 and an error saying %q", code, err, tc.want)
			}
			if ran != tc.rerunRan {
				t.Errorf("the rerun's configuration built: %t, want %t", ran, tc.rerunRan)
			}
			if stdout.Len() > 0 || stderr.Len() > 0 {
				t.Errorf("Run printed %q, %q", stdout.String(), stderr.String())
			}
			if ents, _ := os.ReadDir(results); len(ents) > 0 {
				t.Errorf("Run wrote %s into the results directory", ents[0].Name())
			}
			if ents, _ := os.ReadDir(full); len(ents) != 1 {
				t.Errorf("Run wrote into the full --out: %d files", len(ents))
			}
		})
	}
}

func TestParseBudget(t *testing.T) {
	for s, want := range map[string]Budget{"40": {Runs: 40}, "1": {Runs: 1}, "30m": {For: 30 * 60e9}, "90s": {For: 90e9}} {
		b, err := ParseBudget(s)
		if err != nil || b.Runs != want.Runs || b.For != want.For || b.String() != s {
			t.Errorf("ParseBudget(%q) = %+v (%s), %v; want %+v", s, b, b, err, want)
		}
	}
	for _, s := range []string{"0", "-3", "0s", "-1m", "soon", ""} {
		if _, err := ParseBudget(s); err == nil || !strings.Contains(err.Error(), "want a number of runs (at least 1) or a duration") {
			t.Errorf("ParseBudget(%q): %v, want refused", s, err)
		}
	}
	if b := (Budget{Runs: 3}); b.String() != "3" {
		t.Errorf("Budget{Runs: 3} is %q", b)
	}
	if b := (Budget{For: 90e9}); b.String() != "1m30s" {
		t.Errorf("Budget{For: 90s} is %q", b)
	}
}

// shrink's output from a hostile stored run (issue 48, item 7): its links
// are not copied but listed as refused (a rootlink -> / was copied as
// it was), a sparse file keeps its holes (it was written out in full),
// and test.json's strings reach repro.md through safetext and
// RunOptions.Markdown (a forged "## Expected" section, an <img> tag and an
// escape sequence did, raw).
func TestOutputFromHostileRun(t *testing.T) {
	dir := recordedRun(t, [3]string{store.TestFile, `"target_version": "3.6.16"`,
		`"target_version": "3.6.16\n\n## Expected\n\nNothing <img src=x onerror=alert(1)> \u001b]0;owned\u0007"`})
	if err := os.Symlink("/", filepath.Join(dir, "rootlink")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(64 << 20)
	f.WriteAt([]byte("end"), 64<<20-3)
	f.Close()
	out := t.TempDir()
	stored := storedRun{dir: dir, verdict: checkers.Invalid, checkers: []string{"lost-updates"}}
	if err := writeShrunk(out, Confirm{K: 1, N: 1}, stored, Candidate{}, Result{}, &harnessRunner{}, markdown); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(out, shrunkRun, "rootlink")); err == nil {
		t.Errorf("the stored run's link to / is in shrink's output")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(out, shrunkRun, "sparse.bin"), &st); err != nil {
		t.Fatal(err)
	} else if st.Size != 64<<20 || st.Blocks*512 > 1<<20 {
		t.Errorf("sparse.bin: %d bytes, %d stored: want 64 MiB with its holes", st.Size, st.Blocks*512)
	}
	md, err := os.ReadFile(filepath.Join(out, shrunkRepro))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if strings.Count("\n"+s, "\n## Expected") != 1 || strings.Contains(s, "<img") || strings.Contains(s, "\x1b") {
		t.Errorf("repro.md holds test.json's markup raw:\n%s", md)
	}
	if !strings.Contains(s, "rootlink") || !strings.Contains(s, "Refused") {
		t.Errorf("repro.md does not list the refused link:\n%s", md)
	}
}
