package cli

import (
	"html"
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
