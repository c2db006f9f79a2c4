package shrink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/verdicts/experiment"
	"github.com/fencecheck/fencecheck/internal/verdicts/rerun"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Files of shrink's output directory, beside the smallest run's copy.
const (
	shrunkRun        = "run"
	shrunkExperiment = "experiment.json"
	shrunkRepro      = "repro.md"
	shrunkLog        = "shrink.json"
)

// writeShrunk writes shrink's output into out: a copy of the smallest
// failing run (the stored run when no candidate was kept), its
// configuration as an experiment file, repro.md and shrink.json;
// markdown is RunOptions.Markdown, for repro.md.
func writeShrunk(out string, rule Confirm, stored storedRun, start Candidate, found Result, r *harnessRunner, markdown func(string) string) error {
	src := stored.dir
	for _, o := range found.BestRuns {
		if o.Failed {
			src = o.Dir
			break
		}
	}
	dst := filepath.Join(out, shrunkRun)
	// The stored run is anybody's directory: its links are not copied
	// (a link to / would be one in shrink's output), holes stay holes.
	var refused []string
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	err := matrix.CopyRun(src, dst, func(p string, m fs.FileMode) {
		refused = append(refused, p+" ("+images.FileKind(m)+")")
	})
	if err != nil {
		return fmt.Errorf("shrink: copying %s: %w", src, err)
	}
	f, err := experiment.Read(filepath.Join(dst, store.TestFile), experiment.Stored)
	if err != nil {
		return fmt.Errorf("shrink: %w", err)
	}
	test := f.Test
	exp := test.Spec
	exp.Results = ""
	exp.TakeAttach(spec.Spec{}) // never a file's: the command line's
	b, err := withSchedule(exp, found.Best.Steps)
	if err != nil {
		return err
	}
	if _, err := experiment.Parse(b, shrunkExperiment, experiment.Run); err != nil {
		return fmt.Errorf("shrink: the experiment file does not read back: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, shrunkExperiment), b, 0o644); err != nil {
		return err
	}
	log := struct {
		Of       string   `json:"of"`
		Verdict  string   `json:"verdict"`
		Checkers []string `json:"checkers"`
		From     string   `json:"from"`
		To       string   `json:"to"`
		Run      string   `json:"run"`
		Runs     int      `json:"runs"`
		Stopped  string   `json:"stopped"`
		Trials   []Trial  `json:"trials"`
		Refused  []string `json:"refused,omitempty"`
	}{stored.dir, stored.verdict.String(), stored.checkers, start.String(), found.Best.String(), src, found.Runs, found.Stopped, found.Trials, refused}
	if b, err = json.MarshalIndent(log, "", "  "); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, shrunkLog), append(b, '\n'), 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		abs = dst
	}
	md := repro(abs, out, test, rule, stored, start, found, r.summaries[src], refused, markdown)
	return os.WriteFile(filepath.Join(out, shrunkRepro), []byte(md), 0o644)
}

// repro is repro.md: a bug report draft of the smallest failing run in
// dir, with the versions, the one command, what happened, expected
// against actual, and the fencing that prevents it.
func repro(dir, out string, test store.TestInfo, rule Confirm, stored storedRun, start Candidate, found Result, summary string, refused []string, markdown func(string) string) string {
	var b strings.Builder
	// test.json and results.json are anybody's files: every value of
	// theirs is filtered (safetext) and Markdown-escaped, a command is
	// one line of an indented code block, and the summary each line of
	// one, so that no value makes a section, a tag or an escape sequence.
	md := func(s string) string { return markdown(safetext.Name(s)) }
	version := md(test.TargetVersion)
	if test.TargetVersion == "" {
		version = "(version not recorded)"
	}
	fmt.Fprintf(&b, "# %s %s: %s under %s (fencing %s)\n\n", md(test.Target), version, stored.verdict, md(test.Nemesis), md(test.Fencing))
	if found.BestRuns == nil {
		fmt.Fprintf(&b, "No smaller run failed %s of its runs (%d runs, %s): this is the stored run.\n\n", rule, found.Runs, found.Stopped)
	} else {
		fmt.Fprintf(&b, "The smallest of %d runs that `fencecheck shrink` tried (stopped: %s): it failed %d of %d confirming runs (rule %s).\n\n",
			found.Runs, found.Stopped, failures(found.BestRuns), len(found.BestRuns), rule)
	}
	b.WriteString("## Versions\n\n")
	fmt.Fprintf(&b, "- %s %s\n", md(test.Target), version)
	fmt.Fprintf(&b, "- fencecheck %s (revision %s)\n", md(test.Fencecheck), md(test.FencecheckRevision))
	for i, k := range slices.Sorted(maps.Keys(test.Images)) {
		if i == report.MaxItems {
			fmt.Fprintf(&b, "- and %d more images\n", len(test.Images)-i)
			break
		}
		fmt.Fprintf(&b, "- image %s: %s\n", md(k), md(test.Images[k]))
	}
	b.WriteString("\n## Reproduce\n\n")
	fmt.Fprintf(&b, "    %s\n\n", safetext.Text(rerun.Command(dir, test), 8<<10))
	b.WriteString("replays this run's configuration, seed and fault schedule:\n\n")
	for i, s := range found.Best.Steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, md(s.String()))
	}
	fmt.Fprintf(&b, "\nThe same as an experiment file, its configuration with this schedule (`schedule`), to keep or share without the run: `fencecheck run -f %s`.\n\n",
		rerun.Quote(filepath.Join(out, shrunkExperiment)))
	fmt.Fprintf(&b, "Shrunk from %s (%s) to %s.\n\n", md(stored.dir), md(start.String()), md(found.Best.String()))
	if len(refused) > 0 {
		names := make([]string, 0, min(len(refused), report.MaxItems))
		for _, r := range refused[:min(len(refused), report.MaxItems)] {
			names = append(names, md(r))
		}
		fmt.Fprintf(&b, "Refused, not copied (only directories and regular files are): %s", strings.Join(names, ", "))
		if len(refused) > len(names) {
			fmt.Fprintf(&b, " and %d more", len(refused)-len(names))
		}
		b.WriteString(".\n\n")
	}
	b.WriteString("## What happened\n\n")
	fmt.Fprintf(&b, "%s, %d lock clients, %d server nodes, for %s; the report tells the story of each lost update: %s\n\n",
		md(test.Workload), test.Concurrency, test.Nodes, md(test.TimeLimit.String()), md(filepath.Join(dir, store.ReportFile)))
	if summary != "" {
		for _, l := range strings.Split(strings.TrimSuffix(summary, "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", safetext.Message(l))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Expected\n\nEvery update the resource acknowledged is in the final read: a client writes only while it holds the lock, so no holder's write erases another's.\n\n")
	b.WriteString("## Actual\n\n")
	fmt.Fprintf(&b, "The run is %s: %s (the stored run's failing checkers: %s).\n\n", stored.verdict, md(strings.Join(checkersWith(readResultOf(dir), stored.verdict), ", ")), md(strings.Join(stored.checkers, ", ")))
	b.WriteString("## The fencing that prevents it\n\n")
	b.WriteString("A lock is a lease: a paused or cut-off holder can go on writing after its lease passed to another client. ")
	b.WriteString("A fencing token (a number that grows with every grant, sent with every write; the resource keeps the highest it accepted and refuses lower ones) stops the stale write at the resource. ")
	fmt.Fprintf(&b, "The same run with `--fencing token` (`fencecheck run -f %s --fencing token`) should be valid, with the stale writes counted as fence rejections.\n",
		rerun.Quote(filepath.Join(out, shrunkExperiment)))
	return b.String()
}

// withSchedule is the experiment file of the run exp with its schedule
// steps: the Spec's fields, then "schedule" (experiment.ScheduleKey), so
// that run -f replays the steps as rerun does. Indented, newline-ended.
func withSchedule(exp spec.Spec, steps []nemesis.Step) ([]byte, error) {
	b, err := json.Marshal(exp)
	if err != nil {
		return nil, err
	}
	if steps == nil {
		steps = []nemesis.Step{} // no fault left: replay none, not draw
	}
	sb, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}"))
	if len(bytes.TrimSpace(b)) > 1 {
		b = append(b, ',')
	}
	b = append(append(append(b, `"`+experiment.ScheduleKey+`":`...), sb...), '}')
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// readResultOf is the workload result of the run in dir (nil when it
// cannot be read).
func readResultOf(dir string) store.WorkloadResult {
	var res store.Results
	if b, err := store.ReadRegular(filepath.Join(dir, store.ResultsFile), store.MaxJSONSize); err != nil || json.Unmarshal(b, &res) != nil {
		return nil
	}
	return res.Result
}
