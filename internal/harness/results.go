package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fencecheck/fencecheck/internal/base/buildinfo"
	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// WriteResults writes the outputs of a check into the run directory, all or
// nothing: results.json, report.html (of events, the history checked) and
// junit.xml are each written to a temporary file first, and only once all
// are written are they renamed into place, with the checkers'
// visualization (stagedViz) as linearizability.html, and history.txt
// (events as text, history.WriteText), or the old linearizability.html
// removed when the check wrote none. If anything fails before, the run's
// files stay as they were. Then, if the run's results directory is one
// fencecheck made (store.IsResultsRoot), its index.html is rewritten to
// list the run; elsewhere no index is touched. The report is the
// workload's view (views.Of). Errors are the caller's to wrap.
func WriteResults(run *store.Run, test store.TestInfo, res *store.Results, events []history.Event, w workloads.Workload) error {
	viz := stagedViz(run)
	defer os.Remove(viz) // unless it was put in place
	vizSize := int64(-1)
	if st, err := os.Stat(viz); err == nil && st.Mode().IsRegular() {
		vizSize = st.Size()
	}

	res.CheckedBy = buildinfo.Read().String()
	resJSON, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", store.ResultsFile, err)
	}
	resJSON = append(resJSON, '\n')
	var pending []*store.Pending
	defer func() {
		for _, p := range pending {
			p.Discard()
		}
	}()
	// history.txt is streamed to its file: a history can be large.
	text, textSize, err := run.PendStream(store.HistoryText, func(w io.Writer) error {
		return history.WriteText(w, events, test.HistoryStarted, test.Concurrency)
	})
	if err != nil {
		return err
	}
	pending = append(pending, text)
	files := report.RunFiles(run.Dir, map[string]int64{store.ResultsFile: int64(len(resJSON)), store.LinFile: vizSize, store.HistoryText: textSize})
	var page bytes.Buffer
	in := ReportInput(test, res, absDir(run.Dir))
	in.Events, in.Files = events, files
	if err := report.Render(&page, in); err != nil {
		return err
	}
	junit, err := report.JUnit(test, res, run.Path(store.ReportFile))
	if err != nil {
		return err
	}

	for _, out := range []struct {
		name string
		b    []byte
	}{{store.ResultsFile, resJSON}, {store.ReportFile, page.Bytes()}, {report.JUnitFile, junit}} {
		p, err := run.Pend(out.name, out.b)
		if err != nil {
			return err
		}
		pending = append(pending, p)
	}

	// Everything is written: put it in place.
	lin := run.Path(store.LinFile)
	if vizSize >= 0 {
		err = os.Rename(viz, lin)
	} else if err = os.Remove(lin); errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return err
	}
	for _, p := range pending {
		if err := p.Commit(); err != nil {
			return err
		}
	}
	if !store.IsResultsRoot(run.Root) {
		return nil
	}
	if err := report.WriteIndex(run.Root); err != nil {
		return err
	}
	return nil
}

// absDir is dir made absolute, links resolved (results/latest: the run it
// points at), or as it is if that fails.
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}
