package zoo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// maxPublishFile bounds each file zoo --publish copies from a run it
// links: a larger one (a long run's log) is left out, and the report says
// so.
const maxPublishFile = 8 << 20

// zooPublish writes a published copy of the zoo into out, one that reads
// and runs wherever it is put: for each RESULTS directory, out/NAME (its
// base name, made unique) with its matrix.json and each cell's test.json
// and results.json (what zoo reads, so that zoo runs again on the copy),
// and, for each run
// the page links, the files its report links (history.jsonl, results.json,
// linearizability.html, logs/), each up to maxPublishFile, and its report
// made again from the copy: its commands name the run by its path from
// out (fencecheck rerun NAME/RUN --runs 5 --client-dir DIR), never by a
// directory of the machine that ran it, and it lists every file the run
// had that the copy left out (a run whose report cannot be made again, its
// results.json not kept, has none, and the page says why). Then the
// page, out/zoo.md, from the copy.
// The RESULTS directories are read through os.Root (no path leaves them).
func zooPublish(results []string, out string) error {
	ms, z, err := zooOpen(results)
	defer closeZoo(ms)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	linked := map[string]bool{} // matrix index and run
	for _, r := range z.linked() {
		linked[strconv.Itoa(r.invalidAt)+"\x00"+r.invalidCell] = true
	}
	var copies []string
	used := map[string]bool{}
	notKept := map[string]string{}
	for mi, zm := range ms {
		name := filepath.Base(filepath.Clean(zm.dir))
		for n := 2; used[name] || name == PageFile || name == "." || name == ".."; n++ {
			name = fmt.Sprintf("%s-%d", filepath.Base(filepath.Clean(zm.dir)), n)
		}
		used[name] = true
		dst := filepath.Join(out, name)
		if err := publishFile(zm.root, trends.MatrixFile, filepath.Join(dst, trends.MatrixFile), maxZooFile); err != nil {
			return err
		}
		for _, c := range zm.m.Cells {
			if !zooRun(c) {
				continue
			}
			if err := publishFile(zm.root, filepath.Join(c.Run, store.TestFile), filepath.Join(dst, c.Run, store.TestFile), maxZooTestInfo); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			// The belief table reads each run's results.json.
			if err := publishFile(zm.root, filepath.Join(c.Run, store.ResultsFile), filepath.Join(dst, c.Run, store.ResultsFile), maxZooResults); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if linked[strconv.Itoa(mi)+"\x00"+c.Run] {
				if err := publishRun(zm.root, c.Run, dst, filepath.ToSlash(filepath.Join(name, c.Run))); err != nil {
					// A run whose report cannot be made again (its
					// results.json or test.json not kept): the page says so.
					notKept[filepath.Join(dst, filepath.FromSlash(c.Run), store.ReportFile)] = err.Error()
				}
			}
		}
		copies = append(copies, dst)
	}
	cs, cz, err := zooOpen(copies)
	defer closeZoo(cs)
	if err != nil {
		return err
	}
	cz.notKept = notKept
	page := cz.markdown(cs, filepath.Join(out, PageFile))
	page += "\nEach report's commands run from this page's directory: `fencecheck rerun NAME/RUN --runs 5 --client-dir DIR`, " +
		"DIR the client's directory (for the examples, `examples/clients/NAME` of fencecheck's repository), whose files must be those its test.json records (`client_files`), " +
		"or add `--client-changed-ok`. Each report lists the run's files this copy keeps, and those it left out.\n"
	return os.WriteFile(filepath.Join(out, PageFile), []byte(page), 0o644)
}

// publishFile copies name, inside root, to dst, if it is a regular file
// of at most limit bytes; errors.Is(err, fs.ErrNotExist) when it is not
// there, errTooLarge past the limit.
func publishFile(root *os.Root, name, dst string, limit int64) error {
	b, err := trends.ReadBounded(root, name, limit)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// publishRun copies the run at run (inside root) into dst/run: the files
// its report links, each within maxPublishFile, and its report made again
// there (WriteReport), shown as the path shown.
func publishRun(root *os.Root, run, dst, shown string) error {
	to := filepath.Join(dst, run)
	names := []string{store.TestFile, store.HistoryFile, store.ResultsFile, store.LinFile}
	if logs, err := fs.ReadDir(root.FS(), filepath.ToSlash(filepath.Join(run, store.LogsDir))); err == nil {
		for _, e := range logs {
			if e.Type().IsRegular() {
				names = append(names, store.LogsDir+"/"+e.Name())
			}
		}
	}
	var left []report.File
	var missing []string // of the files the report is made from
	for i, n := range names {
		err := publishFile(root, filepath.Join(run, n), filepath.Join(to, n), maxPublishFile)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist):
			if i < 3 { // test.json, history.jsonl, results.json
				missing = append(missing, n)
			}
		default:
			size := int64(-1)
			if st, serr := root.Stat(filepath.Join(run, n)); serr == nil {
				size = st.Size()
			}
			left = append(left, report.File{Name: fmt.Sprintf("%s: left out of this copy (%s: %v)", n, sizeWords(size), err), Size: -1})
			if i < 3 {
				missing = append(missing, n)
			}
		}
	}
	if len(missing) > 0 {
		// Said on the page: no path of this machine in it.
		return fmt.Errorf("its results directory kept no %s of it", strings.Join(missing, ", "))
	}
	if err := WriteReport(to, shown, left); err != nil {
		return errors.New("its report could not be made again from the copied files")
	}
	return nil
}

// sizeWords is a file's size for the list of files left out ("size
// unknown" when it could not be read).
func sizeWords(size int64) string {
	if size < 0 {
		return "size unknown"
	}
	return report.File{Size: size}.HumanSize()
}

// WriteReport writes report.html of the stored run in dir (the copy of a
// run Write's published copy links) from its test.json and results.json,
// which it needs, and its history.jsonl (a history that cannot be read is
// said so on the page), as the workload's view draws them, without
// checking the history again: its commands name the run as shown
// (its path from the published page), and its files are those dir holds,
// then left (files left out of the copy, each said so). The published copy
// makes each linked run's report with it; internal/cli's 1M-operation
// browser test times it.
func WriteReport(dir, shown string, left []report.File) error {
	in, err := StoredReportInput(dir, shown)
	if err != nil {
		return err
	}
	in.Files = append(in.Files, left...)
	var page bytes.Buffer
	if err := report.Render(&page, in); err != nil {
		return err
	}
	run, err := store.Open(dir)
	if err != nil {
		return err
	}
	return run.WriteFile(store.ReportFile, page.Bytes())
}

// StoredReportInput is the report input of the run stored in dir, its
// history streamed from its file (report.Input.HistoryPath), never held
// whole by a view that reads it as it streams; shown is the directory the
// page names.
func StoredReportInput(dir, shown string) (report.Input, error) {
	run, err := store.Open(dir)
	if err != nil {
		return report.Input{}, err
	}
	var test store.TestInfo
	var raw json.RawMessage
	var res store.Results
	if err := run.ReadJSON(store.TestFile, &test); err != nil {
		return report.Input{}, err
	}
	if err := run.ReadJSON(store.ResultsFile, &raw); err != nil {
		return report.Input{}, err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return report.Input{}, err
	}
	w, err := tables.Lookup(tables.Workloads, "workload", res.Workload)
	if err != nil {
		return report.Input{}, err
	}
	if res.Result, err = w.Decode(raw); err != nil {
		return report.Input{}, err
	}
	in := harness.ReportInput(test, &res, shown)
	in.Files = report.RunFiles(dir, nil)
	in.HistoryPath = run.HistoryPath()
	return in, nil
}
