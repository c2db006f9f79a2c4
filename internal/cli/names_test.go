package cli

import (
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The terminal summary, JUnit and the report name the clients alike: each
// lost element the summary lists is told in the same words, with the same
// worker names (w1.., the timeline's lanes), in junit.xml and in the
// report's table of lost updates; and no client is called by its process
// number alone.
func TestSummaryJUnitAndReportNameClientsAlike(t *testing.T) {
	told := regexp.MustCompile(`(?m)^ {19}(.*erased .*)$`)
	for _, rr := range recordedRuns {
		if rr.lost == 0 {
			continue
		}
		t.Run(rr.dir, func(t *testing.T) {
			dir := copyRun(t, filepath.Join("testdata", "runs", rr.dir))
			code, stdout, stderr := runInProcess("check", dir)
			if code != rr.exit {
				t.Fatalf("check exit %d, want %d: %s", code, rr.exit, stderr)
			}
			lines := told.FindAllStringSubmatch(stdout, -1)
			if len(lines) == 0 {
				t.Fatalf("the summary tells no lost element:\n%s", stdout)
			}
			if strings.Contains(stdout, "of process") || strings.Contains(stdout, "by process") {
				t.Errorf("the summary names a client by its process:\n%s", stdout)
			}
			junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
			if err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(filepath.Join(dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			lanes := regexp.MustCompile(`\bw[0-9]+\b`)
			for _, l := range lines {
				s := l[1]
				if !lanes.MatchString(s) {
					t.Errorf("summary line %q names no worker", s)
				}
				// encoding/xml and html/template escape ' differently.
				if !strings.Contains(strings.ReplaceAll(string(junit), "&#39;", "'"), s) {
					t.Errorf("junit.xml lacks %q", s)
				}
				if !strings.Contains(html.UnescapeString(string(page)), s) {
					t.Errorf("report.html lacks %q", s)
				}
			}
		})
	}
}

// processNumber finds a client named by its process number in a file people
// read: "process 4" in words, "w5 p4" or "harness p1000000" as history.txt
// wrote it, "process=4" as the fault table did, and "process P" in a help
// text. Only history.jsonl, the machine-readable record, keeps process
// numbers (and results.json's "process": N fields, which are not words).
var processNumber = regexp.MustCompile(`\b[Pp]rocess[ =](?:[0-9]+|[A-Z]\b)|\b(?:w[0-9]+|harness|side writer) p[0-9]+\b`)

// A client is its worker name in every file a run writes: checking each
// recorded run writes report.html, history.txt, results.json, junit.xml
// (and linearizability.html where the history is not linearizable) and a
// summary, none of which names a client by its process number, and no
// verb's help does (issue 51, item 4). history.jsonl is the one file with
// process numbers.
func TestNoFileOfACheckNamesAProcess(t *testing.T) {
	for _, rr := range recordedRuns {
		t.Run(rr.dir, func(t *testing.T) {
			dir := copyRun(t, filepath.Join("testdata", "runs", rr.dir))
			code, stdout, stderr := runInProcess("check", dir, "--check-memory", "0")
			if code != rr.exit {
				t.Fatalf("check exit %d, want %d: %s", code, rr.exit, stderr)
			}
			scan := func(name string, b []byte) {
				if loc := processNumber.FindIndex(b); loc != nil {
					t.Errorf("%s names a client by its process number: …%s…", name, b[max(loc[0]-80, 0):min(loc[1]+40, len(b))])
				}
			}
			scan("the summary", []byte(stdout+stderr))
			files := 0
			err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "history.jsonl") || d.Name() == "test.json" {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				files++
				scan(d.Name(), b)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// report.html, results.json, junit.xml and history.txt at least.
			if files < 4 {
				t.Errorf("check wrote %d files besides the history and test.json, want at least 4", files)
			}
		})
	}
	for _, v := range verbTable() {
		if v.hidden() {
			continue
		}
		code, stdout, stderr := runInProcess(v.name, "-h")
		if code != 0 {
			t.Errorf("%s -h: exit %d: %s", v.name, code, stderr)
			continue
		}
		if loc := processNumber.FindStringIndex(stdout + stderr); loc != nil {
			h := stdout + stderr
			t.Errorf("%s -h names a client by its process number: …%s…", v.name, h[max(loc[0]-80, 0):min(loc[1]+40, len(h))])
		}
	}
}
