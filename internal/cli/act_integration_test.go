package cli

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

// actLine is a line of act's --json log.
type actLine struct {
	Time  time.Time `json:"time"`
	Msg   string    `json:"msg"`
	Job   string    `json:"job"`
	Step  string    `json:"step"`
	Stage string    `json:"stage"`
}

// actRun is one `act` of the team's workflow: its log and how it ended.
type actRun struct {
	name  string
	lines []actLine
	err   error
	wall  time.Duration
}

// text is the run's log, a line each, "JOB | MSG".
func (r actRun) text() string {
	var b strings.Builder
	for _, l := range r.lines {
		fmt.Fprintf(&b, "%s | %s\n", l.Job, strings.TrimRight(l.Msg, "\n"))
	}
	return b.String()
}

// jobLines are the lines of the job whose name ends with job ("shard-1",
// "merge").
func (r actRun) jobLines(job string) []actLine {
	var out []actLine
	for _, l := range r.lines {
		// act pads the names of a workflow's jobs to one width.
		if j := strings.TrimSpace(l.Job); j == job || strings.HasSuffix(j, "/"+job) {
			out = append(out, l)
		}
	}
	return out
}

// count is how many of job's lines match re.
func (r actRun) count(job string, re *regexp.Regexp) int {
	n := 0
	for _, l := range r.jobLines(job) {
		if re.MatchString(l.Msg) {
			n++
		}
	}
	return n
}

// until is the time from job's first line to its first line that
// matches re (-1 when none does).
func (r actRun) until(job string, re *regexp.Regexp) time.Duration {
	lines := r.jobLines(job)
	for _, l := range lines {
		if re.MatchString(l.Msg) {
			return l.Time.Sub(lines[0].Time)
		}
	}
	return -1
}

// actRunner runs the team's workflow (testdata/act/nightly.yml) under act
// in self-hosted mode, with fencecheck's action from this checkout and the
// stand-ins of testdata/actions for the third-party actions. Each act is a
// fresh runner: its Go caches are new directories (what it has of them
// comes from the cache stand-in), its workspace act's own; the Docker
// Engine is the machine's.
type actRunner struct {
	act, repo, team, store, logs string
	keep                         string // a directory that keeps the logs, or ""
}

func newActRunner(t *testing.T) *actRunner {
	t.Helper()
	act := os.Getenv("FENCECHECK_ACT")
	if act == "" {
		act = repoFile("bin", "act")
	}
	act, err := filepath.Abs(act)
	if err == nil {
		_, err = os.Stat(act)
	}
	if err != nil {
		t.Fatalf("nektos/act is needed (make test-all builds it into bin/act from the Go module proxy; FENCECHECK_ACT names another): %v", err)
	}
	dir := t.TempDir()
	r := &actRunner{act: act, repo: snapshotRepo(t, filepath.Join(dir, "fencecheck")), team: filepath.Join(dir, "team"), store: filepath.Join(dir, "store"), logs: dir}
	// FENCECHECK_CI_LOGS keeps the nights' logs (act's, a file a night)
	// after the test.
	if keep := os.Getenv("FENCECHECK_CI_LOGS"); keep != "" {
		r.keep = keep
		os.MkdirAll(keep, 0o755)
	}
	wf := filepath.Join(r.team, ".github", "workflows")
	os.MkdirAll(wf, 0o755)
	os.MkdirAll(r.store, 0o755)
	b, err := os.ReadFile(filepath.Join("testdata", "act", "nightly.yml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wf, "nightly.yml"), b, 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "nightly"}} {
		if out, err := exec.Command("git", append([]string{"-C", r.team}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return r
}

// snapshotRepo copies this checkout's files (tracked, and untracked ones
// git does not ignore) to dir, a git repository of one commit: the action's
// source as a team's workflow would fetch it, fixed for the whole test
// (act reads a local action's folder anew at each job).
func snapshotRepo(t *testing.T, dir string) string {
	t.Helper()
	root, _ := filepath.Abs(repoFile())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sh := `git -C "$1" ls-files -z -co --exclude-standard | tar -C "$1" --null -T - -cf - | tar -C "$2" -xf - &&
git -C "$2" init -q && git -C "$2" add -A && git -C "$2" -c user.email=t@example.com -c user.name=t commit -qm snapshot`
	if out, err := exec.Command("bash", "-c", sh, "snapshot", root, dir).CombinedOutput(); err != nil {
		t.Fatalf("a snapshot of the checkout: %v\n%s", err, out)
	}
	return dir
}

// run acts the workflow once as run runID, attempt attempt, with the
// dispatch inputs (NAME=VALUE), on a fresh runner.
func (r *actRunner) run(t *testing.T, name string, runID, attempt int, inputs ...string) actRun {
	t.Helper()
	si, _ := filepath.Abs(filepath.Join("testdata", "actions"))
	// A fresh runner: its Go caches' directories are where they always
	// are, and empty.
	runner := filepath.Join(r.logs, "runner")
	os.RemoveAll(runner)
	os.MkdirAll(runner, 0o755)
	args := []string{"workflow_dispatch", "-W", ".github/workflows/nightly.yml", "--json",
		"-P", "ubuntu-latest=-self-hosted", "--no-cache-server", "--concurrent-jobs", "1",
		"--local-repository", "fencecheck/fencecheck@v1=" + r.repo,
		"--local-repository", "actions/setup-go@v5=" + filepath.Join(si, "setup-go"),
		"--local-repository", "actions/cache@v4=" + filepath.Join(si, "cache"),
		"--local-repository", "actions/upload-artifact@v4=" + filepath.Join(si, "upload-artifact"),
		"--local-repository", "actions/download-artifact@v4=" + filepath.Join(si, "download-artifact"),
		"--env", "FC_STANDIN_STORE=" + r.store,
		"--env", fmt.Sprintf("GITHUB_RUN_ID=%d", runID),
		"--env", fmt.Sprintf("GITHUB_RUN_ATTEMPT=%d", attempt),
		// A fresh runner's Go caches: empty (the cache stand-in fills
		// them); writable, so that the test can remove them.
		"--env", "GOCACHE=" + filepath.Join(runner, "gocache"),
		"--env", "GOMODCACHE=" + filepath.Join(runner, "gomodcache"),
		"--env", "GOFLAGS=-modcacherw",
	}
	for _, in := range inputs {
		args = append(args, "--input", in)
	}
	cmd := exec.Command(r.act, args...)
	cmd.Dir = r.team
	cmd.Env = append(os.Environ(), "GOFLAGS=-modcacherw")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	res := actRun{name: name, err: err, wall: time.Since(start)}
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var plain strings.Builder
	for sc.Scan() {
		var l actLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Time.IsZero() {
			plain.WriteString(sc.Text() + "\n")
			continue
		}
		res.lines = append(res.lines, l)
	}
	logDir := cmp.Or(r.keep, r.logs)
	os.WriteFile(filepath.Join(logDir, name+".log"), []byte(res.text()+plain.String()), 0o644)
	t.Logf("%s: act ended in %s (%v); log %s", name, res.wall.Round(time.Second), err, filepath.Join(logDir, name+".log"))
	return res
}

// eachTarFile calls fn with each entry of the tar at path (its name
// without a leading "./") until fn returns false.
func eachTarFile(t *testing.T, path string, fn func(h *tar.Header, r io.Reader) bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		h.Name = strings.TrimPrefix(h.Name, "./")
		if !fn(h, tr) {
			return
		}
	}
}

// artifact is the size of run runID's artifact name, and its files
// (path: size).
func (r *actRunner) artifact(t *testing.T, runID int, name string) (int64, map[string]int64) {
	t.Helper()
	p := filepath.Join(r.store, "artifacts", fmt.Sprint(runID), name+".tar")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("artifact %s of run %d: %v", name, runID, err)
	}
	files := map[string]int64{}
	eachTarFile(t, p, func(h *tar.Header, _ io.Reader) bool {
		files[h.Name] = h.Size
		return true
	})
	return st.Size(), files
}

// artifactFile is one file of run runID's artifact name.
func (r *actRunner) artifactFile(t *testing.T, runID int, name, file string) []byte {
	t.Helper()
	var b []byte
	found := false
	eachTarFile(t, filepath.Join(r.store, "artifacts", fmt.Sprint(runID), name+".tar"), func(h *tar.Header, rd io.Reader) bool {
		if h.Name != file {
			return true
		}
		b, _ = io.ReadAll(rd)
		found = true
		return false
	})
	if !found {
		t.Fatalf("artifact %s has no %s", name, file)
	}
	return b
}

var (
	goCacheMiss    = regexp.MustCompile(`^Cache not found for input keys: fencecheck-go-`)
	goCacheHit     = regexp.MustCompile(`^Cache restored from key: fencecheck-go-`)
	goCacheSaved   = regexp.MustCompile(`^Cache saved with key: fencecheck-go-`)
	imageCacheMiss = regexp.MustCompile(`^Cache not found for input keys: fencecheck-images-`)
	imageCacheHit  = regexp.MustCompile(`^Cache restored from key: fencecheck-images-`)
	imageSaved     = regexp.MustCompile(`^Cache saved with key: fencecheck-images-`)
	nightsRestored = regexp.MustCompile(`^Cache restored from key: fencecheck-nights-`)
	matrixStarts   = regexp.MustCompile(`Run Main matrix shard`)
	nightsLine     = regexp.MustCompile(`^(\d+) nights, oldest first`)
)

// The GitHub Action end to end under nektos/act (self-hosted mode), as a
// team runs it: a 2-shard etcd matrix (unfenced and with tokens under a
// paused holder) and its merge, for two nights on fresh runners, a re-run
// of the second night, and a re-run of one cell. Night 1 is cold: the Go
// and image caches miss, are filled once and hit in the later jobs of the
// night; night 2 hits them all and finds night 1 in the cache of nights.
// The shards' artifacts hold no kept data of unfenced cells and no
// followed link; the re-run's merge keeps the re-run's cells and says so;
// the cell's re-run amends the newest night, and a re-run of that run
// amends the same night again. The Docker Engine is the
// machine's: images a night 1 finds there are saved, not rebuilt.
func TestActionUnderAct(t *testing.T) {
	suite.All(t, "nektos/act (bin/act) and two nights of a sharded matrix under it")
	requireDocker(t)
	if os.Getuid() != 0 {
		t.Skip("the action's shard step runs as root (sudo); run as root")
	}
	r := newActRunner(t)
	const artifactBound = 16 << 20 // a shard of one cell: its run's history, logs and report

	// Night 1: cold.
	n1 := r.run(t, "night-1", 201, 1)
	if n1.err != nil {
		t.Fatalf("night 1: act: %v\n%s", n1.err, tail(n1.text(), 80))
	}
	if got := n1.count("shard-1", goCacheMiss); got != 1 {
		t.Errorf("night 1, shard 1: %d Go cache misses logged, want 1", got)
	}
	for _, job := range []string{"shard-2", "merge"} {
		if got := n1.count(job, goCacheHit); got != 1 {
			t.Errorf("night 1, %s: %d Go cache hits logged, want 1 (shard 1 saved it)", job, got)
		}
	}
	if got := n1.count("shard-1", goCacheSaved) + n1.count("shard-2", goCacheSaved) + n1.count("merge", goCacheSaved); got != 1 {
		t.Errorf("night 1: the Go cache saved %d times, want once", got)
	}
	if n1.count("shard-1", imageCacheMiss) != 1 || n1.count("shard-1", imageSaved) != 1 || n1.count("shard-2", imageCacheHit) != 1 || n1.count("shard-2", imageSaved) != 0 {
		t.Errorf("night 1: the image cache: shard 1 %d misses, %d saves; shard 2 %d hits, %d saves; want 1, 1, 1, 0",
			n1.count("shard-1", imageCacheMiss), n1.count("shard-1", imageSaved), n1.count("shard-2", imageCacheHit), n1.count("shard-2", imageSaved))
	}
	checkShardArtifacts(t, r, 201, 1, artifactBound)

	// Night 2: warm runners.
	n2 := r.run(t, "night-2", 202, 1)
	if n2.err != nil {
		t.Fatalf("night 2: act: %v\n%s", n2.err, tail(n2.text(), 80))
	}
	for _, job := range []string{"shard-1", "shard-2", "merge"} {
		if n2.count(job, goCacheHit) != 1 || n2.count(job, goCacheSaved) != 0 {
			t.Errorf("night 2, %s: Go cache %d hits, %d saves; want 1, 0", job, n2.count(job, goCacheHit), n2.count(job, goCacheSaved))
		}
	}
	for _, job := range []string{"shard-1", "shard-2"} {
		if n2.count(job, imageCacheHit) != 1 || n2.count(job, imageSaved) != 0 {
			t.Errorf("night 2, %s: image cache %d hits, %d saves; want 1, 0", job, n2.count(job, imageCacheHit), n2.count(job, imageSaved))
		}
		start := n2.until(job, matrixStarts)
		t.Logf("night 2, %s: the matrix started %s after the job (night 1: %s)", job, start.Round(100*time.Millisecond), n1.until(job, matrixStarts).Round(100*time.Millisecond))
		if start < 0 {
			t.Errorf("night 2, %s: no matrix step", job)
		}
	}
	if n2.count("merge", nightsRestored) != 1 || nightsSeen(n2) != 2 {
		t.Errorf("night 2: the merge restored %d caches of nights, its trends read %d nights; want 1 and 2:\n%s", n2.count("merge", nightsRestored), nightsSeen(n2), linesOf(n2, "merge", 60))
	}
	checkShardArtifacts(t, r, 202, 1, artifactBound)
	night2 := mergedMatrix(t, r, 202)

	// Night 2 re-run (attempt 2): its shards' artifacts go beside attempt
	// 1's, and the merge keeps the newest of each cell.
	rr := r.run(t, "night-2-rerun", 202, 2)
	if rr.err != nil {
		t.Fatalf("night 2 re-run: act: %v\n%s", rr.err, tail(rr.text(), 80))
	}
	checkShardArtifacts(t, r, 202, 2, artifactBound)
	rerun := mergedMatrix(t, r, 202)
	if len(rerun.Duplicates) != len(rerun.Cells) {
		t.Errorf("the re-run's merge: %d duplicate cells recorded, want %d", len(rerun.Duplicates), len(rerun.Cells))
	}
	for _, d := range rerun.Duplicates {
		if !strings.Contains(d.Kept.Shard, "attempt-2") || len(d.Dropped) != 1 || !strings.Contains(d.Dropped[0].Shard, "attempt-1") {
			t.Errorf("cell %d: kept %s, left out %+v; want attempt 2's kept, attempt 1's left out", d.Cell, d.Kept.Shard, d.Dropped)
		}
	}
	for i, c := range rerun.Cells {
		if i < len(night2.Cells) && c.Run == night2.Cells[i].Run {
			t.Errorf("cell %d: the re-run's merge kept attempt 1's run %s", i, c.Run)
		}
	}
	if n := nightsSeen(rr); n != 2 {
		t.Errorf("the re-run's trends read %d nights, want 2 (night 1, and the re-run's night 2 in place of the first attempt's)", n)
	}
	summary := summaryOf(rr)
	if !strings.Contains(summary, "cells were in more than one shard directory") || !strings.Contains(summary, "kept the newest") {
		t.Errorf("the re-run's job summary does not say which copies it kept:\n%s", summary)
	}

	// One cell re-run (cells=1): one shard job, and the merge amends the
	// newest night (the re-run's) with it.
	one := r.run(t, "cell-1", 203, 1, "cells=1")
	if one.err != nil {
		t.Fatalf("cell 1 re-run: act: %v\n%s", one.err, tail(one.text(), 80))
	}
	_, files := r.artifact(t, 203, "fencecheck-shard-cells-1-attempt-1")
	if len(files) == 0 {
		t.Errorf("no artifact of the cell's shard job")
	}
	amended := mergedMatrix(t, r, 203)
	if len(amended.Cells) != len(rerun.Cells) || amended.Cells[0].Run != rerun.Cells[0].Run || amended.Cells[1].Run == rerun.Cells[1].Run {
		t.Errorf("amended night: cells %+v; want cell 0 from the night before and cell 1 new", amended.Cells)
	}
	nights := r.artifactNights(t, 203)
	if len(nights) != 2 {
		t.Errorf("after the cell's re-run the cache of nights holds %v, want 2 (night 1, and night 2 amended)", nights)
	}
	// Its re-run (attempt 2) amends the same night again: still two
	// nights, cell 1 from attempt 2, cell 0 as before.
	again := r.run(t, "cell-1-rerun", 203, 2, "cells=1")
	if again.err != nil {
		t.Fatalf("cell 1 re-run, attempt 2: act: %v\n%s", again.err, tail(again.text(), 80))
	}
	twice := mergedMatrix(t, r, 203)
	if len(twice.Cells) != 2 || twice.Cells[0].Run != rerun.Cells[0].Run || twice.Cells[1].Run == amended.Cells[1].Run {
		t.Errorf("the amended night amended again: cells %+v; want cell 0 from night 2's re-run and cell 1 from attempt 2", twice.Cells)
	}
	if n := nightsSeen(again); n != 2 {
		t.Errorf("attempt 2 of the cell's run: the trends read %d nights, want 2", n)
	}
	t.Logf("wall: night 1 %s, night 2 %s, re-run %s, cell %s, its re-run %s", n1.wall.Round(time.Second), n2.wall.Round(time.Second), rr.wall.Round(time.Second), one.wall.Round(time.Second), again.wall.Round(time.Second))
}

// checkShardArtifacts checks run runID's attempt's two shard artifacts:
// present, at most bound bytes, no file of an etcd data directory (an
// unfenced cell's invalid run keeps none) and no run twice (the latest
// link not followed).
func checkShardArtifacts(t *testing.T, r *actRunner, runID, attempt int, bound int64) {
	t.Helper()
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("fencecheck-shard-%d-of-2-attempt-%d", i, attempt)
		size, files := r.artifact(t, runID, name)
		t.Logf("artifact %s of run %d: %d bytes, %d files", name, runID, size, len(files))
		if size > bound {
			t.Errorf("artifact %s: %d bytes, want at most %d", name, size, bound)
		}
		reports := 0
		for f := range files {
			if strings.Contains(f, "/data/") || strings.HasSuffix(f, ".wal") || strings.HasPrefix(f, "latest/") {
				t.Errorf("artifact %s holds %s", name, f)
			}
			if strings.HasSuffix(f, "/report.html") {
				reports++
			}
		}
		if reports != 1 {
			t.Errorf("artifact %s: %d reports, want 1 (one cell a shard)", name, reports)
		}
	}
}

// mergedMatrix is the matrix.json of run runID's merged results (the
// fencecheck-nightly artifact, its newest attempt's).
func mergedMatrix(t *testing.T, r *actRunner, runID int) trends.Matrix {
	t.Helper()
	var m trends.Matrix
	if err := json.Unmarshal(r.artifactFile(t, runID, "fencecheck-nightly", "matrix.json"), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// artifactNights are the nights in run runID's fencecheck-trends artifact.
func (r *actRunner) artifactNights(t *testing.T, runID int) []string {
	t.Helper()
	_, files := r.artifact(t, runID, "fencecheck-trends")
	var nights []string
	for f := range files {
		if n, ok := strings.CutSuffix(f, "/matrix.json"); ok && !strings.Contains(n, "/") {
			nights = append(nights, n)
		}
	}
	slices.Sort(nights)
	return nights
}

// summaryOf is the merge job's summary (GITHUB_STEP_SUMMARY), which act
// logs as a step's "Summary - " line.
func summaryOf(r actRun) string {
	var b strings.Builder
	for _, l := range r.jobLines("merge") {
		if _, s, ok := strings.Cut(l.Msg, "Summary - "); ok {
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}

// nightsSeen is how many nights the merge job's trends read ("N nights,
// oldest first"), -1 when it logged none.
func nightsSeen(r actRun) int {
	for _, l := range r.jobLines("merge") {
		if m := nightsLine.FindStringSubmatch(l.Msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return -1
}

// linesOf is the last n lines of job's log.
func linesOf(r actRun, job string, n int) string {
	var b strings.Builder
	for _, l := range r.jobLines(job) {
		b.WriteString(l.Msg + "\n")
	}
	return tail(b.String(), n)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
