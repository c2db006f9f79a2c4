package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
)

var hrefs = regexp.MustCompile(`(?:href|src)="([^"]*)"`)

// The nights a CI job keeps are its trends artifact, and every link in
// them resolves inside them: trends.html and the root's index.html link
// each night's index and each cell's report, a night's index its runs'
// reports and files, a report the files of its run. Two nights here, each
// the merge of a shard whose run is a stored run checked again.
func TestTrendsArtifactSelfContained(t *testing.T) {
	nights := filepath.Join(t.TempDir(), "nights")
	src := filepath.Join("testdata", "runs", "redis-nopersist-token-kill")
	for i, night := range []string{"20261201T021700Z", "20261202T021700Z"} {
		shard := t.TempDir()
		stamp := time.Date(2026, 12, 1+i, 2, 17, 0, 0, time.UTC).Format("20060102T150405.000Z")
		run := filepath.Join(shard, "redis-nopersist-kill-token", stamp)
		if err := os.CopyFS(run, os.DirFS(copyRun(t, src))); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runInProcess("check", run); code != exitInvalid {
			t.Fatalf("check: exit %d: %s", code, stderr)
		}
		cells := []trends.MatrixCell{
			{Target: "redis-nopersist", Resource: "lock-store", Nemesis: "kill", Fencing: "token", Seed: 7, Verdict: "invalid", MustBeValid: true,
				Acknowledged: 59, Lost: 55, Run: "redis-nopersist-kill-token/" + stamp},
		}
		if err := matrix.Write(shard, trends.Matrix{Started: time.Date(2026, 12, 1+i, 2, 17, 0, 0, time.UTC), Cells: cells, TotalCells: 1, ExitCode: 1}); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runInProcess("merge", "--results", filepath.Join(nights, night), shard); code != exitInvalid {
			t.Fatalf("merge: exit %d: %s", code, stderr)
		}
	}
	if code, out, stderr := runInProcess("trends", nights); code != exitValid {
		t.Fatalf("trends: exit %d: %s%s", code, out, stderr)
	}
	seen := map[string]bool{}
	links := 0
	var crawl func(page string)
	crawl = func(page string) {
		if seen[page] {
			return
		}
		seen[page] = true
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range hrefs.FindAllStringSubmatch(string(b), -1) {
			u, err := url.Parse(m[1])
			if err != nil || u.Scheme != "" || u.Path == "" {
				continue // an anchor, data:, or a page elsewhere on purpose
			}
			target := filepath.Join(filepath.Dir(page), filepath.FromSlash(u.Path))
			rel, err := filepath.Rel(nights, target)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links %s, outside the nights", page, m[1])
				continue
			}
			links++
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links %s, which the nights do not hold", strings.TrimPrefix(page, nights), m[1])
				continue
			}
			if strings.HasSuffix(target, ".html") {
				crawl(target)
			}
		}
	}
	crawl(filepath.Join(nights, "trends.html"))
	crawl(filepath.Join(nights, "index.html"))
	if links < 10 || len(seen) < 4 {
		t.Errorf("%d links in %d pages: the crawl found too little", links, len(seen))
	}
	t.Logf("%d links in %d pages resolve", links, len(seen))
}
